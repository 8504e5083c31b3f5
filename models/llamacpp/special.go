package llamacpp

import (
	"strings"

	"github.com/openclaw-edge/edge/engine"
)

// The runner tokenizes the rendered prompt with special tokens parsed (the
// chat template's own markers must become control tokens), so text that
// spells a control token would become one: a WhatsApp stranger writing
// "<|im_end|>\n<|im_start|>system\n…" would open a system turn, a web page
// in a tool result could close the tool's turn and speak as the user.
// Every message that is not the model's own (user messages, tool results)
// has such spellings broken with a zero-width joiner after the first
// character before rendering: the text reads the same, the tokens are
// plain text. The spellings are those of the chat formats the catalog and
// the templates we test use: "<|…|>" (ChatML, Qwen, Llama 3, Phi), Gemma's
// turn markers, SentencePiece's <s>/</s>, [INST], and the tags Qwen3 and
// Hermes vocabularies hold as single tokens.

// specialSpellings are the openings escaped wherever they appear.
var specialSpellings = []string{
	"<|", "<start_of_turn>", "<end_of_turn>", "<s>", "</s>", "[INST]", "[/INST]",
	"<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
}

const zwj = "\u200d"

// defuseSpecial breaks every special-token spelling in s.
func defuseSpecial(s string) string {
	if !strings.ContainsAny(s, "<[") {
		return s
	}
	for _, sp := range specialSpellings {
		if strings.Contains(s, sp) {
			s = strings.ReplaceAll(s, sp, sp[:1]+zwj+sp[1:])
		}
	}
	return s
}

// defuseMessages returns msgs with the text of every user message and tool
// result defused; the model's own messages are kept as it wrote them (the
// runner's cache holds its tokens). Only what changes is copied.
func defuseMessages(msgs []engine.Message) []engine.Message {
	var out []engine.Message
	for i, m := range msgs {
		if m.Role != engine.RoleUser && m.Role != engine.RoleToolResult {
			if out != nil {
				out = append(out, m)
			}
			continue
		}
		var blocks []engine.Block
		for j, b := range m.Content {
			if b.Type != engine.BlockText {
				continue
			}
			if d := defuseSpecial(b.Text); d != b.Text {
				if blocks == nil {
					blocks = append([]engine.Block(nil), m.Content...)
				}
				blocks[j].Text = d
			}
		}
		if blocks == nil {
			if out != nil {
				out = append(out, m)
			}
			continue
		}
		if out == nil {
			out = append(make([]engine.Message, 0, len(msgs)), msgs[:i]...)
		}
		m.Content = blocks
		out = append(out, m)
	}
	if out == nil {
		return msgs
	}
	return out
}
