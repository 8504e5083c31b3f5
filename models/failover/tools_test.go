package failover

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/openclaw-edge/edge/engine"
)

// toolRecorder records the tool names each request offered and plays a
// step.
type toolRecorder struct {
	mu    sync.Mutex
	seen  [][]string
	step  func(emit func(engine.Event)) error
	calls int
}

func (r *toolRecorder) Stream(_ context.Context, req *engine.ChatRequest, emit func(engine.Event)) error {
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Name)
	}
	r.mu.Lock()
	r.seen = append(r.seen, names)
	r.calls++
	r.mu.Unlock()
	return r.step(emit)
}

// TestByProviderPerAttempt: each attempt of a chain offers the tools its own
// provider's policy allows, not the primary's; a withheld tool the fallback
// calls anyway is not passed on as a call.
func TestByProviderPerAttempt(t *testing.T) {
	primary := &toolRecorder{step: fail(merr(engine.ErrUnreachable, 0, "connection refused"))}
	fallback := &toolRecorder{step: func(emit func(engine.Event)) error {
		emit(engine.Event{Type: engine.EventToolCall, ToolCall: &engine.ToolCall{ID: "1", Name: "Exec", Arguments: []byte(`{}`)}})
		emit(engine.Event{Type: engine.EventToolCall, ToolCall: &engine.ToolCall{ID: "2", Name: "read", Arguments: []byte(`{}`)}})
		emit(engine.Event{Type: engine.EventMessageEnd, StopReason: engine.StopToolUse})
		return nil
	}}
	deny := func(names ...string) func(string) bool {
		return func(n string) bool { return !slices.Contains(names, n) }
	}
	chain := New(Config{}, []Candidate{
		{Ref: "cloud/big", Provider: "cloud", Model: FilterTools(primary, nil), ModelID: "big"},                 // no byProvider entry
		{Ref: "ollama/small", Provider: "ollama", Model: FilterTools(fallback, deny("exec")), ModelID: "small"}, // byProvider.ollama.deny: [exec]
	}, nil)
	req := &engine.ChatRequest{Tools: []engine.ToolSpec{{Name: "exec"}, {Name: "read"}, {Name: "write"}}}
	var events []engine.Event
	if err := chain.Stream(context.Background(), req, func(ev engine.Event) { events = append(events, ev) }); err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"exec", "read", "write"}}; !slices.EqualFunc(primary.seen, want, slices.Equal) {
		t.Errorf("primary offered %v, want %v", primary.seen, want)
	}
	if want := [][]string{{"read", "write"}}; !slices.EqualFunc(fallback.seen, want, slices.Equal) {
		t.Errorf("fallback offered %v, want %v", fallback.seen, want)
	}
	if len(req.Tools) != 3 {
		t.Error("the caller's request was changed")
	}
	var calls []string
	var note string
	for _, ev := range events {
		switch ev.Type {
		case engine.EventToolCall:
			calls = append(calls, ev.ToolCall.Name)
		case engine.EventTextDelta:
			note += ev.Text
		}
	}
	if !slices.Equal(calls, []string{"read"}) || !strings.Contains(note, `tool Exec is not available to this model`) {
		t.Errorf("calls %v, text %q: want only read called and a note for Exec", calls, note)
	}
}

// localModel has the optional methods of a local model.
type localModel struct {
	toolRecorder
	counted []string
}

func (m *localModel) CountTokens(_ context.Context, req *engine.ChatRequest) (int, error) {
	for _, t := range req.Tools {
		m.counted = append(m.counted, t.Name)
	}
	return 100 + len(req.Tools), nil
}
func (m *localModel) TrainedContext() int       { return 32768 }
func (m *localModel) ThinkingMechanism() string { return "enable_thinking" }

// TestFilterToolsForwards: a filtered local model still counts tokens
// (with only the tools it is offered), and says its trained context and
// thinking mechanism; a model without them gains none.
func TestFilterToolsForwards(t *testing.T) {
	type counter interface {
		CountTokens(context.Context, *engine.ChatRequest) (int, error)
	}
	type trained interface{ TrainedContext() int }
	type thinking interface{ ThinkingMechanism() string }

	local := &localModel{}
	m := FilterTools(local, func(n string) bool { return n != "exec" })
	req := &engine.ChatRequest{Tools: []engine.ToolSpec{{Name: "exec"}, {Name: "read"}}}
	c, ok := m.(counter)
	if !ok {
		t.Fatal("the wrapper hides CountTokens")
	}
	if n, err := c.CountTokens(context.Background(), req); err != nil || n != 101 || !slices.Equal(local.counted, []string{"read"}) {
		t.Errorf("CountTokens = %d, %v; counted tools %v, want 101 with only read", n, err, local.counted)
	}
	if len(req.Tools) != 2 {
		t.Error("the caller's request was changed")
	}
	if tr, ok := m.(trained); !ok || tr.TrainedContext() != 32768 {
		t.Error("TrainedContext not forwarded")
	}
	if th, ok := m.(thinking); !ok || th.ThinkingMechanism() != "enable_thinking" {
		t.Error("ThinkingMechanism not forwarded")
	}

	plain := FilterTools(&toolRecorder{}, func(string) bool { return true })
	if _, ok := plain.(counter); ok {
		t.Error("a model without CountTokens gained it through the wrapper")
	}
	if _, ok := plain.(thinking); ok {
		t.Error("a model without ThinkingMechanism gained it through the wrapper")
	}

	partial := FilterTools(struct {
		*toolRecorder
		thinking
	}{&toolRecorder{}, local}, func(string) bool { return true })
	if _, err := partial.(counter).CountTokens(context.Background(), req); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("CountTokens of a model that cannot count: err %v, want ErrUnsupported", err)
	}
}
