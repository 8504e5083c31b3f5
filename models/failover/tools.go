package failover

import (
	"context"
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
func FilterTools(m Model, allowed func(name string) bool) Model {
	if allowed == nil || m == nil {
		return m
	}
	return &toolFilter{m: m, allowed: allowed}
}

type toolFilter struct {
	m       Model
	allowed func(string) bool
}

func (f *toolFilter) Stream(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error {
	var withheld []string
	r := *req // the caller's request is not changed
	r.Tools = nil
	for _, t := range req.Tools {
		if f.allowed(t.Name) {
			r.Tools = append(r.Tools, t)
		} else {
			withheld = append(withheld, t.Name)
		}
	}
	if len(withheld) == 0 {
		r.Tools = req.Tools
		return f.m.Stream(ctx, &r, emit)
	}
	return f.m.Stream(ctx, &r, func(ev engine.Event) {
		if ev.Type == engine.EventToolCall && ev.ToolCall != nil && isWithheld(withheld, ev.ToolCall.Name) {
			ev = engine.Event{Type: engine.EventTextDelta,
				Text: "\n[tool " + quoteName(ev.ToolCall.Name) + " is not available to this model (tools.byProvider); the call was not run]\n"}
		}
		if emit != nil {
			emit(ev)
		}
	})
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
