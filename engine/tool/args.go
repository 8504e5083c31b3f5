package tool

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// DecodeArgs decodes a tool's JSON arguments into v (a pointer to a struct)
// and turns decoding errors into sentences a model can act on. Unknown
// fields are ignored: models add them, and refusing would only waste a turn.
func DecodeArgs(args json.RawMessage, v any) error {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := json.Unmarshal(args, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return fmt.Errorf("bad arguments: %q must be %s, got %s", typeErr.Field, typeKind(typeErr.Type.Kind().String()), typeErr.Value)
		}
		return fmt.Errorf("bad arguments: %v", err)
	}
	return nil
}

func typeKind(k string) string {
	switch {
	case strings.HasPrefix(k, "int"), strings.HasPrefix(k, "uint"):
		return "an integer"
	case strings.HasPrefix(k, "float"):
		return "a number"
	case k == "bool":
		return "a boolean"
	case k == "string":
		return "a string"
	case k == "map", k == "struct":
		return "an object"
	case k == "slice":
		return "an array"
	}
	return k
}

// Int is an integer argument that also accepts a numeric string ("10") or an
// integral float (10.0): small models are loose with JSON types.
type Int int

// UnmarshalJSON implements json.Unmarshaler.
func (n *Int) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" {
		return nil
	}
	s = strings.Trim(s, `"`)
	if i, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
		*n = Int(i)
		return nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || f != float64(int(f)) {
		return fmt.Errorf("want an integer, got %s", b)
	}
	*n = Int(int(f))
	return nil
}

// Bool is a boolean argument that also accepts "true"/"false" strings.
type Bool bool

// UnmarshalJSON implements json.Unmarshaler.
func (v *Bool) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" {
		return nil
	}
	x, err := strconv.ParseBool(strings.Trim(s, `"`))
	if err != nil {
		return fmt.Errorf("want true or false, got %s", b)
	}
	*v = Bool(x)
	return nil
}

// MustSchema returns a JSON Schema literal as a RawMessage, panicking at
// start-up if it is not valid JSON (a programming error).
func MustSchema(s string) json.RawMessage {
	if !json.Valid([]byte(s)) {
		panic("tool: invalid JSON schema: " + s)
	}
	return json.RawMessage(s)
}
