package toolcall

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// A lenient JSON reader for what small models write: strict JSON plus
// single-quoted strings, unquoted keys, trailing commas, Python's
// True/False/None, raw newlines inside strings. Values keep object key order
// so re-encoded arguments read as the model wrote them.

type kind byte

const (
	kNull kind = iota
	kBool
	kNumber
	kString
	kArray
	kObject
)

type value struct {
	kind  kind
	b     bool
	s     string // string contents, or a number's JSON literal
	items []*value
	keys  []string
	vals  []*value
}

func (v *value) get(key string) (*value, bool) {
	if v == nil || v.kind != kObject {
		return nil, false
	}
	for i, k := range v.keys {
		if k == key {
			return v.vals[i], true
		}
	}
	return nil, false
}

// set replaces key's value in place or appends it.
func (v *value) set(key string, val *value) {
	for i, k := range v.keys {
		if k == key {
			v.vals[i] = val
			return
		}
	}
	v.keys = append(v.keys, key)
	v.vals = append(v.vals, val)
}

func (v *value) del(key string) {
	for i, k := range v.keys {
		if k == key {
			v.keys = append(v.keys[:i:i], v.keys[i+1:]...)
			v.vals = append(v.vals[:i:i], v.vals[i+1:]...)
			return
		}
	}
}

// errEOF means the input ended inside a value: more text may complete it.
var errEOF = errors.New("unexpected end of JSON")

const maxDepth = 128

type jsonReader struct {
	s     string
	i     int
	depth int
}

// readValue reads one lenient JSON value from s starting at i (after
// optional whitespace). It returns the value and the offset just past it.
// An error is errEOF when s ends before the value does, else a syntax error
// found before the end of s, so the same prefix always gives the same answer.
func readValue(s string, i int) (*value, int, error) {
	r := &jsonReader{s: s, i: i}
	v, err := r.value()
	return v, r.i, err
}

