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

// SetResult says what Set or Unset did.
type SetResult struct {
	File    string
	Created bool // there was no file
	// Backup is where the file as it was was saved this time: path+".bak",
	// written only when there is none yet, so it keeps the file as it was
	// before the first change and a later change never overwrites the
	// user's original. "" when nothing was saved (a new file, an
	// unchanged one, or a .bak already there).
	Backup string
	// Unchanged: the file already said so; nothing was written.
	Unchanged bool
}

// NotSetError is Unset's error for a key the file does not set.
type NotSetError struct {
	File, Key string
}

func (e *NotSetError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("there is no config file: %s is not set (its default applies)", e.Key)
	}
	return fmt.Sprintf("%s does not set %s: nothing to remove (`openclaw config get %s` shows the value that applies)", e.File, e.Key, e.Key)
}

// Set sets key (dotted; a number indexes a list) in the config file at
// path to value (JSON; null removes the key, so its default applies),
// missing objects on the way created. The whole resulting config is
// checked as Check would (workspaces included) before anything is
// written: an invalid result is refused with every problem (joined
// *Error, key paths as in the file; lines left out since they are of the
// file as it would have been) and the file is left as it was.
//
// The file is edited in place (json5edit.go): only the value's bytes
// change, or a `key: value` member is added to the innermost object that
// exists, or cut out with its comma; comments, quoting, indentation and
// line ends stay as they are. The result must decode to exactly the
// config the edit means; when it would not, or the editor cannot follow
// the file, Set refuses with an *Error saying where and what to write by
// hand, and changes nothing: the file is never silently rewritten. A
// value already set as asked changes nothing (Unchanged). A missing or
// empty file is written as JSON.
//
// The write is atomic: a temp file in the same directory, mode 0600,
// synced, renamed over it. A symlinked file is written where it points.
// Before the first change the file is copied to path+".bak"; a .bak that
// exists is kept as it is (delete it to have the next change save a new
// one), so the file as the user wrote it is never lost.
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
	return edit(path, stateDir, key, parts, plainNumbers(v), false)
}

// Unset removes key from the config file at path, so its default applies,
// as Set does with null, except that a key the file does not set is a
// *NotSetError. A list item cannot be removed (set the list without it).
func Unset(path, key string) (*SetResult, error) { return UnsetIn(path, "", key) }

// UnsetIn is Unset checking the result with the default workspace under
// stateDir (see LoadIn).
func UnsetIn(path, stateDir, key string) (*SetResult, error) {
	parts, err := splitKey(key)
	if err != nil {
		return nil, err
	}
	return edit(path, stateDir, key, parts, nil, true)
}

// edit is Set (v nil: remove) and Unset (strict: the key must be set).
func edit(path, stateDir, key string, parts []string, v any, strict bool) (*SetResult, error) {
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
	bom := []byte{}
	body := old
	if b, ok := bytes.CutPrefix(old, []byte("\uFEFF")); ok {
		bom, body = []byte("\uFEFF"), b
	}
	empty := len(bytes.TrimSpace(body)) == 0
	tree, before := map[string]any{}, map[string]any{}
	if !empty {
		if tree, err = (json5Parser{}).Unmarshal(body); err != nil {
			return nil, &Error{File: path, Reason: "cannot edit it: it does not parse (" + err.Error() + "); fix it by hand first (`openclaw config validate`)"}
		}
		before, _ = (json5Parser{}).Unmarshal(body) // a second copy: setPath changes tree
	}
	if strict && !hasPath(tree, parts) {
		if res.Created {
			path = ""
		}
		return nil, &NotSetError{File: path, Key: key}
	}
	if err := setPath(tree, parts, v); err != nil {
		return nil, &Error{File: path, Path: key, Reason: err.Error()}
	}
	if sameJSON(before, tree) {
		res.Unchanged, res.Created = true, false
		return res, nil
	}
	var data []byte
	if empty {
		if data, err = json.MarshalIndent(tree, "", "  "); err != nil {
			return nil, fmt.Errorf("encode %s: %w", path, err)
		}
		data = append(data, '\n')
	} else {
		edited, err := editInPlace(body, parts, v, tree)
		if err != nil {
			return nil, refusal(path, key, body, v, err)
		}
		data = append(bom, edited...)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	if _, _, err := parseChecked(data, path, os.LookupEnv, filepath.Dir(abs), stateDir, true); err != nil {
		return nil, withoutLines(err)
	}
	if !res.Created {
		bak := path + ".bak"
		switch _, err := os.Lstat(bak); {
		case errors.Is(err, fs.ErrNotExist):
			if err := writeFileAtomic(bak, old); err != nil {
				return nil, fmt.Errorf("keep the previous config as %s (nothing was changed): %w", bak, err)
			}
			res.Backup = bak
		case err != nil:
			return nil, fmt.Errorf("look for the backup %s (nothing was changed): %w", bak, err)
		}
	}
	if err := writeFileAtomic(path, data); err != nil {
		return nil, fmt.Errorf("write %s (it was not changed): %w", path, err)
	}
	return res, nil
}

// editInPlace is editJSON5 checked: the result must decode to want (the
// tree edit) and a file that was plain JSON must stay plain JSON.
func editInPlace(doc []byte, parts []string, v any, want map[string]any) ([]byte, error) {
	out, at, err := editJSON5(doc, parts, v)
	if err != nil {
		return nil, err
	}
	got, err := (json5Parser{}).Unmarshal(out)
	if err != nil || !sameJSON(got, want) {
		return nil, &editError{off: at, reason: "the edited file would not read back as the change"}
	}
	if json.Valid(doc) && !json.Valid(out) {
		return nil, &editError{off: at, reason: "the file is plain JSON and the edit would not be"}
	}
	return out, nil
}

// refusal explains a change the editor cannot make in place: where, why,
// and what to write by hand.
func refusal(path, key string, doc []byte, v any, err error) error {
	e := &Error{File: path, Path: key}
	why := err.Error()
	var ee *editError
	if errors.As(err, &ee) && ee.off >= 0 {
		e.Line = bytes.Count(doc[:min(ee.off, len(doc))], []byte("\n")) + 1
	}
	todo := "remove it"
	if v != nil {
		text, ferr := (j5style{quoteKeys: true}).inline(v)
		if ferr != nil {
			text = "the value"
		}
		todo = "set it to " + text
	}
	e.Reason = fmt.Sprintf("cannot change the file in place without losing its comments or layout (%s); nothing was changed: edit it by hand to %s", why, todo)
	return e
}

// hasPath says whether tree sets parts (to anything, null included).
func hasPath(tree map[string]any, parts []string) bool {
	var cur any = tree
	for _, p := range parts {
		switch t := cur.(type) {
		case map[string]any:
			next, ok := t[p]
			if !ok {
				return false
			}
			cur = next
		case []any:
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 || n >= len(t) {
				return false
			}
			cur = t[n]
		default:
			return false
		}
	}
	return true
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
