package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/knadh/koanf/providers/rawbytes"
	"github.com/knadh/koanf/v2"
	"github.com/titanous/json5"
)

// maxFileSize bounds the config file: configs are a few KiB, and the JSON5
// decoder and the line index both hold the whole file.
const maxFileSize = 1 << 20

// maxDepth bounds nesting so a hostile file cannot exhaust the stack of the
// recursive JSON5 decoder.
const maxDepth = 64

// json5Parser is the koanf.Parser for JSON5. Marshal writes plain JSON,
// which is valid JSON5.
type json5Parser struct{}

var _ koanf.Parser = json5Parser{}

// errTopLevel is returned for a document that is not an object.
type errTopLevel struct{ got string }

func (e errTopLevel) Error() string {
	return "the config must be an object ({…}), got " + e.got
}

func (json5Parser) Unmarshal(b []byte) (map[string]any, error) {
	var v any
	if err := json5.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errTopLevel{got: kindOf(v)}
	}
	return m, nil
}

func (json5Parser) Marshal(m map[string]any) ([]byte, error) {
	return json.MarshalIndent(m, "", "  ")
}

// source is where a config came from: its name and the line of every key
// path in it.
type source struct {
	name     string
	data     []byte
	newlines []int          // offsets of '\n'
	lines    map[string]int // key path → 1-based line
	empty    bool           // only whitespace and comments
	dups     []*Error       // keys written twice in one object
}

// lineAt returns the 1-based line of byte offset off.
func (s *source) lineAt(off int) int {
	return sort.SearchInts(s.newlines, off) + 1
}

