package chattemplate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// Values handed to templates are built from JSON the way Python's json.loads
// builds them: objects become *exec.Dict (gonja's ordered dict, so key order
// survives into tojson and |items exactly as Hugging Face renders it), arrays
// []any, numbers int or float64, strings, bools and nil.

// decodeOrdered decodes one JSON value keeping object key order.
func decodeOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("trailing data after JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			d := exec.NewDict()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key %v is not a string", kt)
				}
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				dictSet(d, key, v)
			}
			if _, err := dec.Token(); err != nil { // '}'
				return nil, err
			}
			return d, nil
		case '[':
			list := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil, err
			}
			return list, nil
		}
		return nil, fmt.Errorf("unexpected delimiter %v", t)
	case json.Number:
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return int(i), nil
		}
		f, err := t.Float64()
		if err != nil {
			return nil, err
		}
		return f, nil
	default: // string, bool, nil
		return t, nil
	}
}

// dictSet sets key in d, replacing an existing value in place (Python dict
// semantics: a repeated key keeps its first position).
func dictSet(d *exec.Dict, key string, v any) {
	for _, p := range d.Pairs {
		if p.Key.IsString() && p.Key.String() == key {
			p.Value = exec.AsValue(v)
			return
		}
	}
	d.Pairs = append(d.Pairs, &exec.Pair{Key: exec.AsValue(key), Value: exec.AsValue(v)})
}

// newDict builds an ordered dict from alternating key, value arguments.
func newDict(kv ...any) *exec.Dict {
	d := &exec.Dict{Pairs: make([]*exec.Pair, 0, len(kv)/2)}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Pairs = append(d.Pairs, &exec.Pair{Key: exec.AsValue(kv[i]), Value: exec.AsValue(kv[i+1])})
	}
	return d
}

// pyDumps is Python's json.dumps as Hugging Face's tojson filter calls it:
// insertion-ordered keys (unless sortKeys), separators ", " and ": " without
// indent and "," and ": " with one, non-ASCII kept as is unless ensureASCII,
// and none of Go's HTML escaping.
type pyDumps struct {
	indent      string
	hasIndent   bool
	sortKeys    bool
	ensureASCII bool
	b           strings.Builder
}

func (p *pyDumps) encode(v any, depth int) error {
	if depth > 200 {
		return errors.New("tojson: value nested too deeply")
	}
	if val, ok := v.(*exec.Value); ok {
		if val == nil || val.IsNil() {
			p.b.WriteString("null")
			return nil
		}
		v = val.Interface()
	}
	switch x := v.(type) {
	case nil:
		p.b.WriteString("null")
		return nil
	case string:
		p.str(x)
		return nil
	case bool:
		if x {
			p.b.WriteString("true")
		} else {
			p.b.WriteString("false")
		}
		return nil
	case float64:
		return p.float(x)
	case float32:
		return p.float(float64(x))
	case json.RawMessage:
		d, err := decodeOrdered(x)
		if err != nil {
			return fmt.Errorf("tojson: %w", err)
		}
		return p.encode(d, depth+1)
	case *exec.Dict:
		return p.dict(x.Pairs, depth)
	case exec.Dict:
		return p.dict(x.Pairs, depth)
	case error:
		return x
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		p.b.WriteString(strconv.FormatInt(rv.Int(), 10))
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		p.b.WriteString(strconv.FormatUint(rv.Uint(), 10))
		return nil
	case reflect.String:
		p.str(rv.String())
		return nil
	case reflect.Slice, reflect.Array:
		n := rv.Len()
		if n == 0 {
			p.b.WriteString("[]")
			return nil
		}
		p.b.WriteByte('[')
		for i := range n {
			if i > 0 {
				p.sep()
			}
			p.newline(depth + 1)
			if err := p.encode(rv.Index(i).Interface(), depth+1); err != nil {
				return err
			}
		}
		p.newline(depth)
		p.b.WriteByte(']')
		return nil
	case reflect.Map:
		keys := rv.MapKeys()
		pairs := make([]*exec.Pair, 0, len(keys))
		for _, k := range keys {
			pairs = append(pairs, &exec.Pair{Key: exec.AsValue(k.Interface()), Value: exec.AsValue(rv.MapIndex(k).Interface())})
		}
		// Go maps have no order: sort so output is deterministic.
		sort.Slice(pairs, func(i, j int) bool { return pairs[i].Key.String() < pairs[j].Key.String() })
		return p.dict(pairs, depth)
	case reflect.Pointer:
		if rv.IsNil() {
			p.b.WriteString("null")
			return nil
		}
		return p.encode(rv.Elem().Interface(), depth+1)
	}
	return fmt.Errorf("tojson: cannot encode %T", v)
}

