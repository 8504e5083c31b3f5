package gemini

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/sse"
)

// response is one GenerateContentResponse: a streamed chunk, or an error.
type response struct {
	Candidates     []candidate     `json:"candidates"`
	PromptFeedback *promptFeedback `json:"promptFeedback"`
	UsageMetadata  *usageMetadata  `json:"usageMetadata"`
	ResponseID     string          `json:"responseId"`
	Error          json.RawMessage `json:"error"`
}

type candidate struct {
	Content      *content `json:"content"`
	FinishReason string   `json:"finishReason"`
}

type promptFeedback struct {
	BlockReason string `json:"blockReason"`
}

type usageMetadata struct {
	PromptTokenCount        int `json:"promptTokenCount"`
	CandidatesTokenCount    int `json:"candidatesTokenCount"`
	CachedContentTokenCount int `json:"cachedContentTokenCount"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount"`
	ToolUsePromptTokenCount int `json:"toolUsePromptTokenCount"`
	TotalTokenCount         int `json:"totalTokenCount"`
}

func (u *usageMetadata) engine() *engine.Usage {
	if u == nil {
		return &engine.Usage{}
	}
	prompt := max(u.PromptTokenCount, 0) + max(u.ToolUsePromptTokenCount, 0)
	cached := min(max(u.CachedContentTokenCount, 0), prompt)
	out := max(u.CandidatesTokenCount, 0) + max(u.ThoughtsTokenCount, 0)
	total := u.TotalTokenCount
	if total <= 0 {
		total = prompt + out
	}
	return &engine.Usage{Input: prompt - cached, CacheRead: cached, Output: out, TotalTokens: total}
}

// decoder holds the state of one reply being read.
type decoder struct {
	emit func(engine.Event)
	// textAfterThinking: text went out since the last thinking delta, so
	// a signature-only thinking delta would start a new, empty block.
	textAfterThinking bool
	calls             []engine.ToolCall
	idStem            string
	finish            string
	blocked           string
	usage             *usageMetadata
}

// readStream reads an SSE body to its end: Gemini sends no end marker, the
// chunk with a finishReason is the last one that matters.
func (p *Provider) readStream(ctx context.Context, req *engine.ChatRequest, body io.Reader, emit func(engine.Event)) error {
	d := &decoder{emit: emit}
	r := sse.NewReader(body)
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return p.readError(ctx, req, err)
		}
		if ctx.Err() != nil {
			return p.readError(ctx, req, ctx.Err())
		}
		if err := p.chunk(req, d, ev.Data); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return p.readError(ctx, req, ctx.Err())
	}
	return p.finish(req, d)
}

// readJSON reads a 200 JSON body: streamGenerateContent without alt=sse
// (a proxy that drops the query) answers an array of chunks, and
// generateContent one.
func (p *Provider) readJSON(ctx context.Context, req *engine.ChatRequest, body io.Reader, emit func(engine.Event)) error {
	b, err := io.ReadAll(io.LimitReader(body, 64<<20))
	if err != nil {
		return p.readError(ctx, req, err)
	}
	var chunks []json.RawMessage
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '[' {
		if err := json.Unmarshal(t, &chunks); err != nil {
			return p.fail(req, engine.ErrUnreachable, 0, "malformed response: "+err.Error(), err)
		}
	} else {
		chunks = []json.RawMessage{b}
	}
	d := &decoder{emit: emit}
	for _, c := range chunks {
		if err := p.chunk(req, d, c); err != nil {
			return err
		}
	}
	return p.finish(req, d)
}

// chunk applies one GenerateContentResponse, or fails on an error chunk.
func (p *Provider) chunk(req *engine.ChatRequest, d *decoder, data []byte) error {
	var r response
	if err := json.Unmarshal(data, &r); err != nil {
		return p.fail(req, engine.ErrUnreachable, 0, "malformed stream chunk: "+err.Error(), err)
	}
	if len(r.Error) > 0 && string(r.Error) != "null" {
		kind, msg := classify(0, data, hasImages(req))
		return p.fail(req, kind, 0, msg, nil)
	}
	d.apply(&r)
	return nil
}

// finish ends a reply that ran to its end: a finish reason (or a blocked
// prompt) must have arrived, else the stream was cut.
func (p *Provider) finish(req *engine.ChatRequest, d *decoder) error {
	if d.finish == "" && d.blocked == "" {
		return p.fail(req, engine.ErrUnreachable, 0, "stream ended early", nil)
	}
	d.end()
	return nil
}

// apply emits the deltas of one chunk and collects its calls.
func (d *decoder) apply(r *response) {
	if r.UsageMetadata != nil {
		d.usage = r.UsageMetadata
	}
	if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
		d.blocked = r.PromptFeedback.BlockReason
	}
	if d.idStem == "" && r.ResponseID != "" {
		d.idStem = idStem(r.ResponseID)
	}
	if len(r.Candidates) == 0 {
		return
	}
	c := &r.Candidates[0] // we never ask for more
	if c.Content != nil {
		for i := range c.Content.Parts {
			d.part(&c.Content.Parts[i])
		}
	}
	if c.FinishReason != "" {
		d.finish = c.FinishReason
	}
}

func (d *decoder) part(pt *part) {
	if pt.Thought {
		if pt.Text != "" || pt.ThoughtSignature != "" {
			d.emit(engine.Event{Type: engine.EventThinkingDelta, Text: pt.Text, Signature: pt.ThoughtSignature})
			d.textAfterThinking = false
		}
		return
	}
	if pt.ThoughtSignature != "" && !d.textAfterThinking {
		// The signature of the thinking before this part.
		d.emit(engine.Event{Type: engine.EventThinkingDelta, Signature: pt.ThoughtSignature})
	}
	if pt.Text != "" {
		d.emit(engine.Event{Type: engine.EventTextDelta, Text: pt.Text})
		d.textAfterThinking = true
	}
	if fc := pt.FunctionCall; fc != nil {
		id := fc.ID
		if id == "" {
			if d.idStem == "" {
				d.idStem = idStem("")
			}
			id = fmt.Sprintf("call_%s_%d", d.idStem, len(d.calls)+1)
		}
		d.calls = append(d.calls, engine.ToolCall{ID: id, Name: fc.Name, Arguments: objectArgs(fc.Args)})
	}
}

// end emits the tool calls and the message end.
func (d *decoder) end() {
	for i := range d.calls {
		d.emit(engine.Event{Type: engine.EventToolCall, ToolCall: &d.calls[i]})
	}
	d.emit(engine.Event{Type: engine.EventMessageEnd, StopReason: d.stopReason(), Usage: d.usage.engine()})
}

func (d *decoder) stopReason() engine.StopReason {
	switch {
	case d.blocked != "":
		return engine.StopError
	case d.finish == "MAX_TOKENS":
		return engine.StopLength
	case len(d.calls) > 0:
		return engine.StopToolUse
	case d.finish == "STOP" || d.finish == "FINISH_REASON_UNSPECIFIED":
		return engine.StopEnd
	}
	return engine.StopError // SAFETY, RECITATION, MALFORMED_FUNCTION_CALL…
}

// idStem makes the response id usable in a tool call id
// (^[a-zA-Z0-9_-]+$), or a random one when there is none.
func idStem(responseID string) string {
	s := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return -1
	}, responseID)
	if len(s) > 40 {
		s = s[:40]
	}
	if s == "" {
		var b [6]byte
		rand.Read(b[:])
		s = hex.EncodeToString(b[:])
	}
	return s
}
