package command

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/openclaw-edge/edge/engine/prompt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
)

// Lengths of the summaries in progress lines and history.
const (
	maxArgsLine  = 120 // a whole "{key: value, …}" summary
	maxArgValue  = 40  // one value in it
	maxPreview   = 80  // a tool result's first line
	maxEntryText = 500 // one history line's text
)

// toolCallLine renders a tool call as a progress line: "→ write {path: notes.md}".
func toolCallLine(t *api.Tool) string {
	name := oneLine(t.Name)
	if args := summarizeArgs(t.Arguments); args != "" {
		return "→ " + name + " " + args
	}
	return "→ " + name
}

// toolResultLine renders a tool result: "✓ write", "✗ exec: denied".
func toolResultLine(t *api.Tool) string {
	name := oneLine(t.Name)
	if !t.IsError {
		return "✓ " + name
	}
	if p := firstLine(t.Preview); p != "" {
		return "✗ " + name + ": " + clip(p, maxPreview)
	}
	return "✗ " + name
}

// summarizeArgs renders tool arguments in a short, readable form keeping
// the keys' order: {path: notes.md, content: Dear diary↵today…}. Values are
// clipped; anything that is not a JSON object is shown compacted.
func summarizeArgs(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" || string(raw) == "{}" {
		return ""
	}
	fallback := func() string { return clip(oneLine(compact(raw)), maxArgsLine) }
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fallback()
	}
	var parts []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fallback()
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return fallback()
		}
		parts = append(parts, oneLine(key)+": "+summarizeValue(val))
	}
	return clip("{"+strings.Join(parts, ", ")+"}", maxArgsLine)
}

func summarizeValue(v json.RawMessage) string {
	var s string
	if len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &s) == nil {
		return clip(oneLine(s), maxArgValue)
	}
	return clip(oneLine(compact(v)), maxArgValue)
}

func compact(raw []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// clip shortens s to at most n characters, marking the cut with "…".
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}

// oneLine puts s on one line, showing line breaks as "↵".
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.ReplaceAll(s, "\n", "↵")
}

// firstLine returns the first non-blank line of s, trimmed.
func firstLine(s string) string {
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// relTime renders t relative to now: "just now", "5m ago", "3h ago",
// "2d ago", or the date when it is older than 30 days.
func relTime(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	case d < 30*24*time.Hour:
		return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
	}
	return t.Local().Format("2006-01-02")
}

// shortID is the first 8 characters of a session id, as tables show it.
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:@%+=,-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// transcriptEntry holds the fields of an OpenClaw transcript entry that
// history shows. Content may be a string or content blocks in OpenClaw's
// files, so it stays raw here.
type transcriptEntry struct {
	Type    string `json:"type"`
	Message *struct {
		Role         string          `json:"role"`
		Content      json.RawMessage `json:"content"`
		ToolName     string          `json:"toolName"`
		IsError      bool            `json:"isError"`
		ErrorMessage string          `json:"errorMessage"`
	} `json:"message"`
	CustomType   string          `json:"customType"`
	Content      json.RawMessage `json:"content"`
	Summary      string          `json:"summary"`
	TokensBefore int             `json:"tokensBefore"`
}

// blocks decodes message content: a plain string or content blocks.
func blocks(raw json.RawMessage) []engine.Block {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []engine.Block{engine.TextBlock(s)}
	}
	var bs []engine.Block
	if json.Unmarshal(raw, &bs) != nil {
		return nil
	}
	return bs
}

// blocksText joins the text blocks and marks images.
func blocksText(bs []engine.Block) string {
	var parts []string
	for _, b := range bs {
		switch b.Type {
		case engine.BlockText:
			if t := oneLine(b.Text); t != "" {
				parts = append(parts, t)
			}
		case engine.BlockImage:
			parts = append(parts, "[image]")
		}
	}
	return clip(strings.Join(parts, " "), maxEntryText)
}

// historyLine renders one transcript entry as "role: text", with tool calls
// and results summarised. It never fails: an entry it cannot read shows
// as "?: <raw>".
func historyLine(raw json.RawMessage) string {
	// oneLine again: names (roles, tools, types) come from outside too.
	return oneLine(historyText(raw))
}

func historyText(raw json.RawMessage) string {
	var e transcriptEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		return "?: " + clip(oneLine(string(raw)), maxPreview)
	}
	switch e.Type {
	case "message":
		if e.Message == nil {
			return "message: (empty)"
		}
		m := e.Message
		bs := blocks(m.Content)
		switch m.Role {
		case string(engine.RoleAssistant):
			parts := []string{}
			if t := blocksText(bs); t != "" {
				parts = append(parts, t)
			}
			for _, b := range bs {
				if b.Type == engine.BlockToolCall {
					parts = append(parts, toolCallLine(&api.Tool{Name: b.Name, Arguments: b.Arguments}))
				}
			}
			if m.ErrorMessage != "" {
				parts = append(parts, "(error: "+clip(oneLine(m.ErrorMessage), maxPreview)+")")
			}
			if len(parts) == 0 {
				parts = append(parts, "(empty)")
			}
			return "assistant: " + strings.Join(parts, " ")
		case string(engine.RoleToolResult):
			mark := "✓"
			if m.IsError {
				mark = "✗"
			}
			line := "tool: " + mark + " " + m.ToolName
			if p := firstLine(textOf(bs)); p != "" {
				line += ": " + clip(p, maxPreview)
			}
			return line
		}
		if m.Role == string(engine.RoleUser) {
			// The gateway's metadata envelope is for the model, not for people.
			for i := range bs {
				if bs[i].Type == engine.BlockText {
					bs[i].Text = prompt.StripInbound(bs[i].Text)
				}
			}
		}
		return m.Role + ": " + blocksText(bs)
	case "custom_message":
		name := e.CustomType
		if name == "" {
			name = "custom_message"
		}
		return name + ": " + blocksText(blocks(e.Content))
	case "compaction":
		return fmt.Sprintf("compaction: %s (%d tokens before)", clip(oneLine(e.Summary), maxEntryText), e.TokensBefore)
	case "branch_summary":
		return "branch summary: " + clip(oneLine(e.Summary), maxEntryText)
	case "custom":
		return "custom: " + e.CustomType
	case "":
		return "?: " + clip(oneLine(string(raw)), maxPreview)
	}
	return e.Type
}

func textOf(bs []engine.Block) string {
	var b strings.Builder
	for _, x := range bs {
		if x.Type == engine.BlockText {
			b.WriteString(x.Text)
		}
	}
	return b.String()
}
