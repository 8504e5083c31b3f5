package toolcall

import (
	"strings"

	"github.com/openclaw-edge/edge/engine"
)

// ToolsSystemPrompt is the system-prompt section that teaches a model whose
// chat template has no tools to call them in the Hermes form. Tools are
// listed the way Qwen's and Hermes' own templates list them (one
// {"type": "function", "function": {…}} object per line, json.dumps
// spacing), since that is the form these models were tuned on.
func ToolsSystemPrompt(tools []engine.ToolSpec) string {
	if len(tools) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("# Tools\n\nYou may call one or more tools to help with the user's request.\n\n")
	b.WriteString("The tools are described by JSON schemas within <tools></tools> XML tags:\n<tools>")
	for _, t := range tools {
		b.WriteByte('\n')
		toolValue(t).encode(&b, true)
	}
	b.WriteString("\n</tools>\n\n")
	b.WriteString("To call a tool, reply with a JSON object holding the tool's name and its arguments within <tool_call></tool_call> XML tags, one block per call:\n")
	b.WriteString("<tool_call>\n{\"name\": <tool-name>, \"arguments\": <arguments-json-object>}\n</tool_call>\n\n")
	b.WriteString("You may write several <tool_call> blocks to call several tools. Tool results come back in <tool_response></tool_response> tags. ")
	b.WriteString("If no tool is needed, answer the user normally, without any <tool_call> block.")
	return b.String()
}

// toolValue is {"type": "function", "function": {"name", "description",
// "parameters"}} with the parameters' key order kept.
func toolValue(t engine.ToolSpec) *value {
	params, err := parseDocument(string(t.Parameters))
	if len(t.Parameters) == 0 || err != nil || params.kind != kObject {
		params = &value{kind: kObject, keys: []string{"type", "properties"},
			vals: []*value{{kind: kString, s: "object"}, {kind: kObject}}}
	}
	fn := &value{kind: kObject}
	fn.set("name", &value{kind: kString, s: t.Name})
	fn.set("description", &value{kind: kString, s: t.Description})
	fn.set("parameters", params)
	v := &value{kind: kObject}
	v.set("type", &value{kind: kString, s: "function"})
	v.set("function", fn)
	return v
}

// FormatCalls writes calls the way a model of family writes them, for chat
// history in templates that do not render tool_calls themselves and for
// prompt-based calling (FamilyNone and FamilyHermes: one <tool_call> block
// per call). Arguments that are not a JSON object are written as {}.
func FormatCalls(family Family, calls []engine.ToolCall) string {
	if len(calls) == 0 {
		return ""
	}
	obj := func(c engine.ToolCall, argsKey string) *value {
		args, err := parseDocument(string(c.Arguments))
		if err != nil || args.kind != kObject {
			args = &value{kind: kObject}
		}
		v := &value{kind: kObject}
		v.set("name", &value{kind: kString, s: c.Name})
		v.set(argsKey, args)
		return v
	}
	var b strings.Builder
	switch family {
	case FamilyGranite:
		list := &value{kind: kArray}
		for _, c := range calls {
			list.items = append(list.items, obj(c, "arguments"))
		}
		b.WriteString(graniteTag)
		list.encode(&b, true)
	case FamilyLlama3:
		for i, c := range calls {
			if i > 0 {
				b.WriteString("; ")
			}
			obj(c, "parameters").encode(&b, true)
		}
	default:
		for i, c := range calls {
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(tagOpen + "\n")
			obj(c, "arguments").encode(&b, true)
			b.WriteString("\n" + tagClose)
		}
	}
	return b.String()
}
