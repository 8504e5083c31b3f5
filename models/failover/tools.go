package failover

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/openclaw-edge/edge/engine"
)

// FilterTools wraps m so that every request it serves offers only the tools
// allowed says yes to: the per-provider tool policy (tools.byProvider) of
// the model that is actually asked, which in a failover chain is not always
// the primary. Wrap each Candidate's Model with its own policy and every
// attempt carries its own tool list. allowed nil returns m unchanged.
//
// A reply that nevertheless calls a tool of the request that was withheld
// from this model (a model guessing at tools it saw earlier in the
// conversation) does not get it run: the call is turned into a text note in
// the reply, so the transcript holds no call without a result and the
// model reads, next round, that the tool is not available to it. Calls of
// tools that were never in the request pass through: the turn's tool set
// answers those ("unknown tool").
//
// The wrapper keeps what a local model offers beyond Stream (see
// localFilter): CountTokens (counting the tools this model is offered),
// TrainedContext and ThinkingMechanism are forwarded when m has any of
// them, so a caller's type assertion sees them through the wrapper.
func FilterTools(m Model, allowed func(name string) bool) Model {
	if allowed == nil || m == nil {
		return m
	}
	f := &toolFilter{m: m, allowed: allowed}
	_, counts := m.(tokenCounter)
	_, trained := m.(trainedContexter)
	_, thinks := m.(thinkingMechanismer)
	if counts || trained || thinks {
		return &localFilter{f}
	}
	return f
}

type toolFilter struct {
	m       Model
	allowed func(string) bool
}

// filter returns a copy of req offering only the allowed tools, and the
// names withheld. The caller's request is not changed.
func (f *toolFilter) filter(req *engine.ChatRequest) (*engine.ChatRequest, []string) {
	var withheld []string
	var kept []engine.ToolSpec
	for _, t := range req.Tools {
		if f.allowed(t.Name) {
			kept = append(kept, t)
		} else {
			withheld = append(withheld, t.Name)
		}
	}
	r := *req
	if len(withheld) > 0 {
		r.Tools = kept
	}
	return &r, withheld
}

func (f *toolFilter) Stream(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error {
	r, withheld := f.filter(req)
	if len(withheld) == 0 {
		return f.m.Stream(ctx, r, emit)
	}
	return f.m.Stream(ctx, r, func(ev engine.Event) {
		if ev.Type == engine.EventToolCall && ev.ToolCall != nil && isWithheld(withheld, ev.ToolCall.Name) {
			ev = engine.Event{Type: engine.EventTextDelta,
				Text: "\n[tool " + quoteName(ev.ToolCall.Name) + " is not available to this model (tools.byProvider); the call was not run]\n"}
		}
		if emit != nil {
			emit(ev)
		}
	})
}

// The optional methods of a local model (models/llamacpp.Provider) that
// localFilter forwards; callers define their own interfaces.
type (
	tokenCounter interface {
		CountTokens(ctx context.Context, req *engine.ChatRequest) (int, error)
	}
	trainedContexter    interface{ TrainedContext() int }
	thinkingMechanismer interface{ ThinkingMechanism() string }
)

// ErrNoTokenCount is CountTokens' error through a wrapper whose model
// cannot count tokens (it has only TrainedContext or ThinkingMechanism).
var ErrNoTokenCount = fmt.Errorf("this model cannot count tokens: %w", errors.ErrUnsupported)

// localFilter is a toolFilter over a model with local-model methods.
type localFilter struct{ *toolFilter }

// CountTokens counts req as the model would be asked it: with the tools its
// policy withholds left out.
func (f *localFilter) CountTokens(ctx context.Context, req *engine.ChatRequest) (int, error) {
	c, ok := f.m.(tokenCounter)
	if !ok {
		return 0, ErrNoTokenCount
	}
	r, _ := f.filter(req)
	return c.CountTokens(ctx, r)
}

// TrainedContext is the model's, 0 when it does not say.
func (f *localFilter) TrainedContext() int {
	if t, ok := f.m.(trainedContexter); ok {
		return t.TrainedContext()
	}
	return 0
}

// ThinkingMechanism is the model's, "" when it does not say.
func (f *localFilter) ThinkingMechanism() string {
	if t, ok := f.m.(thinkingMechanismer); ok {
		return t.ThinkingMechanism()
	}
	return ""
}

// isWithheld matches name as the turn's tool set looks names up: exactly,
// then case-insensitively, so "Exec" cannot slip past a withheld "exec".
func isWithheld(withheld []string, name string) bool {
	name = strings.TrimSpace(name)
	for _, w := range withheld {
		if strings.EqualFold(w, name) {
			return true
		}
	}
	return false
}

// quoteName shows a model-chosen name safely in the note.
func quoteName(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}