func (r *jsonReader) skipSpace() {
	for r.i < len(r.s) {
		switch r.s[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

func (r *jsonReader) syntax(msg string) error {
	return errors.New(msg + " at offset " + strconv.Itoa(r.i))
}

func (r *jsonReader) value() (*value, error) {
	r.skipSpace()
	if r.i >= len(r.s) {
		return nil, errEOF
	}
	switch c := r.s[r.i]; {
	case c == '{':
		return r.object()
	case c == '[':
		return r.array()
	case c == '"' || c == '\'':
		s, err := r.str()
		if err != nil {
			return nil, err
		}
		return &value{kind: kString, s: s}, nil
	case c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9'):
		return r.number()
	case isIdentStart(c):
		word, err := r.ident()
		if err != nil {
			return nil, err
		}
		switch word {
		case "true", "True":
			return &value{kind: kBool, b: true}, nil
		case "false", "False":
			return &value{kind: kBool}, nil
		case "null", "None":
			return &value{kind: kNull}, nil
		}
		return nil, r.syntax("unexpected word " + strconv.Quote(word))
	default:
		return nil, r.syntax("unexpected character " + strconv.QuoteRune(rune(c)))
	}
}

func (r *jsonReader) enter() error {
	r.depth++
	if r.depth > maxDepth {
		return r.syntax("nested too deeply")
	}
	return nil
}

func (r *jsonReader) object() (*value, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer func() { r.depth-- }()
	r.i++ // '{'
	v := &value{kind: kObject}
	for {
		r.skipSpace()
		if r.i >= len(r.s) {
			return nil, errEOF
		}
		if r.s[r.i] == '}' {
			r.i++
			return v, nil
		}
		var key string
		var err error
		switch c := r.s[r.i]; {
		case c == '"' || c == '\'':
			key, err = r.str()
		case isIdentStart(c):
			key, err = r.ident()
		default:
			return nil, r.syntax("expected an object key")
		}
		if err != nil {
			return nil, err
		}
		r.skipSpace()
		if r.i >= len(r.s) {
			return nil, errEOF
		}
		if r.s[r.i] != ':' {
			return nil, r.syntax("expected ':' after object key")
		}
		r.i++
		val, err := r.value()
		if err != nil {
			return nil, err
		}
		v.set(key, val)
		r.skipSpace()
		if r.i >= len(r.s) {
			return nil, errEOF
		}
		switch r.s[r.i] {
		case ',':
			r.i++
		case '}':
			r.i++
			return v, nil
		default:
			return nil, r.syntax("expected ',' or '}' in object")
		}
	}
}

func (r *jsonReader) array() (*value, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer func() { r.depth-- }()
	r.i++ // '['
	v := &value{kind: kArray, items: []*value{}}
	for {
		r.skipSpace()
		if r.i >= len(r.s) {
			return nil, errEOF
		}
		if r.s[r.i] == ']' {
			r.i++
			return v, nil
		}
		item, err := r.value()
		if err != nil {
			return nil, err
		}
		v.items = append(v.items, item)
		r.skipSpace()
		if r.i >= len(r.s) {
			return nil, errEOF
		}
		switch r.s[r.i] {
		case ',':
			r.i++
		case ']':
			r.i++
			return v, nil
		default:
			return nil, r.syntax("expected ',' or ']' in array")
		}
	}
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentPart(c byte) bool {
	return isIdentStart(c) || (c >= '0' && c <= '9') || c == '-'
}

// ident reads an unquoted word. Reaching the end of input is errEOF: the
// word may go on.
func (r *jsonReader) ident() (string, error) {
	start := r.i
	for r.i < len(r.s) && isIdentPart(r.s[r.i]) {
		r.i++
	}
	if r.i >= len(r.s) {
		return "", errEOF
	}
	return r.s[start:r.i], nil
}

func (r *jsonReader) number() (*value, error) {
	start := r.i
	for r.i < len(r.s) && strings.IndexByte("+-.0123456789eE", r.s[r.i]) >= 0 {
		r.i++
	}
	if r.i >= len(r.s) {
		return nil, errEOF
	}
	lit := r.s[start:r.i]
	if validNumber(lit) {
		return &value{kind: kNumber, s: lit}, nil
	}
	f, err := strconv.ParseFloat(strings.TrimPrefix(lit, "+"), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		r.i = start
		return nil, r.syntax("bad number " + strconv.Quote(lit))
	}
	return &value{kind: kNumber, s: strconv.FormatFloat(f, 'g', -1, 64)}, nil
}

// validNumber reports whether lit is a JSON number literal.
func validNumber(lit string) bool {
	i := 0
	if i < len(lit) && lit[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(lit) && lit[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(lit) && lit[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		if i < len(lit) && (lit[i] == '+' || lit[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(lit)
}

func (r *jsonReader) str() (string, error) {
	quote := r.s[r.i]
	r.i++
	var b strings.Builder
	for {
		if r.i >= len(r.s) {
			return "", errEOF
		}
		c := r.s[r.i]
		switch {
		case c == quote:
			r.i++
			return b.String(), nil
		case c == '\\':
			if r.i+1 >= len(r.s) {
				return "", errEOF
			}
			e := r.s[r.i+1]
			r.i += 2
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
			case 'u':
				rn, err := r.hex4()
				if err != nil {
					return "", err
				}
				if utf16.IsSurrogate(rn) && r.i+1 < len(r.s) && r.s[r.i] == '\\' && r.s[r.i+1] == 'u' {
					save := r.i
					r.i += 2
					lo, err := r.hex4()
					if err != nil {
						return "", err
					}
					if dec := utf16.DecodeRune(rn, lo); dec != utf8.RuneError {
						rn = dec
					} else {
						r.i = save
					}
				}
				b.WriteRune(rn)
			default: // \" \' \\ \/ and unknown escapes: the character itself
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
			r.i++
		}
	}
}

func (r *jsonReader) hex4() (rune, error) {
	if r.i+4 > len(r.s) {
		for j := r.i; j < len(r.s); j++ {
			if !isHex(r.s[j]) {
				return 0, r.syntax("bad \\u escape")
			}
		}
		return 0, errEOF
	}
	n, err := strconv.ParseUint(r.s[r.i:r.i+4], 16, 32)
	if err != nil {
		return 0, r.syntax("bad \\u escape")
	}
	r.i += 4
	return rune(n), nil
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// encode writes v as strict JSON: compact, or with Python's json.dumps
// separators (", " and ": ") when spaced. No HTML escaping.
func (v *value) encode(b *strings.Builder, spaced bool) {
	switch v.kind {
	case kNull:
		b.WriteString("null")
	case kBool:
		if v.b {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case kNumber:
		b.WriteString(v.s)
	case kString:
		writeString(b, v.s)
	case kArray:
		b.WriteByte('[')
		for i, it := range v.items {
			if i > 0 {
				b.WriteByte(',')
				if spaced {
					b.WriteByte(' ')
				}
			}
			it.encode(b, spaced)
		}
		b.WriteByte(']')
	case kObject:
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
				if spaced {
					b.WriteByte(' ')
				}
			}
			writeString(b, k)
			b.WriteByte(':')
			if spaced {
				b.WriteByte(' ')
			}
			v.vals[i].encode(b, spaced)
		}
		b.WriteByte('}')
	}
}

func (v *value) String() string {
	var b strings.Builder
	v.encode(&b, false)
	return b.String()
}

func writeString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch c {
			case '"':
				b.WriteString(`\"`)
			case '\\':
				b.WriteString(`\\`)
			case '\n':
				b.WriteString(`\n`)
			case '\r':
				b.WriteString(`\r`)
			case '\t':
				b.WriteString(`\t`)
			default:
				if c < 0x20 {
					b.WriteString(`\u00`)
					b.WriteByte(hex[c>>4])
					b.WriteByte(hex[c&0xf])
				} else {
					b.WriteByte(c)
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString(`\ufffd`)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
}

// parseDocument decodes a complete lenient JSON document.
func parseDocument(s string) (*value, error) {
	// A trailing newline lets a top-level number or word end.
	v, end, err := readValue(s+"\n", 0)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(s[min(end, len(s)):]) != "" {
		return nil, errors.New("trailing text after JSON value")
	}
	return v, nil
}
