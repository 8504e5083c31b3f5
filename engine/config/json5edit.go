package config

// In-place editing of a JSON5 config file (`openclaw config set|unset`).
//
// The JSON5 library keeps no comments, so re-encoding the tree would turn a
// hand-written file into plain JSON. Instead a small scanner finds the byte
// span of the value at a key path and only that span changes: a replaced
// value, a `key: value` member inserted into the innermost existing object
// (its siblings' indentation, the object's comma style), or a member cut
// out with its comma. Everything else — comments, quotes, blank lines,
// CRLF line ends, trailing commas — stays byte for byte. Set checks the
// result by parsing it with the JSON5 decoder and comparing it with the
// tree edit; the scanner only has to be right for files that decoder
// accepts, and a file it cannot edit is refused, never rewritten.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/titanous/json5"
)

// editError is a file the editor cannot change in place; off is the byte
// where it gave up (-1: unknown).
type editError struct {
	off    int
	reason string
}

func (e *editError) Error() string { return e.reason }

// j5val is a value in the file: its bytes [start, end) and, for an object
// ('{') or array ('['), its members in order.
type j5val struct {
	start, end int
	kind       byte // '{', '[', or 0 for a string, number, true, false, null
	null       bool
	members    []j5member
}

// j5member is an object's key and value, or an array's item.
type j5member struct {
	key      string // decoded; "" in an array
	keyStart int    // the key's first byte (an array item's: its value's)
	quoted   bool   // the key is a string, not an identifier
	val      *j5val
	comma    int // the comma after it; -1 when none
}

// j5parser scans a JSON5 document as github.com/titanous/json5 reads it.
type j5parser struct {
	data         []byte
	pos          int
	quoted, bare int // keys of each kind seen
}

// parseJSON5Spans returns the spans of the document data.
func parseJSON5Spans(data []byte) (*j5val, *j5parser, error) {
	p := &j5parser{data: data}
	v, err := p.value(0)
	if err != nil {
		return nil, nil, err
	}
	if err := p.skip(); err != nil {
		return nil, nil, err
	}
	if p.pos < len(data) {
		return nil, nil, p.fail("unexpected text after the top-level value")
	}
	return v, p, nil
}

func (p *j5parser) fail(reason string) error { return &editError{off: p.pos, reason: reason} }

func isJSON5Space(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' }

// skip passes whitespace and comments. As the decoder does, a line comment
// ends at a CR or LF, and a block comment at the first '/' after any '*'.
func (p *j5parser) skip() error {
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case isJSON5Space(c):
			p.pos++
		case c == '/' && p.pos+1 < len(p.data) && p.data[p.pos+1] == '/':
			p.pos += 2
			for p.pos < len(p.data) && p.data[p.pos] != '\n' && p.data[p.pos] != '\r' {
				p.pos++
			}
		case c == '/' && p.pos+1 < len(p.data) && p.data[p.pos+1] == '*':
			end := blockCommentEnd(p.data, p.pos)
			if end < 0 {
				return p.fail("unterminated /* comment")
			}
			p.pos = end
		default:
			return nil
		}
	}
	return nil
}

// blockCommentEnd returns the offset after the block comment starting at
// off, or -1.
func blockCommentEnd(data []byte, off int) int {
	star := false
	for i := off + 2; i < len(data); i++ {
		switch {
		case data[i] == '*':
			star = true
		case star && data[i] == '/':
			return i + 1
		}
	}
	return -1
}