func (p *pyDumps) dict(pairs []*exec.Pair, depth int) error {
	if len(pairs) == 0 {
		p.b.WriteString("{}")
		return nil
	}
	if p.sortKeys {
		pairs = append([]*exec.Pair(nil), pairs...)
		sort.SliceStable(pairs, func(i, j int) bool { return pairs[i].Key.String() < pairs[j].Key.String() })
	}
	p.b.WriteByte('{')
	for i, pair := range pairs {
		if i > 0 {
			p.sep()
		}
		p.newline(depth + 1)
		// Python turns int, float, bool and None keys into strings.
		p.str(keyString(pair.Key))
		p.b.WriteString(": ")
		if err := p.encode(pair.Value, depth+1); err != nil {
			return err
		}
	}
	p.newline(depth)
	p.b.WriteByte('}')
	return nil
}

func keyString(k *exec.Value) string {
	switch {
	case k.IsNil():
		return "null"
	case k.IsBool():
		if k.Bool() {
			return "true"
		}
		return "false"
	}
	return k.String()
}

func (p *pyDumps) sep() {
	if p.hasIndent {
		p.b.WriteByte(',')
	} else {
		p.b.WriteString(", ")
	}
}

func (p *pyDumps) newline(depth int) {
	if !p.hasIndent {
		return
	}
	p.b.WriteByte('\n')
	for range depth {
		p.b.WriteString(p.indent)
	}
}

// float writes f as Python's repr does: shortest round-trip digits, ".0" on
// integral values, exponent form below 1e-4 and from 1e16.
func (p *pyDumps) float(f float64) error {
	switch {
	case math.IsNaN(f):
		p.b.WriteString("NaN")
		return nil
	case math.IsInf(f, 1):
		p.b.WriteString("Infinity")
		return nil
	case math.IsInf(f, -1):
		p.b.WriteString("-Infinity")
		return nil
	}
	p.b.WriteString(pyFloat(f))
	return nil
}

func pyFloat(f float64) string {
	if f == 0 {
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	if exp < -4 || exp >= 16 {
		sign := "+"
		if exp < 0 {
			sign = "-"
			exp = -exp
		}
		return fmt.Sprintf("%se%s%02d", mant, sign, exp)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

func (p *pyDumps) str(s string) {
	const hex = "0123456789abcdef"
	p.b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch c {
			case '"':
				p.b.WriteString(`\"`)
			case '\\':
				p.b.WriteString(`\\`)
			case '\n':
				p.b.WriteString(`\n`)
			case '\r':
				p.b.WriteString(`\r`)
			case '\t':
				p.b.WriteString(`\t`)
			case '\b':
				p.b.WriteString(`\b`)
			case '\f':
				p.b.WriteString(`\f`)
			default:
				if c < 0x20 {
					p.b.WriteString(`\u00`)
					p.b.WriteByte(hex[c>>4])
					p.b.WriteByte(hex[c&0xf])
				} else {
					p.b.WriteByte(c)
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if !p.ensureASCII {
			if r == utf8.RuneError && size == 1 {
				p.b.WriteString(`\ufffd`)
			} else {
				p.b.WriteString(s[i : i+size])
			}
			i += size
			continue
		}
		if r > 0xffff {
			r -= 0x10000
			fmt.Fprintf(&p.b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		} else {
			fmt.Fprintf(&p.b, `\u%04x`, r)
		}
		i += size
	}
	p.b.WriteByte('"')
}
