package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Redacted is what Value shows instead of a secret.
const Redacted = "[redacted]"

// IsSecretKey says whether a key holds a secret that Value must not show:
// API keys, tokens, passwords, secrets, and every value under "headers"
// (Authorization). It goes by the key's name, so channel settings this
// package does not know are covered too.
func IsSecretKey(name string) bool {
	k := strings.ToLower(name)
	for _, s := range []string{"apikey", "token", "password", "passwd", "secret", "privatekey", "authorization", "cookie"} {
		if k == s || strings.HasSuffix(k, s) {
			return true
		}
	}
	return false
}

// splitKey splits a dotted key ("agents.list.0.id") into its parts.
func splitKey(key string) ([]string, error) {
	parts := strings.Split(key, ".")
	if slices.Contains(parts, "") {
		return nil, fmt.Errorf("key %q: want dotted names such as agents.defaults.model", key)
	}
	return parts, nil
}

// Value returns the value at key (dotted; a number indexes a list, "" is
// the whole config) as loaded: the file over the defaults, ${VAR}
// expanded, with secrets replaced by Redacted. ok is false when the config
// has no such key.
func (c *Config) Value(key string) (v any, ok bool, err error) {
	var cur any = c.raw
	if c.raw == nil {
		cur = map[string]any{}
	}
	if key != "" {
		parts, err := splitKey(key)
		if err != nil {
			return nil, false, err
		}
		for _, p := range parts {
			switch t := cur.(type) {
			case map[string]any:
				if cur, ok = t[p]; !ok {
					return nil, false, nil
				}
				if IsSecretKey(p) || strings.EqualFold(p, "headers") {
					return redact(cur, true), true, nil
				}
			case []any:
				i, err := strconv.Atoi(p)
				if err != nil || i < 0 || i >= len(t) {
					return nil, false, nil
				}
				cur = t[i]
			default:
				return nil, false, nil
			}
		}
	}
	return redact(cur, false), true, nil
}

// redact returns a copy of v with every secret replaced (all of it when
// secret is set).
func redact(v any, secret bool) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = redact(x, secret || IsSecretKey(k) || strings.EqualFold(k, "headers"))
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = redact(x, secret)
		}
		return out
	case nil:
		return nil
	}
	if secret {
		if s, ok := v.(string); ok && s == "" {
			return "" // an empty secret is no secret: say it is unset
		}
		return Redacted
	}
	return v
}

// SetResult says what Set did.
type SetResult struct {
	File    string
	Created bool   // there was no file
	Backup  string // the file as it was ("" when Created)
	// Reformatted: the file was JSON5 (comments, unquoted keys, trailing
	// commas) and is now plain JSON; the JSON5 library keeps no comments,
	// so they survive only in Backup.
	Reformatted bool
}

// Set sets key (dotted; a number indexes a list) in the config file at
// path to value (JSON; null removes the key, so its default applies),
// missing objects on the way created. The whole resulting config is
// checked as Check would (workspaces included) before anything is
// written: an invalid result is refused with every problem (joined
// *Error, key paths as in the file; lines left out since they are of the
// file as it would have been) and the file is left as it was.
//
// The file is rewritten as JSON (a JSON5 file loses its comments and
// layout; the previous file is kept as path+".bak"), atomically: a temp
// file in the same directory, mode 0600, synced, renamed over it. A
// missing file is created. A symlinked file is written where it points.
func Set(path, key string, value []byte) (*SetResult, error) { return SetIn(path, "", key, value) }

// SetIn is Set checking the result with the default workspace under
// stateDir (see LoadIn).
func SetIn(path, stateDir, key string, value []byte) (*SetResult, error) {
	parts, err := splitKey(key)
	if err != nil {
		return nil, err
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("value of %s: not JSON: %w", key, err)
	}
	v = plainNumbers(v)
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	res := &SetResult{File: path}
	old, err := readConfigFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		res.Created = true
	case err != nil:
		return nil, err
	}
	tree := map[string]any{}
	if len(bytes.TrimSpace(old)) > 0 {
		if tree, err = (json5Parser{}).Unmarshal(bytes.TrimPrefix(old, []byte("\uFEFF"))); err != nil {
			return nil, &Error{File: path, Reason: "cannot edit it: it does not parse (" + err.Error() + "); fix it by hand first (`openclaw config validate`)"}
		}
	}
	if err := setPath(tree, parts, v); err != nil {
		return nil, &Error{File: path, Path: key, Reason: err.Error()}
	}
	data, err := json.MarshalIndent(tree, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", path, err)
	}
	data = append(data, '\n')
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	if _, _, err := parseChecked(data, path, os.LookupEnv, filepath.Dir(abs), stateDir, true); err != nil {
		return nil, withoutLines(err)
	}
	if !res.Created {
		res.Backup = path + ".bak"
		res.Reformatted = len(bytes.TrimSpace(old)) > 0 && !json.Valid(bytes.TrimPrefix(old, []byte("\uFEFF")))
		if err := writeFileAtomic(res.Backup, old); err != nil {
			return nil, fmt.Errorf("keep the previous config as %s (nothing was changed): %w", res.Backup, err)
		}
	}
	if err := writeFileAtomic(path, data); err != nil {
		return nil, fmt.Errorf("write %s (it was not changed): %w", path, err)
	}
	return res, nil
}

// plainNumbers turns json.Number into int64 when it is one, else float64,
// so an integer setting stays an integer in the file.
func plainNumbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	case map[string]any:
		for k, x := range t {
			t[k] = plainNumbers(x)
		}
	case []any:
		for i, x := range t {
			t[i] = plainNumbers(x)
		}
	}
	return v
}

// setPath sets parts in tree to v (nil: removes it).
func setPath(tree map[string]any, parts []string, v any) error {
	var cur any = tree
	for i, p := range parts {
		last := i == len(parts)-1
		switch t := cur.(type) {
		case map[string]any:
			if last {
				if v == nil {
					delete(t, p)
				} else {
					t[p] = v
				}
				return nil
			}
			next, ok := t[p]
			if !ok || next == nil {
				if v == nil {
					return nil // removing under a missing object: nothing to do
				}
				next = map[string]any{}
				t[p] = next
			}
			cur = next
		case []any:
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 || n >= len(t) {
				return fmt.Errorf("%s is a list of %d: %q is not an index of it", strings.Join(parts[:i], "."), len(t), p)
			}
			if last {
				if v == nil {
					return fmt.Errorf("cannot remove a list item; set %s to the list without it", strings.Join(parts[:i], "."))
				}
				t[n] = v
				return nil
			}
			cur = t[n]
		default:
			return fmt.Errorf("%s is a %s, not an object", strings.Join(parts[:i], "."), kindOf(cur))
		}
	}
	return nil
}

// withoutLines drops the line numbers of the problems in err.
func withoutLines(err error) error {
	var errs []*Error
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		var ce *Error
		if errors.As(e, &ce) {
			c := *ce
			c.Line = 0
			errs = append(errs, &c)
			return
		}
		errs = append(errs, &Error{Reason: e.Error()})
	}
	walk(err)
	return joinErrors(errs)
}

// writeFileAtomic writes data to path through a temp file in its directory
// (mode 0600, synced) renamed over it, then syncs the directory.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after the rename: nothing
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // best effort: the rename is done
		d.Close()
	}
	return nil
}
