package ollama

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"

	"github.com/ollama/ollama/api"

	"github.com/openclaw-edge/edge/engine"
)

// decoder holds the state of one reply being read.
type decoder struct {
	emit   func(engine.Event)
	calls  []engine.ToolCall
	done   bool
	reason string
	usage  engine.Usage
}

// chunk applies one NDJSON line: deltas are emitted at once, tool calls
// (whole in Ollama's stream) collected. Lines after done are ignored.
func (d *decoder) chunk(r *api.ChatResponse) {
	if d.done {
		return
	}
	if r.Message.Thinking != "" {
		d.emit(engine.Event{Type: engine.EventThinkingDelta, Text: r.Message.Thinking})
	}
	if r.Message.Content != "" {
		d.emit(engine.Event{Type: engine.EventTextDelta, Text: r.Message.Content})
	}
	for _, c := range r.Message.ToolCalls {
		id := c.ID
		if id == "" {
			id = randomID()
		}
		args, err := json.Marshal(c.Function.Arguments)
		if err != nil || len(args) == 0 || string(args) == "null" {
			args = []byte("{}")
		}
		d.calls = append(d.calls, engine.ToolCall{ID: id, Name: c.Function.Name, Arguments: args})
	}
	if r.Done {
		d.done = true
		d.reason = r.DoneReason
		in, out := max(r.PromptEvalCount, 0), max(r.EvalCount, 0)
		d.usage = engine.Usage{Input: in, Output: out, TotalTokens: in + out}
	}
}

// end emits the tool calls and the message end.
func (d *decoder) end() {
	for i := range d.calls {
		d.emit(engine.Event{Type: engine.EventToolCall, ToolCall: &d.calls[i]})
	}
	usage := d.usage
	d.emit(engine.Event{Type: engine.EventMessageEnd, StopReason: stopReason(d.reason, len(d.calls) > 0), Usage: &usage})
}

func stopReason(reason string, hasCalls bool) engine.StopReason {
	switch {
	case hasCalls:
		return engine.StopToolUse
	case reason == "length":
		return engine.StopLength
	}
	return engine.StopEnd
}

func randomID() string {
	var b [12]byte
	rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}
