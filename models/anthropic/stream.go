package anthropic

import (
	"context"
	"encoding/json"
	"io"
	"sort"
	"strings"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/sse"
)

// event is any stream event's data; only the fields of its Type are set.
type event struct {
	Type  string `json:"type"`
	Index int    `json:"index"`

	Message *struct { // message_start
		Usage usage `json:"usage"`
	} `json:"message"`

	ContentBlock *struct { // content_block_start
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Text  string          `json:"text"`
		Input json.RawMessage `json:"input"`
	} `json:"content_block"`

	Delta *struct { // content_block_delta, message_delta
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`

	Usage *usage `json:"usage"` // message_delta
}

type usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// merge takes the counts o reports; message_delta repeats some as zero.
func (u *usage) merge(o usage) {
	if o.InputTokens > 0 {
		u.InputTokens = o.InputTokens
	}
	if o.OutputTokens > 0 {
		u.OutputTokens = o.OutputTokens
	}
	if o.CacheCreationInputTokens > 0 {
		u.CacheCreationInputTokens = o.CacheCreationInputTokens
	}
	if o.CacheReadInputTokens > 0 {
		u.CacheReadInputTokens = o.CacheReadInputTokens
	}
}

func (u usage) engine() *engine.Usage {
	e := &engine.Usage{
		Input:      u.InputTokens,
		Output:     u.OutputTokens,
		CacheRead:  u.CacheReadInputTokens,
		CacheWrite: u.CacheCreationInputTokens,
	}
	e.TotalTokens = e.Input + e.Output + e.CacheRead + e.CacheWrite
	return e
}

// toolBlock assembles one tool_use block.
type toolBlock struct {
	index int
	id    string
	name  string
	input json.RawMessage // from content_block_start, used when no deltas come
	json  strings.Builder
	sent  bool
}

// decoder holds the state of one reply being read.
type decoder struct {
	emit   func(engine.Event)
	tools  map[int]*toolBlock
	usage  usage
	stop   string
	nCalls int
}

// readStream reads the event stream up to message_stop.
func (p *Provider) readStream(ctx context.Context, req *engine.ChatRequest, body io.Reader, emit func(engine.Event)) error {
	d := &decoder{emit: emit, tools: map[int]*toolBlock{}}
	r := sse.NewReader(body)
	for {
		ev, err := r.Next()
		if err != nil {
			return p.readError(ctx, req, err)
		}
		if ctx.Err() != nil {
			return p.readError(ctx, req, ctx.Err())
		}
		var e event
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			if ev.Type == "error" {
				kind, msg := classify(0, ev.Data)
				return p.fail(req, kind, 0, msg, nil)
			}
			return p.fail(req, engine.ErrUnreachable, 0, "malformed stream event: "+err.Error(), err)
		}
		if e.Type == "" {
			e.Type = ev.Type
		}
		switch e.Type {
		case "error":
			kind, msg := classify(0, ev.Data)
			return p.fail(req, kind, 0, msg, nil)
		case "message_stop":
			d.end()
			return nil
		default:
			d.event(&e)
		}
	}
}

// event applies one event: deltas are emitted at once, tool input
// collected until its block stops.
func (d *decoder) event(e *event) {
	switch e.Type {
	case "message_start":
		if e.Message != nil {
			d.usage.merge(e.Message.Usage)
		}
	case "content_block_start":
		cb := e.ContentBlock
		if cb == nil {
			return
		}
		switch cb.Type {
		case "tool_use": // not server_tool_use: the API runs those itself
			d.tools[e.Index] = &toolBlock{index: e.Index, id: cb.ID, name: cb.Name, input: cb.Input}
		case "text":
			if cb.Text != "" {
				d.emit(engine.Event{Type: engine.EventTextDelta, Text: cb.Text})
			}
		}
	case "content_block_delta":
		dl := e.Delta
		if dl == nil {
			return
		}
		switch dl.Type {
		case "text_delta":
			if dl.Text != "" {
				d.emit(engine.Event{Type: engine.EventTextDelta, Text: dl.Text})
			}
		case "thinking_delta":
			if dl.Thinking != "" {
				d.emit(engine.Event{Type: engine.EventThinkingDelta, Text: dl.Thinking})
			}
		case "input_json_delta":
			if tb := d.tools[e.Index]; tb != nil {
				tb.json.WriteString(dl.PartialJSON)
			}
		case "signature_delta":
			if dl.Signature != "" {
				d.emit(engine.Event{Type: engine.EventThinkingDelta, Signature: dl.Signature})
			}
		}
	case "content_block_stop":
		if tb := d.tools[e.Index]; tb != nil {
			d.emitCall(tb)
		}
	case "message_delta":
		if e.Delta != nil && e.Delta.StopReason != "" {
			d.stop = e.Delta.StopReason
		}
		if e.Usage != nil {
			d.usage.merge(*e.Usage)
		}
	}
	// ping and unknown events are ignored, as the API asks.
}

func (d *decoder) emitCall(tb *toolBlock) {
	if tb.sent {
		return
	}
	tb.sent = true
	d.nCalls++
	raw := tb.json.String()
	if strings.TrimSpace(raw) == "" && len(tb.input) > 0 && string(tb.input) != "null" {
		raw = string(tb.input)
	}
	tc := engine.ToolCall{ID: tb.id, Name: tb.name, Arguments: arguments(raw)}
	d.emit(engine.Event{Type: engine.EventToolCall, ToolCall: &tc})
}

// end emits tool calls whose block never stopped, then the message end.
func (d *decoder) end() {
	var open []*toolBlock
	for _, tb := range d.tools {
		if !tb.sent {
			open = append(open, tb)
		}
	}
	sort.Slice(open, func(i, j int) bool { return open[i].index < open[j].index })
	for _, tb := range open {
		d.emitCall(tb)
	}
	d.emit(engine.Event{
		Type:       engine.EventMessageEnd,
		StopReason: stopReason(d.stop, d.nCalls > 0),
		Usage:      d.usage.engine(),
	})
}

func stopReason(s string, hasCalls bool) engine.StopReason {
	switch s {
	case "end_turn", "stop_sequence", "pause_turn":
		return engine.StopEnd
	case "max_tokens", "model_context_window_exceeded":
		return engine.StopLength
	case "tool_use":
		return engine.StopToolUse
	case "refusal":
		return engine.StopError
	}
	if hasCalls {
		return engine.StopToolUse
	}
	return engine.StopEnd
}

// arguments returns the assembled input as JSON: as it is when valid, {}
// when empty, else a JSON string of the raw text for the tool layer to
// report.
func arguments(raw string) json.RawMessage {
	s := strings.TrimSpace(raw)
	if s == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(raw)
	return b
}
