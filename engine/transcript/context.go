package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/openclaw-edge/edge/engine"
)

// Prefixes and suffixes of the user messages that carry summaries, as pi
// writes them.
const (
	CompactionSummaryPrefix = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
	CompactionSummarySuffix = "\n</summary>"
	BranchSummaryPrefix     = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
	BranchSummarySuffix     = "</summary>"
	// MissingToolResult is the text of a synthetic result for a tool call
	// that has none.
	MissingToolResult = "No result provided"
)

// Context rebuilds the model context for the next turn from a transcript:
// the branch ending at the last entry, from the latest compaction on (its
// summary first), with transcript hygiene applied to tool calls. The
// messages own their content: editing them leaves entries unchanged.
func Context(entries []Entry) []engine.Message {
	items := ContextItems(entries)
	if items == nil {
		return nil
	}
	msgs := make([]engine.Message, len(items))
	for i := range items {
		msgs[i] = items[i].Message
	}
	return msgs
}

// ContextItem is one message of the model context and the id of the
// transcript entry it comes from ("" for a compaction summary and for a
// synthetic tool result): compaction names its first kept entry by it.
type ContextItem struct {
	Message engine.Message
	EntryID string
}

// ContextItems is Context with the entry id of every message.
func ContextItems(entries []Entry) []ContextItem {
	if len(entries) == 0 {
		return nil
	}
	path := pathIndex(entries, ActiveLeaf(entries))
	boundary := -1 // the latest reset or compaction on the path
	for i, j := range path {
		if t := entries[j].Type; t == EntryCompaction || t == EntryReset {
			boundary = i
		}
	}
	items := make([]ContextItem, 0, len(path)+1)
	if boundary < 0 {
		for _, j := range path {
			items = appendContext(items, &entries[j])
		}
		return hygiene(items)
	}
	c := &entries[path[boundary]]
	if c.Type == EntryCompaction {
		items = append(items, ContextItem{Message: summaryMessage(CompactionSummaryPrefix+c.Summary+CompactionSummarySuffix, c.Timestamp)})
	}
	kept := false
	for _, j := range path[:boundary] {
		e := &entries[j]
		if e.ID == c.FirstKeptEntryID {
			kept = true
		}
		if !kept {
			continue
		}
		// Before a reset only the conversation itself is kept (OpenClaw's
		// selectResetKeptEntries); hygiene drops the unpaired results.
		if c.Type == EntryReset && (e.Type != EntryMessage || e.Message == nil ||
			(e.Message.Role != engine.RoleUser && e.Message.Role != engine.RoleAssistant && e.Message.Role != engine.RoleToolResult)) {
			continue
		}
		items = appendContext(items, e)
	}
	for _, j := range path[boundary+1:] {
		items = appendContext(items, &entries[j])
	}
	return hygiene(items)
}

// appendContext appends what e contributes to the model context.
func appendContext(items []ContextItem, e *Entry) []ContextItem {
	switch e.Type {
	case EntryMessage:
		// A failed or stopped turn's assistant entry (the "⚠️ …" error
		// note, the note closing a turn a crash interrupted, a partial reply
		// cut by an error or /stop) is for the user to see, never for the
		// model: it would read our error text as its own words. pi skips
		// them the same way.
		if e.Message == nil || e.Message.Role == engine.RoleAssistant &&
			(e.Message.StopReason == engine.StopError || e.Message.StopReason == engine.StopAborted) {
			break
		}
		if e.excluded() {
			break
		}
		m := *e.Message
		m.Content = slices.Clone(m.Content)
		if m.Usage != nil {
			u := *m.Usage
			m.Usage = &u
		}
		switch m.Role {
		case engine.RoleUser, engine.RoleAssistant, engine.RoleToolResult:
		case RoleCustom:
			// OpenClaw's convertToLlm: a custom message is the user's.
			m = engine.Message{Role: engine.RoleUser, Content: m.Content, Timestamp: m.Timestamp}
		case RoleBashExecution:
			m = engine.Message{Role: engine.RoleUser, Content: []engine.Block{engine.TextBlock(bashText(e.rawMessage))}, Timestamp: m.Timestamp}
		default:
			return items
		}
		// A reply continued after the output limit ([continue] rounds
		// are custom entries, not in the context) is one message to
		// the model: its parts are joined.
		if n := len(items); n > 0 && m.Role == engine.RoleAssistant && continuable(&items[n-1].Message) {
			prev := &items[n-1].Message
			prev.Content = append(prev.Content, m.Content...)
			prev.StopReason, prev.Usage = m.StopReason, m.Usage
			break
		}
		items = append(items, ContextItem{Message: m, EntryID: e.ID})
	case EntryCustomMessage:
		blocks, err := contentBlocks(e.Content)
		if err == nil {
			items = append(items, ContextItem{Message: engine.Message{Role: engine.RoleUser, Content: blocks, Timestamp: millis(e.Timestamp)}, EntryID: e.ID})
		}
	case EntryBranchSummary:
		if e.Summary != "" {
			items = append(items, ContextItem{Message: summaryMessage(BranchSummaryPrefix+e.Summary+BranchSummarySuffix, e.Timestamp), EntryID: e.ID})
		}
	}
	return items
}

