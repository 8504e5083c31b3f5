package config

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// decoder turns the merged tree (maps, slices, strings, float64, bool, as the
// JSON5 parser produces them) into the typed Config, strictly: unknown keys
// and wrong types are recorded as errors with their key path, and decoding
// goes on so that every problem is reported at once.
type decoder struct {
	src   *source
	errs  []*Error
	warns []*Error // OpenClaw keys accepted and ignored (openclaw_keys.go)
}

// configDecoder is implemented by types whose file form differs from their
// struct shape (ModelRef's string form, Channel's open key set).
type configDecoder interface {
	decodeConfig(d *decoder, path string, raw any)
}

func reflectValue(ptr any) reflect.Value { return reflect.ValueOf(ptr).Elem() }

func (d *decoder) fail(path, reason string) {
	d.errs = append(d.errs, d.src.err(path, reason))
}

// shadows reports whether a decoding error at path or above it already
// explains a validation problem at path.
func (d *decoder) shadows(path string) bool {
	for _, e := range d.errs {
		if path == e.Path || strings.HasPrefix(path, e.Path+".") || strings.HasPrefix(path, e.Path+"[") {
			return true
		}
	}
	return false
}

func (d *decoder) typeErr(path, want string, raw any) {
	d.fail(path, fmt.Sprintf("expected %s, got %s", want, kindOf(raw)))
}

// kindOf names a parsed value's JSON type.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}

func (d *decoder) decode(path string, raw any, v reflect.Value) {
	if v.CanAddr() {
		if cd, ok := v.Addr().Interface().(configDecoder); ok {
			cd.decodeConfig(d, path, raw)
			return
		}
	}
	switch v.Kind() {
	case reflect.Pointer:
		if raw == nil {
			return
		}
		e := reflect.New(v.Type().Elem())
		d.decode(path, raw, e.Elem())
		v.Set(e)
	case reflect.Struct:
		m, ok := raw.(map[string]any)
		if !ok {
			d.typeErr(path, "an object", raw)
			return
		}
		fields := fieldsOf(v.Type())
		for _, k := range sortedMapKeys(m) {
			p := keyPath(path, k)
			idx, ok := fields[k]
			if !ok {
				if isOpenClawKey(v.Type(), k) {
					d.warns = append(d.warns, d.src.err(p, unsupportedOpenClawKey))
				} else {
					d.fail(p, unknownKey(k, fields))
				}
				continue
			}
			if m[k] != nil {
				d.decode(p, m[k], v.FieldByIndex(idx))
			}
		}
	case reflect.String:
		s, ok := raw.(string)
		if !ok {
			d.typeErr(path, "a string", raw)
			return
		}
		v.SetString(s)
	case reflect.Bool:
		b, ok := raw.(bool)
		if !ok {
			d.typeErr(path, "a boolean (true or false)", raw)
			return
		}
		v.SetBool(b)
	case reflect.Int:
		f, ok := raw.(float64)
		switch {
		case !ok:
			d.typeErr(path, "a number", raw)
		case math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f):
			d.fail(path, "expected an integer, got "+formatNumber(f))
		case f < 0:
			d.fail(path, "must not be negative, got "+formatNumber(f))
		case f > math.MaxInt32:
			d.fail(path, "too large, got "+formatNumber(f))
		default:
			v.SetInt(int64(f))
		}
	case reflect.Float64:
		f, ok := raw.(float64)
		switch {
		case !ok:
			d.typeErr(path, "a number", raw)
		case math.IsNaN(f) || math.IsInf(f, 0):
			d.fail(path, "expected a number, got "+formatNumber(f))
		default:
			v.SetFloat(f)
		}
	case reflect.Slice:
		arr, ok := raw.([]any)
		if !ok {
			d.typeErr(path, "an array", raw)
			return
		}
		s := reflect.MakeSlice(v.Type(), len(arr), len(arr))
		for i, e := range arr {
			d.decode(indexPath(path, i), e, s.Index(i))
		}
		v.Set(s)
	case reflect.Map:
		m, ok := raw.(map[string]any)
		if !ok {
			d.typeErr(path, "an object", raw)
			return
		}
		mv := reflect.MakeMapWithSize(v.Type(), len(m))
		for _, k := range sortedMapKeys(m) {
			if m[k] == nil {
				continue
			}
			e := reflect.New(v.Type().Elem()).Elem()
			d.decode(keyPath(path, k), m[k], e)
			mv.SetMapIndex(reflect.ValueOf(k).Convert(v.Type().Key()), e)
		}
		v.Set(mv)
	case reflect.Interface:
		if raw != nil {
			v.Set(reflect.ValueOf(raw))
		}
	default:
		panic(fmt.Sprintf("config: cannot decode into %s at %s", v.Type(), path))
	}
}

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// fieldsOf maps the json names of t's fields to their indexes; untagged
// embedded structs are inlined, as encoding/json does.
func fieldsOf(t reflect.Type) map[string][]int {
	out := map[string][]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-" || !f.IsExported():
		case f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct:
			for name, idx := range fieldsOf(f.Type) {
				out[name] = append([]int{i}, idx...)
			}
		case tag != "":
			out[tag] = []int{i}
		default:
			out[f.Name] = []int{i}
		}
	}
	return out
}

// unknownKey explains an unknown key, suggesting the known key it was
// probably meant to be.
func unknownKey(k string, fields map[string][]int) string {
	known := make([]string, 0, len(fields))
	for name := range fields {
		known = append(known, name)
	}
	slices.Sort(known)
	best, bestDist := "", 3
	for _, name := range known {
		dist := editDistance(strings.ToLower(k), strings.ToLower(name))
		if dist < bestDist && dist < len(name)/2+1 {
			best, bestDist = name, dist
		}
	}
	if best != "" {
		return fmt.Sprintf("unknown key (did you mean %q?)", best)
	}
	return "unknown key (known keys: " + strings.Join(known, ", ") + ")"
}

// editDistance is the Levenshtein distance of two short strings.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// decodeConfig accepts "provider/model" or {primary, fallbacks}.
func (m *ModelRef) decodeConfig(d *decoder, path string, raw any) {
	switch t := raw.(type) {
	case string:
		*m = ModelRef{Primary: t}
	case map[string]any:
		type plain ModelRef // no decodeConfig: decoded field by field
		var p plain
		d.decode(path, t, reflect.ValueOf(&p).Elem())
		*m = ModelRef(p)
	default:
		d.typeErr(path, `a "provider/model" string or {primary, fallbacks}`, raw)
	}
}

// decodeConfig decodes the shared channel keys and keeps the rest in Extra.
func (c *Channel) decodeConfig(d *decoder, path string, raw any) {
	m, ok := raw.(map[string]any)
	if !ok {
		d.typeErr(path, "an object", raw)
		return
	}
	shared := fieldsOf(reflect.TypeFor[Channel]())
	cv := reflect.ValueOf(c).Elem()
	for _, k := range sortedMapKeys(m) {
		if m[k] == nil {
			continue
		}
		if idx, ok := shared[k]; ok {
			d.decode(keyPath(path, k), m[k], cv.FieldByIndex(idx))
			continue
		}
		if c.Extra == nil {
			c.Extra = map[string]any{}
		}
		c.Extra[k] = m[k]
	}
}