func (p *j5parser) value(depth int) (*j5val, error) {
	if err := p.skip(); err != nil {
		return nil, err
	}
	if p.pos >= len(p.data) {
		return nil, p.fail("unexpected end of the file")
	}
	if depth > maxDepth {
		return nil, p.fail(fmt.Sprintf("nested deeper than %d levels", maxDepth))
	}
	v := &j5val{start: p.pos}
	switch c := p.data[p.pos]; c {
	case '{', '[':
		v.kind = c
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		p.pos++
		for {
			if err := p.skip(); err != nil {
				return nil, err
			}
			if p.pos >= len(p.data) {
				return nil, p.fail("unexpected end of the file")
			}
			if p.data[p.pos] == closer {
				p.pos++
				v.end = p.pos
				return v, nil
			}
			m := j5member{keyStart: p.pos, comma: -1}
			if c == '{' {
				if err := p.key(&m); err != nil {
					return nil, err
				}
				if err := p.skip(); err != nil {
					return nil, err
				}
				if p.pos >= len(p.data) || p.data[p.pos] != ':' {
					return nil, p.fail("expected ':' after the key")
				}
				p.pos++
			}
			val, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			m.val = val
			if err := p.skip(); err != nil {
				return nil, err
			}
			if p.pos < len(p.data) && p.data[p.pos] == ',' {
				m.comma = p.pos
				p.pos++
			} else if p.pos >= len(p.data) || p.data[p.pos] != closer {
				return nil, p.fail(fmt.Sprintf("expected ',' or '%c'", closer))
			}
			v.members = append(v.members, m)
		}
	case '"', '\'':
		if err := p.str(); err != nil {
			return nil, err
		}
	default:
		for p.pos < len(p.data) {
			d := p.data[p.pos]
			if isJSON5Space(d) || d == ',' || d == ']' || d == '}' || d == '/' || d == ':' {
				break
			}
			p.pos++
		}
		if p.pos == v.start {
			return nil, p.fail(fmt.Sprintf("unexpected %q", c))
		}
		v.null = string(p.data[v.start:p.pos]) == "null"
	}
	v.end = p.pos
	return v, nil
}

// str passes a quoted string.
func (p *j5parser) str() error {
	q := p.data[p.pos]
	for p.pos++; p.pos < len(p.data); p.pos++ {
		switch p.data[p.pos] {
		case '\\':
			p.pos++ // the escaped byte (of \r\n, the \n is a plain byte to pass)
		case q:
			p.pos++
			return nil
		}
	}
	return p.fail("unterminated string")
}

// key reads an object key: a string (decoded by the JSON5 decoder itself,
// so escapes mean what they mean to it) or an identifier.
func (p *j5parser) key(m *j5member) error {
	start := p.pos
	if c := p.data[p.pos]; c == '"' || c == '\'' {
		if err := p.str(); err != nil {
			return err
		}
		if err := json5.Unmarshal(p.data[start:p.pos], &m.key); err != nil {
			return &editError{off: start, reason: "a key the editor cannot read: " + err.Error()}
		}
		m.quoted = true
		p.quoted++
		return nil
	}
	for p.pos < len(p.data) && bareKeyByte(p.data[p.pos], p.pos == start) {
		p.pos++
	}
	if p.pos == start {
		return p.fail("expected a key")
	}
	m.key = string(p.data[start:p.pos])
	p.bare++
	return nil
}

// bareKeyByte says whether c may be in a key written without quotes (the
// decoder's rule: ASCII letters, digits, _ and $, not a digit first).
func bareKeyByte(c byte, first bool) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$' || !first && c >= '0' && c <= '9'
}

func bareKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !bareKeyByte(k[i], i == 0) {
			return false
		}
	}
	return true
}

// find returns the index of key's member in an object, -1 when it has
// none, and an error when the key is written more than once: the decoder
// keeps the last silently, and which one to change is the user's call.
func (v *j5val) find(key string) (int, *editError) {
	at := -1
	for i, m := range v.members {
		if m.key == key {
			if at >= 0 {
				return -1, &editError{off: m.keyStart, reason: fmt.Sprintf("the key %q is written twice in one object", key)}
			}
			at = i
		}
	}
	return at, nil
}

// j5style is how the file is written, for the text the editor adds.
type j5style struct {
	unit      string // one level of indentation
	nl        string // "\n" or "\r\n"
	quoteKeys bool   // keys in double quotes (a JSON file, or most keys are)
}

// j5edit replaces data[off:off+del] with ins.
type j5edit struct {
	off, del int
	ins      string
}

// editJSON5 returns doc with the value at parts set to v (JSON-decoded:
// maps, slices, strings, int64, float64, bool; nil removes the key), the
// rest of doc untouched, and the offset of the change. doc must be what
// the JSON5 decoder reads as the object the tree edit started from, and
// the tree edit (setPath) must have succeeded: the errors here are the
// editor's own limits (*editError).
func editJSON5(doc []byte, parts []string, v any) ([]byte, int, error) {
	root, p, err := parseJSON5Spans(doc)
	if err != nil {
		return nil, -1, err
	}
	if root.kind != '{' {
		return nil, root.start, &editError{off: root.start, reason: "the top-level value is not an object"}
	}
	for _, part := range parts {
		if !utf8.ValidString(part) {
			return nil, -1, &editError{off: -1, reason: fmt.Sprintf("the key %q is not valid UTF-8", part)}
		}
	}
	st := j5style{unit: indentUnit(doc, root), nl: "\n", quoteKeys: json.Valid(doc) || p.quoted > p.bare}
	if bytes.Contains(doc, []byte("\r\n")) {
		st.nl = "\r\n"
	}
	edits, at, err := st.plan(doc, root, parts, v)
	if err != nil {
		return nil, at, err
	}
	slices.SortFunc(edits, func(a, b j5edit) int { return b.off - a.off })
	out := slices.Clone(doc)
	for _, e := range edits {
		out = slices.Concat(out[:e.off], []byte(e.ins), out[e.off+e.del:])
	}
	return out, at, nil
}