// excluded reports a message OpenClaw keeps out of the model context
// ("excludeFromContext": true, e.g. a command's own output).
func (e *Entry) excluded() bool {
	if !bytes.Contains(e.rawMessage, []byte(`"excludeFromContext"`)) {
		return false
	}
	var m struct {
		Exclude bool `json:"excludeFromContext"`
	}
	return json.Unmarshal(e.rawMessage, &m) == nil && m.Exclude
}

// bashText renders a bashExecution message as OpenClaw shows it to the
// model (bashExecutionToText).
func bashText(raw json.RawMessage) string {
	var m struct {
		Command        string `json:"command"`
		Output         string `json:"output"`
		Cancelled      bool   `json:"cancelled"`
		ExitCode       *int   `json:"exitCode"`
		Truncated      bool   `json:"truncated"`
		FullOutputPath string `json:"fullOutputPath"`
	}
	_ = json.Unmarshal(raw, &m) // decoded before; a field of another type reads as empty
	var b strings.Builder
	fmt.Fprintf(&b, "Ran `%s`\n", m.Command)
	if m.Output != "" {
		fmt.Fprintf(&b, "```\n%s\n```", m.Output)
	} else {
		b.WriteString("(no output)")
	}
	if m.Cancelled {
		b.WriteString("\n\n(command cancelled)")
	} else if m.ExitCode != nil && *m.ExitCode != 0 {
		fmt.Fprintf(&b, "\n\nCommand exited with code %d", *m.ExitCode)
	}
	if m.Truncated && m.FullOutputPath != "" {
		fmt.Fprintf(&b, "\n\n[Output truncated. Full output: %s]", m.FullOutputPath)
	}
	return b.String()
}

// continuable reports whether m is an assistant reply cut at the output
// limit without tool calls: the next assistant message continues it.
func continuable(m *engine.Message) bool {
	return m.Role == engine.RoleAssistant && m.StopReason == engine.StopLength && len(m.ToolCalls()) == 0
}

func summaryMessage(text, ts string) engine.Message {
	return engine.Message{Role: engine.RoleUser, Content: []engine.Block{engine.TextBlock(text)}, Timestamp: millis(ts)}
}

// contentBlocks reads custom_message content: a string or a block list.
func contentBlocks(raw json.RawMessage) ([]engine.Block, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New("missing")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []engine.Block{engine.TextBlock(s)}, nil
	}
	var blocks []engine.Block
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, errors.New("want a string or a list of content blocks")
	}
	return blocks, nil
}

// hygiene pairs tool calls with results: a call without a result gets a
// synthetic error result after the results that exist; a result that
// answers no pending call is dropped.
func hygiene(in []ContextItem) []ContextItem {
	if paired(in) {
		return in // the common case: nothing to repair, nothing to copy
	}
	out := make([]ContextItem, 0, len(in)+1)
	var pending []engine.ToolCall // calls of the latest assistant message still unanswered
	var ts int64
	flush := func() {
		for _, c := range pending {
			out = append(out, ContextItem{Message: engine.Message{
				Role:       engine.RoleToolResult,
				Content:    []engine.Block{engine.TextBlock(MissingToolResult)},
				ToolCallID: c.ID,
				ToolName:   c.Name,
				IsError:    true,
				Timestamp:  ts,
			}})
		}
		pending = nil
	}
	for _, it := range in {
		m := &it.Message
		switch m.Role {
		case engine.RoleToolResult:
			i := slices.IndexFunc(pending, func(c engine.ToolCall) bool { return c.ID == m.ToolCallID })
			if i < 0 {
				continue
			}
			pending = slices.Delete(pending, i, i+1)
			out = append(out, it)
		case engine.RoleAssistant:
			flush()
			out = append(out, it)
			pending = m.ToolCalls()
			ts = m.Timestamp
		default:
			flush()
			out = append(out, it)
		}
	}
	flush()
	return out
}

// paired reports whether every tool call in items is answered exactly
// once, right after its assistant message, and every result answers a call.
func paired(items []ContextItem) bool {
	var pending []string
	for i := range items {
		m := &items[i].Message
		switch m.Role {
		case engine.RoleToolResult:
			j := slices.Index(pending, m.ToolCallID)
			if j < 0 {
				return false
			}
			pending = slices.Delete(pending, j, j+1)
		default:
			if len(pending) > 0 {
				return false
			}
			if m.Role == engine.RoleAssistant {
				for _, b := range m.Content {
					if b.Type == engine.BlockToolCall {
						pending = append(pending, b.ID)
					}
				}
			}
		}
	}
	return len(pending) == 0
}

// millis converts a transcript timestamp to Unix milliseconds, 0 if it does
// not parse.
func millis(ts string) int64 {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return 0
	}
	return t.UnixMilli()
}
