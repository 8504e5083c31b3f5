package toolcall

import (
	"encoding/json"
	"strings"

	"github.com/openclaw-edge/edge/engine"
)

// MaxGrammarBound is the largest maxLength/maxItems (and minimum) kept by
// SimplifySchema. Grammar compilers expand a bound into that many rule
// copies, so a huge one makes sampling slow or the grammar too big.
const MaxGrammarBound = 256

// dropped are keywords grammar compilers cannot honour or do not need:
// regex patterns (unsupported or costly), formats, and annotations.
var dropped = map[string]bool{
	"pattern": true, "patternProperties": true, "format": true,
	"$schema": true, "$id": true, "$comment": true,
}

// annotations carry no constraint; CallSchema leaves them out as well.
var annotations = map[string]bool{
	"description": true, "title": true, "examples": true, "default": true,
}

// SimplifySchema returns schema without what small models and grammar
// compilers handle badly: pattern, patternProperties and format are
// removed, and a maxLength, maxItems or maxProperties above
// MaxGrammarBound is removed rather than clamped (a clamped bound would
// make the grammar reject values the tool accepts; the tool still validates
// them). Key order is kept. Input that is not a JSON object comes back
// unchanged.
func SimplifySchema(schema json.RawMessage) json.RawMessage {
	v, err := parseDocument(string(schema))
	if err != nil || v.kind != kObject {
		return schema
	}
	simplify(v, false)
	return json.RawMessage(v.String())
}

// simplify edits a schema object in place; strip also removes annotations.
func simplify(v *value, strip bool) {
	if v == nil || v.kind != kObject {
		return
	}
	// Keys that are user data (property names, $defs names) must not be
	// mistaken for keywords: only walk into known subschema positions.
	for _, k := range append([]string(nil), v.keys...) {
		val, _ := v.get(k)
		switch {
		case dropped[k], strip && annotations[k]:
			v.del(k)
		case k == "maxLength" || k == "maxItems" || k == "maxProperties":
			if val.kind == kNumber && numberAbove(val.s, MaxGrammarBound) {
				v.del(k)
			}
		case k == "properties" || k == "$defs" || k == "definitions" || k == "dependentSchemas":
			if val.kind == kObject {
				for _, sub := range val.vals {
					simplify(sub, strip)
				}
			}
		case k == "items" || k == "additionalProperties" || k == "additionalItems" ||
			k == "not" || k == "if" || k == "then" || k == "else" || k == "contains" ||
			k == "propertyNames" || k == "unevaluatedProperties" || k == "unevaluatedItems":
			if val.kind == kObject {
				simplify(val, strip)
			} else if val.kind == kArray { // draft-4 tuple items
				for _, sub := range val.items {
					simplify(sub, strip)
				}
			}
		case k == "anyOf" || k == "oneOf" || k == "allOf" || k == "prefixItems":
			if val.kind == kArray {
				for _, sub := range val.items {
					simplify(sub, strip)
				}
			}
		}
	}
}

// numberAbove reports whether the JSON number lit is greater than n.
func numberAbove(lit string, n int) bool {
	var f float64
	if err := json.Unmarshal([]byte(lit), &f); err != nil {
		return true
	}
	return f > float64(n)
}

// CallSchema is a JSON Schema accepting exactly one tool call object,
// {"name": <one of the tools>, "arguments": <that tool's parameters>}, as
// anyOf with one branch per tool, simplified as SimplifySchema does and
// without annotations — what llama.cpp's SchemaToGrammar compiles to
// constrain a local model's call. The "name" property comes first so the
// model commits to a tool before writing arguments. Nil for no tools.
func CallSchema(tools []engine.ToolSpec) []byte {
	if len(tools) == 0 {
		return nil
	}
	str := func(s string) *value { return &value{kind: kString, s: s} }
	branches := &value{kind: kArray}
	for _, t := range tools {
		params, err := parseDocument(string(t.Parameters))
		if len(t.Parameters) == 0 || err != nil || params.kind != kObject {
			params = &value{kind: kObject}
			params.set("type", str("object"))
		}
		simplify(params, true)
		name := &value{kind: kObject}
		name.set("const", str(t.Name))
		props := &value{kind: kObject}
		props.set("name", name)
		props.set("arguments", params)
		branch := &value{kind: kObject}
		branch.set("type", str("object"))
		branch.set("properties", props)
		branch.set("required", &value{kind: kArray, items: []*value{str("name"), str("arguments")}})
		branch.set("additionalProperties", &value{kind: kBool})
		branches.items = append(branches.items, branch)
	}
	root := &value{kind: kObject}
	if len(branches.items) == 1 {
		root = branches.items[0]
	} else {
		root.set("anyOf", branches)
	}
	var b strings.Builder
	root.encode(&b, false)
	return []byte(b.String())
}
