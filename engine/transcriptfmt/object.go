package transcriptfmt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Object builds a JSON object with keys in insertion order.
type Object struct {
	buf bytes.Buffer
	err error
}

func (o *Object) key(k string) {
	if o.buf.Len() == 0 {
		o.buf.WriteByte('{')
	} else {
		o.buf.WriteByte(',')
	}
	kb, _ := json.Marshal(k)
	o.buf.Write(kb)
	o.buf.WriteByte(':')
}

func (o *Object) Add(k string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		if o.err == nil {
			o.err = fmt.Errorf("%s: %w", k, err)
		}
		return
	}
	o.key(k)
	o.buf.Write(b)
}

func (o *Object) Raw(k string, v json.RawMessage) {
	if !json.Valid(v) {
		if o.err == nil {
			o.err = fmt.Errorf("%s: invalid JSON", k)
		}
		return
	}
	o.key(k)
	json.Compact(&o.buf, v)
}

func (o *Object) RawOpt(k string, v json.RawMessage) {
	if len(v) > 0 {
		o.Raw(k, v)
	}
}

// extra adds the fields of m not in known, sorted by key.
func (o *Object) Extra(m map[string]json.RawMessage, known []string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		if !slices.Contains(known, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		o.Raw(k, m[k])
	}
}

func (o *Object) Bytes() ([]byte, error) {
	if o.err != nil {
		return nil, o.err
	}
	if o.buf.Len() == 0 {
		o.buf.WriteByte('{')
	}
	o.buf.WriteByte('}')
	return o.buf.Bytes(), nil
}

// TakeFields decodes the named fields of m into their targets. A JSON null
// leaves the target at its zero value.
func TakeFields(m map[string]json.RawMessage, fields map[string]any) error {
	for k, dst := range fields {
		raw, ok := m[k]
		if !ok || string(raw) == "null" {
			continue
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			return fmt.Errorf("field %q: %w", k, TypeError(err))
		}
	}
	return nil
}

func TypeError(err error) error {
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Errorf("%s: want %s, got a JSON %s", te.Field, te.Type, te.Value)
		}
		return fmt.Errorf("want %s, got a JSON %s", te.Type, te.Value)
	}
	return err
}

// Rest returns the fields of m not in known, or nil.
func Rest(m map[string]json.RawMessage, known []string) map[string]json.RawMessage {
	var out map[string]json.RawMessage
	for k, v := range m {
		if slices.Contains(known, k) {
			continue
		}
		if out == nil {
			out = map[string]json.RawMessage{}
		}
		out[k] = v
	}
	return out
}
