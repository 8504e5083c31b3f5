package chattemplate

import (
	"regexp"
	"strings"
	"sync"
)

// ThinkingSwitch is how a chat template lets the caller turn the model's
// thinking (a <think>…</think> block before the answer) on or off. The
// values are what a runtime line shows: `thinking=off (enable_thinking)`.
type ThinkingSwitch string

const (
	// ThinkingNone: the template offers no switch. Whether the model thinks
	// is up to the model; the prompt is the same at every level.
	ThinkingNone ThinkingSwitch = "none"
	// ThinkingEnableVar: the template reads enable_thinking (Qwen3, SmolLM3).
	// Set Input.EnableThinking. Qwen3 then ends the prompt with an empty
	// <think>\n\n</think>\n\n when false; SmolLM3 switches its "Reasoning
	// Mode" to /no_think and ends with <think>\n\n</think>\n.
	ThinkingEnableVar ThinkingSwitch = "enable_thinking"
	// ThinkingVar: the template reads thinking (Granite 3.x). Set
	// Input.EnableThinking. Granite-3.3's template uses it only to write its
	// default system message, so it changes nothing when the conversation
	// has a system prompt of its own.
	ThinkingVar ThinkingSwitch = "thinking"
	// ThinkingSoftSwitch: a Qwen3-style template without a variable (a
	// ChatML template that takes <think> blocks apart in history and does
	// not open one itself). Qwen3 models were trained to obey "/think" and
	// "/no_think" written at the end of a user message; the caller appends
	// them (SoftSwitch).
	ThinkingSoftSwitch ThinkingSwitch = "no_think"
)

// ThinkingSwitch reports how the template turns thinking on and off. When a
// template has several (SmolLM3 reads enable_thinking and also obeys
// /no_think in the system message), the variable wins.
func (t *Template) ThinkingSwitch() ThinkingSwitch { return t.thinking }

// SoftSwitch is the text to append to user messages for a template whose
// switch is ThinkingSoftSwitch: " /think" or " /no_think".
func SoftSwitch(on bool) string {
	if on {
		return " /think"
	}
	return " /no_think"
}

var (
	enableThinkingRef = sync.OnceValue(func() *regexp.Regexp { return nameRef("enable_thinking") })
	thinkingRef       = sync.OnceValue(func() *regexp.Regexp { return nameRef("thinking") })
	// thinkingAssigned: the template sets thinking itself (a local, not an
	// input), unless it only fills in a default.
	thinkingAssigned = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\bset\s+thinking\s*=|\bfor\s+(?:[A-Za-z_]\w*\s*,\s*)?thinking\s+in\b|[(,]\s*thinking\s*=[^=]`)
	})
	thinkingDefault = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\bthinking\s+is\s+(?:not\s+)?defined\b`) })
	// opensThink: the generation prompt starts the think block itself
	// (QwQ, Qwen3-Thinking-2507: '<|im_start|>assistant\n<think>\n'); such
	// models always think and know no soft switch.
	opensThink = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`assistant(?:\\n|\n)<think>(?:\\n|\n)?['"]`) })
)

// detectThinking decides a template's ThinkingSwitch from its source.
func detectThinking(source string) ThinkingSwitch {
	switch {
	case references(source, enableThinkingRef()):
		return ThinkingEnableVar
	case references(source, thinkingRef()) &&
		(!thinkingAssigned().MatchString(source) || thinkingDefault().MatchString(source)):
		return ThinkingVar
	case qwen3Style(source):
		return ThinkingSoftSwitch
	}
	return ThinkingNone
}

// qwen3Style recognises the Qwen3 hybrid-thinking chat format without its
// enable_thinking variable: ChatML, <think> blocks taken apart in
// assistant history (Qwen3 splits on '</think>' or reads
// reasoning_content, and tracks the last real user query), and no think
// block opened by the generation prompt. Qwen2.5 and other ChatML
// templates do not mention </think>; QwQ and Qwen3-Thinking open the block
// themselves.
func qwen3Style(s string) bool {
	return strings.Contains(s, "<|im_start|>") &&
		strings.Contains(s, "</think>") &&
		(strings.Contains(s, "reasoning_content") || strings.Contains(s, "last_query_index")) &&
		!opensThink().MatchString(s)
}
