// Package providertest is the conformance suite every remote model provider
// (models/anthropic, openai, gemini, ollama) runs, and the test helpers
// their own tests share: an event recorder, the failure check, a transport
// that answers with a fixed body, and the stream invariants the fuzz tests
// hold. Run drives a provider through its package's fake server, which
// speaks the provider's real wire format, so one set of cases states what a
// provider must do whatever its API: stream text, thoughts and tool calls,
// report usage, classify failures, stop when cancelled, and take back what
// it sent in a tool loop.
//
// A test binary that imports this package gets its -update flag (rewrite
// testdata/*.golden) and must not define one of its own.
package providertest

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// Recorder collects the events of one Stream call.
type Recorder struct{ Events []engine.Event }

// Emit is the emit callback to hand to Stream.
func (r *Recorder) Emit(e engine.Event) { r.Events = append(r.Events, e) }

// Joined is the text of all events of type t.
func (r *Recorder) Joined(t engine.EventType) string {
	var b strings.Builder
	for _, e := range r.Events {
		if e.Type == t {
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

// Count is the number of events of type t.
func (r *Recorder) Count(t engine.EventType) int {
	n := 0
	for _, e := range r.Events {
		if e.Type == t {
			n++
		}
	}
	return n
}

// Calls are the tool calls emitted, in order.
func (r *Recorder) Calls() []engine.ToolCall {
	var out []engine.ToolCall
	for _, e := range r.Events {
		if e.Type == engine.EventToolCall {
			out = append(out, *e.ToolCall)
		}
	}
	return out
}

// End checks the stream ended with exactly one message end and returns it.
func (r *Recorder) End(t *testing.T) engine.Event {
	t.Helper()
	if n := r.Count(engine.EventMessageEnd); n != 1 {
		t.Fatalf("%d message ends, want 1: %+v", n, r.Events)
	}
	last := r.Events[len(r.Events)-1]
	if last.Type != engine.EventMessageEnd {
		t.Fatalf("last event is %s, want message_end", last.Type)
	}
	return last
}

// Message assembles the assistant message the way engine/agent does:
// thinking deltas (with their last signature) make a thinking block, a
// thinking delta after text starts a new one, tool calls close both. The
// caller sets the message's API.
func (r *Recorder) Message() engine.Message {
	var blocks []engine.Block
	var text, thinking strings.Builder
	sig := ""
	flush := func() {
		if thinking.Len() > 0 {
			blocks = append(blocks, engine.Block{Type: engine.BlockThinking, Thinking: thinking.String(), ThinkingSignature: sig})
			thinking.Reset()
			sig = ""
		}
		if text.Len() > 0 {
			blocks = append(blocks, engine.TextBlock(text.String()))
			text.Reset()
		}
	}
	for _, e := range r.Events {
		switch e.Type {
		case engine.EventTextDelta:
			text.WriteString(e.Text)
		case engine.EventThinkingDelta:
			if text.Len() > 0 {
				flush()
			}
			thinking.WriteString(e.Text)
			if e.Signature != "" {
				sig = e.Signature
			}
		case engine.EventToolCall:
			flush()
			blocks = append(blocks, e.ToolCall.Block())
		}
	}
	flush()
	return engine.Message{Role: engine.RoleAssistant, Content: blocks}
}

// CheckError asserts err is a *engine.ModelError of kind and that no message
// end or tool call was emitted.
func CheckError(t *testing.T, err error, kind engine.ErrorKind, rec *Recorder) *engine.ModelError {
	t.Helper()
	var me *engine.ModelError
	if !errors.As(err, &me) {
		t.Fatalf("err = %v (%T), want *engine.ModelError", err, err)
	}
	if me.Kind != kind {
		t.Errorf("kind = %s, want %s (%v)", me.Kind, kind, me)
	}
	if engine.KindOf(err) != kind {
		t.Errorf("KindOf = %s", engine.KindOf(err))
	}
	if rec.Count(engine.EventMessageEnd) != 0 || rec.Count(engine.EventToolCall) != 0 {
		t.Errorf("events after a failure: %+v", rec.Events)
	}
	return me
}

// JSONOf is v as JSON, for messages.
func JSONOf(v any) string { b, _ := json.Marshal(v); return string(b) }

// RawTransport answers every request with one fixed body: for layouts the
// fake servers do not produce, written out by hand, and for fuzzing.
type RawTransport struct {
	Status      int    // default 200
	ContentType string // default text/event-stream
	Body        string
}

// RoundTrip implements http.RoundTripper.
func (rt RawTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	st := rt.Status
	if st == 0 {
		st = 200
	}
	ct := rt.ContentType
	if ct == "" {
		ct = "text/event-stream"
	}
	return &http.Response{
		StatusCode: st,
		Status:     fmt.Sprintf("%d %s", st, http.StatusText(st)),
		Header:     http.Header{"Content-Type": {ct}},
		Body:       io.NopCloser(strings.NewReader(rt.Body)),
		Request:    r,
	}, nil
}

// RoundTripFunc is a function as an http.RoundTripper, to look at requests
// on their way out.
type RoundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip implements http.RoundTripper.
func (f RoundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Invariants says what CheckInvariants holds beyond what every provider
// must: a *engine.ModelError and no message end on failure, else exactly one
// message end, last, with usage, and no tool call without arguments.
type Invariants struct {
	// CallIDs: every tool call has an id.
	CallIDs bool
	// ObjectArguments: tool call arguments are a JSON object.
	ObjectArguments bool
	// SaneUsage: no token count is negative.
	SaneUsage bool
}

// CheckInvariants checks what one Stream call returned and emitted, for
// fuzz tests that feed it arbitrary bytes.
func CheckInvariants(err error, events []engine.Event, inv Invariants) error {
	ends := 0
	for _, e := range events {
		if e.Type == engine.EventMessageEnd {
			ends++
		}
		if e.Type != engine.EventToolCall {
			continue
		}
		if e.ToolCall == nil || len(e.ToolCall.Arguments) == 0 {
			return fmt.Errorf("tool call event without arguments: %+v", e)
		}
		if inv.CallIDs && e.ToolCall.ID == "" {
			return fmt.Errorf("tool call event without id: %+v", e)
		}
		var obj map[string]any
		if inv.ObjectArguments && json.Unmarshal(e.ToolCall.Arguments, &obj) != nil {
			return fmt.Errorf("tool call arguments not an object: %s", e.ToolCall.Arguments)
		}
	}
	if err != nil {
		var me *engine.ModelError
		if !errors.As(err, &me) {
			return fmt.Errorf("error %v is %T, not *engine.ModelError", err, err)
		}
		if ends != 0 {
			return fmt.Errorf("error %v after a message end", err)
		}
		return nil
	}
	if ends != 1 || events[len(events)-1].Type != engine.EventMessageEnd {
		return fmt.Errorf("nil error with %d message ends: %+v", ends, events)
	}
	u := events[len(events)-1].Usage
	if u == nil {
		return fmt.Errorf("message end without usage")
	}
	if inv.SaneUsage && (u.Input < 0 || u.Output < 0 || u.CacheRead < 0) {
		return fmt.Errorf("message end without sane usage: %+v", u)
	}
	return nil
}

// CheckStream streams req through p, for a fuzz test whose p answers with
// the fuzzed bytes, and fails t when what came back breaks the invariants.
func CheckStream(t *testing.T, p Streamer, req *engine.ChatRequest, inv Invariants) {
	t.Helper()
	var rec Recorder
	err := p.Stream(context.Background(), req, rec.Emit)
	if err := CheckInvariants(err, rec.Events, inv); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkStream measures p parsing its reply to req, size bytes long.
func BenchmarkStream(b *testing.B, p Streamer, req *engine.ChatRequest, size int) {
	n := 0
	emit := func(engine.Event) { n++ }
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Stream(context.Background(), req, emit); err != nil {
			b.Fatal(err)
		}
	}
}

// Do sends a request with body to a fake server and returns the status and
// body of its answer; header holds name, value pairs.
func Do(t *testing.T, method, url, body string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer to %s %s: %v", method, url, err)
	}
	return resp.StatusCode, string(b)
}
