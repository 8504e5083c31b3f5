package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/openclaw-edge/edge/engine"
)

// scripted is a Model that plays one step per call.
type scripted struct {
	mu    sync.Mutex
	steps []func(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error
	reqs  []*engine.ChatRequest
}

func (s *scripted) Stream(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error {
	s.mu.Lock()
	i := len(s.reqs)
	cp := *req
	cp.Messages = append([]engine.Message(nil), req.Messages...)
	s.reqs = append(s.reqs, &cp)
	s.mu.Unlock()
	if i >= len(s.steps) {
		return errors.New("script exhausted")
	}
	return s.steps[i](ctx, req, emit)
}

func say(text string, stop engine.StopReason) func(context.Context, *engine.ChatRequest, func(engine.Event)) error {
	return func(_ context.Context, _ *engine.ChatRequest, emit func(engine.Event)) error {
		for _, w := range strings.SplitAfter(text, " ") {
			emit(engine.Event{Type: engine.EventTextDelta, Text: w})
		}
		emit(engine.Event{Type: engine.EventMessageEnd, StopReason: stop, Usage: &engine.Usage{Input: 10, Output: 5, TotalTokens: 15}})
		return nil
	}
}

func callTools(calls ...engine.ToolCall) func(context.Context, *engine.ChatRequest, func(engine.Event)) error {
	return func(_ context.Context, _ *engine.ChatRequest, emit func(engine.Event)) error {
		for _, c := range calls {
			emit(engine.Event{Type: engine.EventToolCall, ToolCall: &c})
		}
		emit(engine.Event{Type: engine.EventMessageEnd, StopReason: engine.StopToolUse, Usage: &engine.Usage{Input: 7, Output: 3, TotalTokens: 10}})
		return nil
	}
}

// tools is a Toolset with function fields.
type tools struct {
	specs []engine.ToolSpec
	run   func(ctx context.Context, c engine.ToolCall) engine.ToolResult
}

func (t tools) Specs() []engine.ToolSpec { return t.specs }
func (t tools) Run(ctx context.Context, c engine.ToolCall) engine.ToolResult {
	return t.run(ctx, c)
}

func echoTools() tools {
	return tools{
		specs: []engine.ToolSpec{{Name: "echo", Description: "echo", Parameters: json.RawMessage(`{"type":"object"}`)}},
		run: func(_ context.Context, c engine.ToolCall) engine.ToolResult {
			return engine.TextResult("ran " + c.Name + " " + string(c.Arguments))
		},
	}
}

func roles(msgs []engine.Message) string {
	var b []string
	for _, m := range msgs {
		s := string(m.Role)
		if m.Role == engine.RoleAssistant {
			s += "(" + string(m.StopReason) + ")"
		}
		b = append(b, s)
	}
	return strings.Join(b, " ")
}

func TestLoop(t *testing.T) {
	call := func(id string) engine.ToolCall {
		return engine.ToolCall{ID: id, Name: "echo", Arguments: json.RawMessage(`{"n":"` + id + `"}`)}
	}
	tests := []struct {
		name      string
		steps     []func(context.Context, *engine.ChatRequest, func(engine.Event)) error
		cfg       Config
		wantRoles string
		wantText  string
		wantErr   error
		wantCalls int
	}{
		{
			name:      "text only",
			steps:     []func(context.Context, *engine.ChatRequest, func(engine.Event)) error{say("hello there", engine.StopEnd)},
			wantRoles: "assistant(stop)",
			wantText:  "hello there",
			wantCalls: 1,
		},
		{
			name: "tool then answer",
			steps: []func(context.Context, *engine.ChatRequest, func(engine.Event)) error{
				callTools(call("a")), say("done", engine.StopEnd),
			},
			wantRoles: "assistant(toolUse) toolResult assistant(stop)",
			wantText:  "done",
			wantCalls: 2,
		},
		{
			name: "parallel calls keep order",
			steps: []func(context.Context, *engine.ChatRequest, func(engine.Event)) error{
				callTools(call("a"), call("b"), call("c")), say("ok", engine.StopEnd),
			},
			wantRoles: "assistant(toolUse) toolResult toolResult toolResult assistant(stop)",
			wantText:  "ok",
			wantCalls: 2,
		},
		{
			name: "continue on max tokens",
			steps: []func(context.Context, *engine.ChatRequest, func(engine.Event)) error{
				say("first half ", engine.StopLength), say("second half", engine.StopEnd),
			},
			wantRoles: "assistant(length) user assistant(stop)",
			wantText:  "first half second half",
			wantCalls: 2,
		},
		{
			name: "turn limit",
			cfg:  Config{MaxTurns: 1},
			steps: []func(context.Context, *engine.ChatRequest, func(engine.Event)) error{
				callTools(call("a")), callTools(call("b")),
			},
			wantRoles: "assistant(toolUse) toolResult assistant(toolUse) toolResult",
			wantErr:   ErrTurnLimit,
			wantCalls: 2,
		},
		{
			name: "model error",
			steps: []func(context.Context, *engine.ChatRequest, func(engine.Event)) error{
				func(context.Context, *engine.ChatRequest, func(engine.Event)) error {
					return &engine.ModelError{Kind: engine.ErrRateLimit, Status: 429}
				},
			},
			wantRoles: "",
			wantErr:   &engine.ModelError{},
			wantCalls: 1,
		},
		{
			name: "stream without end",
			steps: []func(context.Context, *engine.ChatRequest, func(engine.Event)) error{
				func(_ context.Context, _ *engine.ChatRequest, emit func(engine.Event)) error {
					emit(engine.Event{Type: engine.EventTextDelta, Text: "partial"})
					return nil
				},
			},
			wantRoles: "assistant(error)",
			wantText:  "partial",
			wantErr:   &engine.ModelError{},
			wantCalls: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &scripted{steps: tt.steps}
			var recorded []engine.Message
			res, err := Loop(context.Background(), tt.cfg, Run{
				Model:   m,
				History: []engine.Message{engine.UserText("hi")},
				Tools:   echoTools(),
			}, Hooks{Message: func(msg engine.Message) error { recorded = append(recorded, msg); return nil }})
			switch want := tt.wantErr.(type) {
			case nil:
				if err != nil {
					t.Fatalf("err = %v", err)
				}
			case *engine.ModelError:
				var me *engine.ModelError
				if !errors.As(err, &me) {
					t.Fatalf("err = %v, want a *engine.ModelError", err)
				}
			default:
				if !errors.Is(err, want) {
					t.Fatalf("err = %v, want %v", err, want)
				}
			}
			if got := roles(res.Messages); got != tt.wantRoles {
				t.Errorf("messages = %q, want %q", got, tt.wantRoles)
			}
			if got := roles(recorded); got != tt.wantRoles {
				t.Errorf("recorded = %q, want %q", got, tt.wantRoles)
			}
			if res.Text != tt.wantText {
				t.Errorf("text = %q, want %q", res.Text, tt.wantText)
			}
			if res.ModelCalls != tt.wantCalls {
				t.Errorf("model calls = %d, want %d", res.ModelCalls, tt.wantCalls)
			}
		})
	}
}

func TestLoopToolResultsAnswerCalls(t *testing.T) {
	c := engine.ToolCall{ID: "call_1", Name: "echo", Arguments: json.RawMessage(`{}`)}
	m := &scripted{steps: []func(context.Context, *engine.ChatRequest, func(engine.Event)) error{
		callTools(c), say("fine", engine.StopEnd),
	}}
	if _, err := Loop(context.Background(), Config{}, Run{Model: m, History: []engine.Message{engine.UserText("x")}, Tools: echoTools()}, Hooks{}); err != nil {
		t.Fatal(err)
	}
	second := m.reqs[1].Messages
	last := second[len(second)-1]
	if last.Role != engine.RoleToolResult || last.ToolCallID != "call_1" || !strings.Contains(last.Content[0].Text, "ran echo") {
		t.Fatalf("second request ends with %+v", last)
	}
	if len(m.reqs[1].Tools) != 1 {
		t.Fatalf("tools not sent: %+v", m.reqs[1].Tools)
	}
}

func TestLoopHookErrorStops(t *testing.T) {
	m := &scripted{steps: []func(context.Context, *engine.ChatRequest, func(engine.Event)) error{
		callTools(engine.ToolCall{ID: "1", Name: "echo", Arguments: json.RawMessage(`{}`)}),
	}}
	ran := false
	ts := echoTools()
	ts.run = func(context.Context, engine.ToolCall) engine.ToolResult { ran = true; return engine.TextResult("") }
	boom := errors.New("disk full")
	_, err := Loop(context.Background(), Config{}, Run{Model: m, History: []engine.Message{engine.UserText("x")}, Tools: ts},
		Hooks{Message: func(engine.Message) error { return boom }})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if ran {
		t.Fatal("tool ran although its call could not be recorded")
	}
}

func TestLoopAbortKeepsPartial(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	m := &scripted{steps: []func(context.Context, *engine.ChatRequest, func(engine.Event)) error{
		func(ctx context.Context, _ *engine.ChatRequest, emit func(engine.Event)) error {
			emit(engine.Event{Type: engine.EventTextDelta, Text: "half an ans"})
			cancel()
			<-ctx.Done()
			return &engine.ModelError{Kind: engine.ErrAborted, Err: ctx.Err()}
		},
	}}
	res, err := Loop(ctx, Config{}, Run{Model: m, History: []engine.Message{engine.UserText("x")}}, Hooks{})
	if engine.KindOf(err) != engine.ErrAborted {
		t.Fatalf("err = %v", err)
	}
	if len(res.Messages) != 1 || res.Messages[0].StopReason != engine.StopAborted || res.Messages[0].Text() != "half an ans" {
		t.Fatalf("messages = %+v", res.Messages)
	}
}