// plan returns the edits that set parts to v.
func (st j5style) plan(doc []byte, root *j5val, parts []string, v any) ([]j5edit, int, error) {
	cur := root
	for i, part := range parts {
		last := i == len(parts)-1
		switch cur.kind {
		case '{':
			mi, err := cur.find(part)
			if err != nil {
				return nil, err.off, err
			}
			if mi < 0 {
				if v == nil {
					return nil, cur.start, nil // nothing to remove
				}
				edits, err := st.insert(doc, cur, part, nest(parts[i+1:], v))
				return edits, cur.start, err
			}
			m := cur.members[mi]
			switch {
			case last && v == nil:
				return st.remove(doc, cur, mi), m.keyStart, nil
			case last:
				edits, err := st.replace(doc, m.val, v, lineIndent(doc, m.keyStart))
				return edits, m.val.start, err
			case m.val.null && v == nil:
				return nil, m.val.start, nil // nothing under null to remove
			case m.val.null:
				// null on the way: the tree edit makes it an object.
				edits, err := st.replace(doc, m.val, nest(parts[i+1:], v), lineIndent(doc, m.keyStart))
				return edits, m.val.start, err
			}
			cur = m.val
		case '[':
			n, err := strconv.Atoi(part)
			if err != nil || n < 0 || n >= len(cur.members) {
				return nil, cur.start, &editError{off: cur.start, reason: fmt.Sprintf("%q is not an index of the list", part)}
			}
			m := cur.members[n]
			if last {
				if v == nil {
					return nil, m.keyStart, &editError{off: m.keyStart, reason: "a list item cannot be removed"}
				}
				edits, err := st.replace(doc, m.val, v, lineIndent(doc, m.keyStart))
				return edits, m.val.start, err
			}
			cur = m.val
		default:
			return nil, cur.start, &editError{off: cur.start, reason: "not an object"}
		}
	}
	return nil, -1, &editError{off: -1, reason: "an empty key"}
}

// nest wraps v in one object per part: [a b] → {a: {b: v}}.
func nest(parts []string, v any) any {
	for i := len(parts) - 1; i >= 0; i-- {
		v = map[string]any{parts[i]: v}
	}
	return v
}

// replace swaps a value's bytes for v's text.
func (st j5style) replace(doc []byte, old *j5val, v any, indent string) ([]j5edit, error) {
	text, err := st.format(v, indent)
	if err != nil {
		return nil, err
	}
	return []j5edit{{off: old.start, del: old.end - old.start, ins: text}}, nil
}

// insert adds `key: v` as the last member of obj: on a line of its own
// after the last member when that member ends its line (the member's
// indentation, the object's trailing-comma style), else on the same line.
func (st j5style) insert(doc []byte, obj *j5val, key string, v any) ([]j5edit, error) {
	closer := obj.end - 1
	if n := len(obj.members); n > 0 {
		last := obj.members[n-1]
		indent := lineIndent(doc, last.keyStart)
		if lineStart(doc, last.keyStart) <= obj.start { // on the line of the '{'
			indent = lineIndent(doc, obj.start) + st.unit
		}
		kv, err := st.member(key, v, indent)
		if err != nil {
			return nil, err
		}
		anchor := last.val.end
		if last.comma >= 0 {
			anchor = last.comma + 1
		}
		if nl := lineEnd(doc, anchor, closer); nl >= 0 {
			text := indent + kv
			if last.comma >= 0 {
				text += ","
			}
			edits := []j5edit{{off: nl, ins: text + st.nl}}
			if last.comma < 0 {
				edits = append(edits, j5edit{off: last.val.end, ins: ","})
			}
			return edits, nil
		}
		if last.comma >= 0 {
			return []j5edit{{off: anchor, ins: " " + kv + ","}}, nil
		}
		return []j5edit{{off: anchor, ins: ", " + kv}}, nil
	}
	inner := doc[obj.start+1 : closer]
	if !bytes.ContainsAny(inner, "\r\n") {
		kv, err := st.member(key, v, lineIndent(doc, obj.start))
		if err != nil {
			return nil, err
		}
		if len(bytes.Trim(inner, " \t\f")) == 0 {
			pad := " " // { key: 1 }, as inline writes objects
			if st.quoteKeys {
				pad = "" // {"key": 1}
			}
			return []j5edit{{off: obj.start + 1, del: len(inner), ins: pad + kv + pad}}, nil
		}
		return []j5edit{{off: closer, ins: " " + kv + " "}}, nil
	}
	ls := lineStart(doc, closer)
	if len(bytes.Trim(doc[ls:closer], " \t")) == 0 {
		indent := string(doc[ls:closer]) + st.unit
		kv, err := st.member(key, v, indent)
		if err != nil {
			return nil, err
		}
		return []j5edit{{off: ls, ins: indent + kv + st.nl}}, nil
	}
	kv, err := st.member(key, v, lineIndent(doc, closer)+st.unit)
	if err != nil {
		return nil, err
	}
	return []j5edit{{off: closer, ins: " " + kv + " "}}, nil
}

