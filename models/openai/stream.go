package openai

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"sort"
	"strings"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/sse"
)

// chunk is one streamed chat.completion.chunk, or a whole non-streamed
// chat.completion (Message instead of Delta).
type chunk struct {
	Choices []choice        `json:"choices"`
	Usage   *usage          `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type choice struct {
	Delta        *delta  `json:"delta"`
	Message      *delta  `json:"message"`
	FinishReason *string `json:"finish_reason"`
}

type delta struct {
	Content          *string         `json:"content"`
	ReasoningContent *string         `json:"reasoning_content"`
	Reasoning        *string         `json:"reasoning"`
	ToolCalls        []toolCallDelta `json:"tool_calls"`
}

type toolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (u *usage) engine() *engine.Usage {
	if u == nil {
		return &engine.Usage{}
	}
	cached := 0
	if u.PromptTokensDetails != nil {
		cached = min(max(u.PromptTokensDetails.CachedTokens, 0), u.PromptTokens)
	}
	total := u.TotalTokens
	if total == 0 {
		total = u.PromptTokens + u.CompletionTokens
	}
	return &engine.Usage{
		Input:       u.PromptTokens - cached,
		Output:      u.CompletionTokens,
		CacheRead:   cached,
		TotalTokens: total,
	}
}

// pendingCall assembles one tool call from its fragments.
type pendingCall struct {
	index int
	id    string
	name  string
	args  strings.Builder
}

// decoder holds the state of one reply being read.
type decoder struct {
	emit   func(engine.Event)
	calls  []*pendingCall
	finish string
	usage  *usage
}

// readStream reads an SSE body up to [DONE].
func (p *Provider) readStream(ctx context.Context, req *engine.ChatRequest, body io.Reader, emit func(engine.Event)) error {
	d := &decoder{emit: emit}
	r := sse.NewReader(body)
	for {
		ev, err := r.Next()
		if err != nil {
			return p.readError(ctx, req, err)
		}
		if ctx.Err() != nil {
			return p.readError(ctx, req, ctx.Err())
		}
		data := ev.Data
		if ev.Type == "error" {
			kind, msg := classify(0, data)
			return p.fail(req, kind, 0, msg, nil)
		}
		if string(data) == "[DONE]" {
			d.end()
			return nil
		}
		var c chunk
		if err := json.Unmarshal(data, &c); err != nil {
			return p.fail(req, engine.ErrUnreachable, 0, "malformed stream chunk: "+err.Error(), err)
		}
		if len(c.Error) > 0 && string(c.Error) != "null" {
			kind, msg := classify(0, data)
			return p.fail(req, kind, 0, msg, nil)
		}
		d.chunk(&c)
	}
}

// readCompletion reads a whole (non-streamed) completion, or an error sent
// with status 200.
func (p *Provider) readCompletion(ctx context.Context, req *engine.ChatRequest, body io.Reader, emit func(engine.Event)) error {
	b, err := io.ReadAll(io.LimitReader(body, 64<<20))
	if err != nil {
		return p.readError(ctx, req, err)
	}
	var c chunk
	if err := json.Unmarshal(b, &c); err != nil {
		return p.fail(req, engine.ErrUnreachable, 0, "malformed completion: "+err.Error(), err)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		kind, msg := classify(0, b)
		return p.fail(req, kind, 0, msg, nil)
	}
	if len(c.Choices) == 0 {
		return p.fail(req, engine.ErrUnreachable, 0, "completion has no choices", nil)
	}
	d := &decoder{emit: emit}
	d.chunk(&c)
	d.end()
	return nil
}

// chunk applies one chunk: deltas are emitted at once, tool call fragments
// collected.
func (d *decoder) chunk(c *chunk) {
	if c.Usage != nil {
		d.usage = c.Usage
	}
	if len(c.Choices) == 0 {
		return
	}
	ch := &c.Choices[0] // we never ask for n > 1
	dl := ch.Delta
	if dl == nil {
		dl = ch.Message
	}
	if dl != nil {
		switch {
		case dl.ReasoningContent != nil && *dl.ReasoningContent != "":
			d.emit(engine.Event{Type: engine.EventThinkingDelta, Text: *dl.ReasoningContent})
		case dl.Reasoning != nil && *dl.Reasoning != "":
			d.emit(engine.Event{Type: engine.EventThinkingDelta, Text: *dl.Reasoning})
		}
		if dl.Content != nil && *dl.Content != "" {
			d.emit(engine.Event{Type: engine.EventTextDelta, Text: *dl.Content})
		}
		for i := range dl.ToolCalls {
			d.toolFragment(&dl.ToolCalls[i])
		}
	}
	if ch.FinishReason != nil && *ch.FinishReason != "" {
		d.finish = *ch.FinishReason
	}
}

// toolFragment adds a fragment to its call. Fragments name their call by
// index; servers that omit it (or repeat one index) send each call whole,
// told apart by a new id.
func (d *decoder) toolFragment(f *toolCallDelta) {
	var pc *pendingCall
	if f.Index != nil {
		for i := len(d.calls) - 1; i >= 0; i-- {
			if c := d.calls[i]; c.index == *f.Index {
				if f.ID == "" || c.id == "" || f.ID == c.id {
					pc = c
				}
				break
			}
		}
	} else if n := len(d.calls); n > 0 && (f.ID == "" || f.ID == d.calls[n-1].id) {
		pc = d.calls[n-1]
	}
	if pc == nil {
		idx := len(d.calls)
		if f.Index != nil {
			idx = *f.Index
		}
		pc = &pendingCall{index: idx}
		d.calls = append(d.calls, pc)
	}
	if f.ID != "" {
		pc.id = f.ID
	}
	if f.Function.Name != "" {
		pc.name = f.Function.Name
	}
	if a := f.Function.Arguments; len(a) > 0 && string(a) != "null" {
		var s string
		if a[0] == '"' && json.Unmarshal(a, &s) == nil {
			pc.args.WriteString(s)
		} else {
			pc.args.Write(a) // an object instead of a string
		}
	}
}

// emitCalls emits the assembled tool calls in index order.
func (d *decoder) emitCalls() {
	sort.SliceStable(d.calls, func(i, j int) bool { return d.calls[i].index < d.calls[j].index })
	for _, c := range d.calls {
		id := c.id
		if id == "" {
			id = randomID()
		}
		tc := engine.ToolCall{ID: id, Name: c.name, Arguments: arguments(c.args.String())}
		d.emit(engine.Event{Type: engine.EventToolCall, ToolCall: &tc})
	}
}

// end emits pending tool calls and the message end.
func (d *decoder) end() {
	d.emitCalls()
	d.emit(engine.Event{
		Type:       engine.EventMessageEnd,
		StopReason: stopReason(d.finish, len(d.calls) > 0),
		Usage:      d.usage.engine(),
	})
}

func stopReason(finish string, hasCalls bool) engine.StopReason {
	switch finish {
	case "length":
		return engine.StopLength
	case "tool_calls", "function_call":
		return engine.StopToolUse
	case "content_filter":
		return engine.StopError
	}
	if hasCalls {
		return engine.StopToolUse // "stop" or nothing, with calls (older Ollama)
	}
	return engine.StopEnd
}

// arguments returns the assembled arguments as JSON: as they are when valid,
// {} when empty, else a JSON string of the raw text for the tool layer to
// report.
func arguments(raw string) json.RawMessage {
	s := strings.TrimSpace(raw)
	if s == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	return mustJSON(raw)
}

func randomID() string {
	var b [12]byte
	rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}
