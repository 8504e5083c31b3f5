package toolcall

import "strings"

// Family is a tool-call dialect: how a model writes a call in its output.
type Family int

// Tool-call dialects.
const (
	// FamilyNone: the chat template shows no dialect of its own. Such models
	// get ToolsSystemPrompt and answer in the Hermes form, so Parse treats
	// FamilyNone exactly like FamilyHermes.
	FamilyNone Family = iota
	// FamilyHermes: <tool_call>{"name": …, "arguments": {…}}</tool_call>
	// (Qwen2.5, Qwen3, Hermes, SmolLM3, ChatML tool templates).
	FamilyHermes
	// FamilyLlama3: a bare JSON object {"name": …, "parameters": {…}} as the
	// whole reply, or after <|python_tag|> (Llama 3.1/3.2).
	FamilyLlama3
	// FamilyGranite: <|tool_call|>[{"name": …, "arguments": {…}}, …]
	// (Granite 3.x).
	FamilyGranite
)

func (f Family) String() string {
	switch f {
	case FamilyHermes:
		return "hermes"
	case FamilyLlama3:
		return "llama3"
	case FamilyGranite:
		return "granite"
	}
	return "none"
}

// DetectFamily guesses the dialect from a chat template's source by the
// markers it teaches the model. A ChatML template without tool markers
// (<|im_start|>) is FamilyHermes: ChatML instruct models are tuned on the
// Hermes form, which is also what ToolsSystemPrompt asks for.
func DetectFamily(templateSource string) Family {
	s := templateSource
	switch {
	case strings.Contains(s, "<|tool_call|>"):
		return FamilyGranite
	case strings.Contains(s, "<tool_call>"):
		return FamilyHermes
	case strings.Contains(s, "<|python_tag|>"),
		strings.Contains(s, "<|start_header_id|>") && strings.Contains(s, `"parameters"`):
		return FamilyLlama3
	case strings.Contains(s, "<|im_start|>"):
		return FamilyHermes
	}
	return FamilyNone
}