// remove cuts obj's member mi out with its comma: its whole line when
// nothing else is on it, else the member and the spaces after it. Removing
// the last member without a trailing comma removes the comma before it,
// so the object keeps its comma style. Comments outside the member stay.
func (st j5style) remove(doc []byte, obj *j5val, mi int) []j5edit {
	m := obj.members[mi]
	lo, hi := m.keyStart, m.val.end
	if m.comma >= 0 {
		hi = m.comma + 1
	}
	if len(obj.members) == 1 { // { key: 1 } → {}, when only blanks are around it
		around := slices.Concat(doc[obj.start+1:lo], doc[hi:obj.end-1])
		if len(bytes.Trim(around, " \t")) == 0 {
			return []j5edit{{off: obj.start + 1, del: obj.end - 1 - (obj.start + 1)}}
		}
	}
	after := hi
	for after < len(doc) && (doc[after] == ' ' || doc[after] == '\t') {
		after++
	}
	before := lo
	for before > 0 && (doc[before-1] == ' ' || doc[before-1] == '\t') {
		before--
	}
	atLineStart := before == 0 || doc[before-1] == '\n' || doc[before-1] == '\r'
	switch {
	case after >= len(doc):
		lo, hi = before, after
	case doc[after] == '\n' || doc[after] == '\r':
		if atLineStart { // the whole line, its line end included
			lo, hi = before, after+1
			if doc[after] == '\r' && after+1 < len(doc) && doc[after+1] == '\n' {
				hi++
			}
		} else { // no trailing blanks left behind
			lo, hi = before, after
		}
	default: // more on the line: keep it where the member began
		hi = after
	}
	edits := []j5edit{{off: lo, del: hi - lo}}
	if m.comma < 0 && mi > 0 {
		if prev := obj.members[mi-1]; prev.comma >= 0 {
			edits = append(edits, j5edit{off: prev.comma, del: 1})
		}
	}
	return edits
}

// member is `key: value` as the file writes keys.
func (st j5style) member(key string, v any, indent string) (string, error) {
	text, err := st.format(v, indent)
	if err != nil {
		return "", err
	}
	return st.key(key) + ": " + text, nil
}

func (st j5style) key(k string) string {
	if !st.quoteKeys && bareKey(k) {
		return k
	}
	return jsonString(k)
}

// format writes v as JSON (keys bare where the file's style allows), on
// one line when that line stays short, else one member per line below
// indent.
func (st j5style) format(v any, indent string) (string, error) {
	one, err := st.inline(v)
	if err != nil {
		return "", err
	}
	if len(indent)+len(one) <= 72 {
		return one, nil
	}
	inner := indent + st.unit
	switch t := v.(type) {
	case map[string]any:
		keys := sortedMapKeys(t)
		var b strings.Builder
		b.WriteString("{" + st.nl)
		for i, k := range keys {
			text, err := st.format(t[k], inner)
			if err != nil {
				return "", err
			}
			b.WriteString(inner + st.key(k) + ": " + text)
			if i < len(keys)-1 {
				b.WriteString(",")
			}
			b.WriteString(st.nl)
		}
		b.WriteString(indent + "}")
		return b.String(), nil
	case []any:
		var b strings.Builder
		b.WriteString("[" + st.nl)
		for i, x := range t {
			text, err := st.format(x, inner)
			if err != nil {
				return "", err
			}
			b.WriteString(inner + text)
			if i < len(t)-1 {
				b.WriteString(",")
			}
			b.WriteString(st.nl)
		}
		b.WriteString(indent + "]")
		return b.String(), nil
	}
	return one, nil
}

