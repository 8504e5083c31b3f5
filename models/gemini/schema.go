package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// toolSchema rewrites a tool's JSON Schema into the OpenAPI subset Gemini's
// functionDeclarations take (see the package doc). It returns nil for a
// schema without properties: Gemini refuses an OBJECT with none, and a tool
// without parameters is declared without the field.
func toolSchema(raw json.RawMessage) (map[string]any, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep minimum/maximum exactly as written
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, err
	}
	m, ok := root.(map[string]any)
	if !ok {
		return nil, errors.New("the schema is not a JSON object")
	}
	if _, ok := m["type"]; !ok {
		m["type"] = "object" // parameters are an object even when unsaid
	}
	c := converter{root: m}
	s := c.convert(m, 0)
	if s["type"] == nil {
		s["type"] = "object"
	}
	if s["type"] != "object" {
		return nil, fmt.Errorf("the schema is of type %v, want object", s["type"])
	}
	if props, _ := s["properties"].(map[string]any); len(props) == 0 {
		return nil, nil
	}
	return s, nil
}

// converter holds the root schema, for $ref.
type converter struct {
	root map[string]any
}

// maxDepth bounds nesting and $ref expansion (a recursive schema).
const maxDepth = 16

// kept are the keywords copied as they are.
var kept = []string{"title", "description", "nullable", "minItems", "maxItems",
	"minLength", "maxLength", "minimum", "maximum", "minProperties", "maxProperties"}

// formats are the formats Gemini accepts, by type.
var formats = map[string][]string{
	"string":  {"enum", "date-time"},
	"integer": {"int32", "int64"},
	"number":  {"float", "double"},
}

func (c *converter) convert(s map[string]any, depth int) map[string]any {
	out := map[string]any{}
	if depth > maxDepth {
		out["type"] = "string"
		out["description"] = "(nested too deep to describe)"
		return out
	}
	s = c.resolve(s)
	for _, k := range kept {
		if v, ok := s[k]; ok {
			out[k] = v
		}
	}
	if d, ok := out["description"].(string); ok && d == "" {
		delete(out, "description")
	}

	// type: a string, or a list with "null" meaning nullable.
	switch t := s["type"].(type) {
	case string:
		out["type"] = strings.ToLower(t)
	case []any:
		for _, e := range t {
			name, _ := e.(string)
			switch {
			case strings.EqualFold(name, "null"):
				out["nullable"] = true
			case out["type"] == nil && name != "":
				out["type"] = strings.ToLower(name)
			}
		}
	}
	if out["type"] == "null" {
		out["type"], out["nullable"] = "string", true
	}

	// enum: strings only, none empty.
	values, hasEnum := s["enum"].([]any)
	if c, ok := s["const"]; ok && !hasEnum {
		values, hasEnum = []any{c}, true
	}
	if hasEnum {
		var strs []any
		var all []string
		allStrings := true
		for _, v := range values {
			switch v := v.(type) {
			case string:
				if v != "" {
					strs = append(strs, v)
				}
				all = append(all, v)
			case nil:
				out["nullable"] = true
			default:
				allStrings = false
				b, _ := json.Marshal(v)
				all = append(all, string(b))
			}
		}
		if allStrings && len(strs) > 0 && (out["type"] == nil || out["type"] == "string") {
			out["type"], out["enum"] = "string", strs
		} else if len(all) > 0 {
			hint := "Allowed values: " + strings.Join(all, ", ") + "."
			if d, _ := out["description"].(string); d != "" {
				hint = d + " " + hint
			}
			out["description"] = hint
		}
	}

	if f, ok := s["format"].(string); ok {
		t, _ := out["type"].(string)
		for _, allowed := range formats[t] {
			if f == allowed {
				out["format"] = f
			}
		}
	}

	if props, ok := s["properties"].(map[string]any); ok {
		conv := map[string]any{}
		for name, p := range props {
			if pm, ok := p.(map[string]any); ok {
				conv[name] = c.convert(pm, depth+1)
			}
		}
		if len(conv) > 0 {
			out["properties"] = conv
		}
		if out["type"] == nil {
			out["type"] = "object"
		}
	}
	if req, ok := s["required"].([]any); ok {
		props, _ := out["properties"].(map[string]any)
		var names []any
		for _, r := range req {
			if name, ok := r.(string); ok && props[name] != nil {
				names = append(names, name)
			}
		}
		if len(names) > 0 {
			out["required"] = names
		}
	}

	if items, ok := s["items"].(map[string]any); ok {
		out["items"] = c.convert(items, depth+1)
		if out["type"] == nil {
			out["type"] = "array"
		}
	}
	if out["type"] == "array" && out["items"] == nil {
		out["items"] = map[string]any{"type": "string"}
	}

	var alts []any
	for _, k := range []string{"anyOf", "oneOf"} {
		list, _ := s[k].([]any)
		for _, a := range list {
			am, ok := a.(map[string]any)
			switch {
			case !ok:
			case am["type"] == "null":
				out["nullable"] = true
			default:
				alts = append(alts, c.convert(am, depth+1))
			}
		}
	}
	switch {
	case len(alts) == 1 && out["type"] == nil:
		for k, v := range alts[0].(map[string]any) {
			if _, set := out[k]; !set {
				out[k] = v
			}
		}
	case len(alts) > 0:
		out["anyOf"] = alts
	}
	if out["type"] == nil && out["anyOf"] == nil {
		out["type"] = "string" // "any value": Gemini needs a type
	}
	return out
}

// resolve inlines a $ref into the local #/$defs or #/definitions and merges
// a single allOf, so the result holds the keywords itself. Sibling keywords
// win over the referenced ones.
func (c *converter) resolve(s map[string]any) map[string]any {
	for range maxDepth {
		var target map[string]any
		if ref, ok := s["$ref"].(string); ok {
			target = c.lookup(ref)
			if target == nil {
				target = map[string]any{"type": "object"}
			}
		} else if all, ok := s["allOf"].([]any); ok && len(all) == 1 {
			target, _ = all[0].(map[string]any)
		}
		if target == nil {
			return s
		}
		merged := map[string]any{}
		for k, v := range target {
			merged[k] = v
		}
		for k, v := range s {
			if k != "$ref" && k != "allOf" {
				merged[k] = v
			}
		}
		s = merged
	}
	return map[string]any{"type": "object"} // a $ref loop
}

func (c *converter) lookup(ref string) map[string]any {
	for _, prefix := range []string{"#/$defs/", "#/definitions/"} {
		if name, ok := strings.CutPrefix(ref, prefix); ok {
			defs, _ := c.root[strings.TrimSuffix(strings.TrimPrefix(prefix, "#/"), "/")].(map[string]any)
			s, _ := defs[name].(map[string]any)
			return s
		}
	}
	if ref == "#" {
		return c.root
	}
	return nil
}