// line returns the line of path or of its nearest ancestor in the file, or 0.
func (s *source) line(path string) int {
	if s == nil {
		return 0
	}
	for p := path; p != ""; {
		if l, ok := s.lines[p]; ok {
			return l
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return 0
}

// err builds an *Error at path.
func (s *source) err(path, reason string) *Error {
	e := &Error{Path: path, Reason: reason}
	if s != nil {
		e.File = s.name
		e.Line = s.line(path)
	}
	return e
}

// parseError turns a JSON5 decoding error into an *Error with a line.
func (s *source) parseError(err error) *Error {
	var (
		syn *json5.SyntaxError
		typ *json5.UnmarshalTypeError
		top errTopLevel
		off = -1
	)
	msg := err.Error()
	switch {
	case errors.As(err, &syn):
		off = int(syn.Offset) - 1 // Offset counts the offending byte
		if strings.HasPrefix(msg, "unexpected end") {
			off = len(s.data)
		}
	case errors.As(err, &typ):
		off = int(typ.Offset) - 1
		msg = "invalid " + typ.Value
	case errors.As(err, &top):
		return &Error{File: s.name, Line: 0, Reason: top.Error()}
	}
	e := &Error{File: s.name, Reason: msg}
	if off >= 0 {
		off = min(off, len(s.data))
		e.Line = s.lineAt(off)
		lineStart := 0
		if e.Line > 1 {
			lineStart = s.newlines[e.Line-2] + 1
		}
		col := utf8.RuneCount(s.data[lineStart:off]) + 1
		e.Reason = fmt.Sprintf("%s (column %d)", msg, col)
	}
	return e
}

// newSource indexes data: the line of each key path, whether it holds any
// value at all, and whether it nests too deep. The scan is lenient: syntax
// errors are json5's to report, this only has to terminate and not panic.
func newSource(data []byte, name string) (*source, *Error) {
	s := &source{name: name, data: data, lines: map[string]int{}}
	for i, c := range data {
		if c == '\n' {
			s.newlines = append(s.newlines, i)
		}
	}
	sc := &scanner{src: s, data: data, tooDeep: -1}
	sc.skip()
	s.empty = sc.pos >= len(data)
	if !s.empty {
		sc.value("", 0)
	}
	if sc.tooDeep >= 0 {
		return nil, &Error{File: name, Line: s.lineAt(sc.tooDeep),
			Reason: fmt.Sprintf("nested deeper than %d levels", maxDepth)}
	}
	return s, nil
}

type scanner struct {
	src     *source
	data    []byte
	pos     int
	tooDeep int // offset where maxDepth was exceeded; -1 if never
}

func (sc *scanner) eof() bool { return sc.pos >= len(sc.data) }

// skip passes whitespace and comments.
func (sc *scanner) skip() {
	for !sc.eof() {
		c := sc.data[sc.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			sc.pos++
		case c == 0xEF && bytes.HasPrefix(sc.data[sc.pos:], []byte("\uFEFF")),
			c == 0xC2 && bytes.HasPrefix(sc.data[sc.pos:], []byte("\u00A0")):
			_, n := utf8.DecodeRune(sc.data[sc.pos:])
			sc.pos += n
		case c == '/' && sc.pos+1 < len(sc.data) && sc.data[sc.pos+1] == '/':
			end := bytes.IndexByte(sc.data[sc.pos:], '\n')
			if end < 0 {
				sc.pos = len(sc.data)
			} else {
				sc.pos += end + 1
			}
		case c == '/' && sc.pos+1 < len(sc.data) && sc.data[sc.pos+1] == '*':
			end := bytes.Index(sc.data[sc.pos+2:], []byte("*/"))
			if end < 0 {
				sc.pos = len(sc.data)
			} else {
				sc.pos += 2 + end + 2
			}
		default:
			return
		}
	}
}

func (sc *scanner) value(path string, depth int) {
	sc.skip()
	if sc.eof() || sc.tooDeep >= 0 {
		return
	}
	switch sc.data[sc.pos] {
	case '{':
		if depth >= maxDepth {
			sc.tooDeep, sc.pos = sc.pos, len(sc.data)
			return
		}
		sc.pos++
		seen := map[string]bool{}
		for {
			sc.skip()
			if sc.eof() {
				return
			}
			switch sc.data[sc.pos] {
			case '}':
				sc.pos++
				return
			case ',':
				sc.pos++
				continue
			}
			keyOff := sc.pos
			key, ok := sc.key()
			sc.skip()
			if !ok || sc.eof() || sc.data[sc.pos] != ':' {
				return
			}
			sc.pos++
			p := keyPath(path, key)
			line := sc.src.lineAt(keyOff)
			if seen[key] {
				// JSON5 keeps the last silently; a pasted second block
				// hiding the first is a mistake worth reporting.
				sc.src.dups = append(sc.src.dups, &Error{File: sc.src.name, Line: line, Path: p,
					Reason: fmt.Sprintf("duplicate key (first at line %d)", sc.src.lines[p])})
			}
			seen[key] = true
			sc.src.lines[p] = line // the last one is the one in effect
			sc.value(p, depth+1)
			if sc.tooDeep >= 0 {
				return
			}
		}
	case '[':
		if depth >= maxDepth {
			sc.tooDeep, sc.pos = sc.pos, len(sc.data)
			return
		}
		sc.pos++
		for i := 0; ; {
			sc.skip()
			if sc.eof() {
				return
			}
			switch sc.data[sc.pos] {
			case ']':
				sc.pos++
				return
			case ',':
				sc.pos++
				continue
			}
			p := indexPath(path, i)
			sc.src.lines[p] = sc.src.lineAt(sc.pos)
			before := sc.pos
			sc.value(p, depth+1)
			if sc.tooDeep >= 0 {
				return
			}
			if sc.pos == before {
				sc.pos++ // not a value: step over it so the scan always ends
			}
			i++
		}
	case '"', '\'':
		sc.str()
	default:
		if sc.literal() == "" {
			sc.pos++
		}
	}
}

// key reads an object key: a quoted string or an identifier.
func (sc *scanner) key() (string, bool) {
	if c := sc.data[sc.pos]; c == '"' || c == '\'' {
		return sc.str(), true
	}
	k := sc.literal()
	return k, k != ""
}

// literal reads up to the next delimiter: numbers, true, null, identifiers.
func (sc *scanner) literal() string {
	start := sc.pos
	for !sc.eof() {
		switch sc.data[sc.pos] {
		case ',', ':', '[', ']', '{', '}', '"', '\'', '/', ' ', '\t', '\n', '\r':
			return string(sc.data[start:sc.pos])
		}
		sc.pos++
	}
	return string(sc.data[start:sc.pos])
}

// str reads a quoted string and returns its content, escapes resolved well
// enough to match the decoder's keys.
func (sc *scanner) str() string {
	q := sc.data[sc.pos]
	sc.pos++
	var b strings.Builder
	for !sc.eof() {
		c := sc.data[sc.pos]
		sc.pos++
		switch {
		case c == q:
			return b.String()
		case c == '\\' && !sc.eof():
			e := sc.data[sc.pos]
			sc.pos++
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case '0':
				b.WriteByte(0)
			case '\n': // line continuation
			case 'u':
				if sc.pos+4 <= len(sc.data) {
					if r, err := strconv.ParseUint(string(sc.data[sc.pos:sc.pos+4]), 16, 32); err == nil {
						b.WriteRune(rune(r))
						sc.pos += 4
						continue
					}
				}
				b.WriteByte(e)
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// mergeOver merges the user's tree src over the defaults dest: objects merge
// key by key, anything else replaces, and null leaves the default alone.
func mergeOver(src, dest map[string]any) error {
	for k, v := range src {
		if v == nil {
			continue
		}
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dest[k].(map[string]any); ok {
				if err := mergeOver(sm, dm); err != nil {
					return err
				}
				continue
			}
		}
		dest[k] = v
	}
	return nil
}

// parse is Load/Parse with the environment lookup and base directory given,
// without looking at the file system.
func parse(data []byte, name string, lookup func(string) (string, bool), baseDir string) (*Config, error) {
	c, _, err := parseChecked(data, name, lookup, baseDir, "", false)
	return c, err
}

// parseChecked is parse that also returns the warnings (even when the config
// is rejected) and, with checkFS, checks the agents' workspaces on disk
// without creating anything. An empty agents.defaults.workspace becomes
// <stateDir>/workspace (stateDir "": the default state dir).
func parseChecked(data []byte, name string, lookup func(string) (string, bool), baseDir, stateDir string, checkFS bool) (*Config, []*Error, error) {
	if len(data) > maxFileSize {
		return nil, nil, &Error{File: name, Reason: fmt.Sprintf("file is larger than %d bytes", maxFileSize)}
	}
	data = bytes.TrimPrefix(data, []byte("\uFEFF")) // editors on Windows add one
	src, serr := newSource(data, name)
	if serr != nil {
		return nil, nil, serr
	}
	k := koanf.New(".")
	if err := k.Load(rawbytes.Provider(defaultsJSON5), json5Parser{}); err != nil {
		return nil, nil, fmt.Errorf("config: embedded defaults: %w", err)
	}
	if !src.empty {
		if err := k.Load(rawbytes.Provider(data), json5Parser{}, koanf.WithMergeFunc(mergeOver)); err != nil {
			return nil, nil, src.parseError(err)
		}
	}
	raw := k.Raw()

	d := &decoder{src: src}
	d.expandEnv("", raw, lookup)
	c := &Config{src: src, baseDir: baseDir}
	d.decode("", raw, reflectValue(c))
	c.fillModelDefaults()
	c.fillWorkspace(raw, stateDir)

	errs := append(d.errs, src.dups...)
	for _, e := range c.validate() {
		if !d.shadows(e.Path) {
			errs = append(errs, e)
		}
	}
	warns := append(d.warns, c.SharedMainWarnings()...)
	if checkFS {
		for _, p := range c.checkWorkspaces() {
			switch {
			case d.shadows(p.err.Path):
			case p.warning:
				warns = append(warns, p.err)
			default:
				errs = append(errs, p.err)
			}
		}
	}
	sortByLine(warns)
	if err := joinErrors(errs); err != nil {
		return nil, warns, err
	}
	c.warnings = warns
	c.raw = raw
	return c, warns, nil
}

// fillWorkspace puts the default workspace under the state dir, so that
// everything a user install owns lives in one directory of its own; raw
// gets it too, so `openclaw config get` shows the path in use.
func (c *Config) fillWorkspace(raw map[string]any, stateDir string) {
	if c.Agents.Defaults.Workspace != "" {
		return
	}
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	ws := filepath.Join(stateDir, "workspace")
	c.Agents.Defaults.Workspace = ws
	if agents, ok := raw["agents"].(map[string]any); ok {
		if d, ok := agents["defaults"].(map[string]any); ok {
			d["workspace"] = ws
		}
	}
}

// fillModelDefaults gives the local provider its api and every model
// definition its default context window.
func (c *Config) fillModelDefaults() {
	for name, p := range c.Models.Providers {
		if name == LocalProvider && p.API == "" {
			p.API = APILocal
		}
		for i := range p.Models {
			if p.Models[i].ContextWindow == 0 {
				p.Models[i].ContextWindow = defaultContextWindow(p.API)
			}
		}
		c.Models.Providers[name] = p
	}
}

func defaultContextWindow(api string) int {
	if api == APILocal {
		return DefaultLocalContextWindow
	}
	return DefaultContextWindow
}

// expandEnv replaces ${VAR} in every string of the tree, in place.
func (d *decoder) expandEnv(path string, v any, lookup func(string) (string, bool)) any {
	switch t := v.(type) {
	case string:
		s, problems := expandString(t, lookup)
		for _, p := range problems {
			d.fail(path, p)
		}
		return s
	case map[string]any:
		for _, k := range sortedMapKeys(t) {
			t[k] = d.expandEnv(keyPath(path, k), t[k], lookup)
		}
	case []any:
		for i := range t {
			t[i] = d.expandEnv(indexPath(path, i), t[i], lookup)
		}
	}
	return v
}

// expandString expands ${NAME} (NAME of A–Z, 0–9, _, not starting with a
// digit); $${NAME} is a literal ${NAME}; anything else is left as written.
func expandString(s string, lookup func(string) (string, bool)) (string, []string) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var (
		b        strings.Builder
		problems []string
	)
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "$${") {
			b.WriteString("${")
			i += 3
			continue
		}
		if strings.HasPrefix(s[i:], "${") {
			if end := strings.IndexByte(s[i+2:], '}'); end >= 0 {
				name := s[i+2 : i+2+end]
				if envName(name) {
					val, ok := lookup(name)
					switch {
					case !ok:
						problems = append(problems, fmt.Sprintf("environment variable %s is not set", name))
					case val == "":
						problems = append(problems, fmt.Sprintf("environment variable %s is empty", name))
					}
					b.WriteString(val)
					i += 2 + end + 1
					continue
				}
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String(), problems
}

func envName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