// inline writes v on one line: {key: 1, b: "x"}, [1, 2].
func (st j5style) inline(v any) (string, error) {
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 {
			return "{}", nil
		}
		var b strings.Builder
		b.WriteString("{")
		if !st.quoteKeys {
			b.WriteString(" ")
		}
		for i, k := range sortedMapKeys(t) {
			if i > 0 {
				b.WriteString(", ")
			}
			text, err := st.inline(t[k])
			if err != nil {
				return "", err
			}
			b.WriteString(st.key(k) + ": " + text)
		}
		if !st.quoteKeys {
			b.WriteString(" ")
		}
		b.WriteString("}")
		return b.String(), nil
	case []any:
		parts := make([]string, len(t))
		for i, x := range t {
			text, err := st.inline(x)
			if err != nil {
				return "", err
			}
			parts[i] = text
		}
		return "[" + strings.Join(parts, ", ") + "]", nil
	case string:
		return jsonString(t), nil
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return "", &editError{off: -1, reason: "the value is not a finite number"}
		}
	}
	data, err := json.Marshal(v)
	if err != nil {
		return "", &editError{off: -1, reason: "the value cannot be written: " + err.Error()}
	}
	return string(data), nil
}

// jsonString quotes s as JSON, leaving <, > and & as they are.
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// lineStart returns the offset of the first byte of off's line.
func lineStart(doc []byte, off int) int {
	return bytes.LastIndexAny(doc[:off], "\r\n") + 1
}

// lineIndent returns the blanks that begin off's line.
func lineIndent(doc []byte, off int) string {
	ls := lineStart(doc, off)
	i := ls
	for i < off && (doc[i] == ' ' || doc[i] == '\t') {
		i++
	}
	return string(doc[ls:i])
}

// lineEnd returns the offset after the line end that follows off when only
// blanks and comments (none spanning lines) come between, before limit;
// -1 when something else does.
func lineEnd(doc []byte, off, limit int) int {
	for i := off; i < limit; {
		switch c := doc[i]; {
		case c == ' ' || c == '\t' || c == '\f':
			i++
		case c == '\n':
			return i + 1
		case c == '\r':
			if i+1 < len(doc) && doc[i+1] == '\n' {
				return i + 2
			}
			return i + 1
		case c == '/' && i+1 < limit && doc[i+1] == '/':
			for i < limit && doc[i] != '\n' && doc[i] != '\r' {
				i++
			}
		case c == '/' && i+1 < limit && doc[i+1] == '*':
			end := blockCommentEnd(doc, i)
			if end < 0 || bytes.ContainsAny(doc[i:end], "\r\n") {
				return -1
			}
			i = end
		default:
			return -1
		}
	}
	return -1
}

// indentUnit is the file's step of indentation: how much deeper than its
// container's line the first member on a line of its own is; two spaces
// when no member is on a line of its own.
func indentUnit(doc []byte, root *j5val) string {
	var walk func(v *j5val) string
	walk = func(v *j5val) string {
		outer := lineIndent(doc, v.start)
		for _, m := range v.members {
			ls, in := lineStart(doc, m.keyStart), lineIndent(doc, m.keyStart)
			if ls > v.start && ls+len(in) == m.keyStart && len(in) > len(outer) && strings.HasPrefix(in, outer) {
				return in[len(outer):]
			}
			if m.val.kind != 0 {
				if u := walk(m.val); u != "" {
					return u
				}
			}
		}
		return ""
	}
	if u := walk(root); u != "" {
		return u
	}
	return "  "
}

// sameJSON says whether two decoded trees are equal, numbers compared as
// the loader reads them (float64) and NaN equal to NaN.
func sameJSON(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !sameJSON(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	}
	fa, oka := asFloat(a)
	fb, okb := asFloat(b)
	return oka && okb && (fa == fb || math.IsNaN(fa) && math.IsNaN(fb))
}

func asFloat(v any) (float64, bool) {
	switch t := v.(type) {
	case float64:
		return t, true
	case int64:
		return float64(t), true
	case int:
		return float64(t), true
	}
	return 0, false
}
