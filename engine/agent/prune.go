package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/openclaw-edge/edge/engine"
)

// pruneHeadChars is how much of a trimmed tool result stays, in runes.
const pruneHeadChars = 200

// prunedMarker ends a trimmed tool result; its first words also tell an
// already trimmed one.
const prunedMarker = "[... tool result trimmed to save context; "

// Prune trims old tool results in msgs (a copy; msgs is not modified) until
// Count(result) ≤ budget or nothing is left to trim: oldest toolResult
// messages first, never the ones after the last user message (the current
// turn), each replaced by its head (~200 chars) plus "[... tool result
// trimmed to save context; N chars omitted ...]". It returns the new
// messages and how many results it trimmed.
//
// This is OpenClaw's session pruning: it shapes the in-memory context of
// one request and never touches the transcript. A result too short to gain
// from trimming, or trimmed already, is left alone; images in a trimmed
// result are dropped (and counted in a second marker line). Count is called
// once for the whole context, twice per trimmed result (before and after,
// alone) and once more for the whole to confirm the budget is met; nil uses
// a rough estimate. On an error (Count's, or the context's) Prune returns
// nil and the error: use msgs as they are.
func Prune(ctx context.Context, msgs []engine.Message, budget int, count Counter) ([]engine.Message, int, error) {
	if count == nil {
		count = estimateTokens
	}
	out := append([]engine.Message(nil), msgs...)
	total, err := count(ctx, out)
	if err != nil {
		return nil, 0, fmt.Errorf("prune: count tokens: %w", err)
	}
	if total <= budget {
		return out, 0, nil
	}
	lastUser := -1
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].Role == engine.RoleUser {
			lastUser = i
			break
		}
	}
	trimmed := 0
	for i := 0; i < lastUser && total > budget; i++ {
		if out[i].Role != engine.RoleToolResult {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		m, ok := trimResult(out[i])
		if !ok {
			continue
		}
		before, err := count(ctx, out[i:i+1])
		if err != nil {
			return nil, 0, fmt.Errorf("prune: count tokens: %w", err)
		}
		after, err := count(ctx, []engine.Message{m})
		if err != nil {
			return nil, 0, fmt.Errorf("prune: count tokens: %w", err)
		}
		out[i] = m
		trimmed++
		total -= before - after
		if total <= budget {
			// The estimate says done: count the whole to be sure.
			if total, err = count(ctx, out); err != nil {
				return nil, 0, fmt.Errorf("prune: count tokens: %w", err)
			}
		}
	}
	return out, trimmed, nil
}

// trimResult returns m cut to its head, or false when that would not make
// it smaller.
func trimResult(m engine.Message) (engine.Message, bool) {
	var text strings.Builder
	images := 0
	for _, b := range m.Content {
		switch b.Type {
		case engine.BlockText:
			text.WriteString(b.Text)
		case engine.BlockImage:
			images++
		}
	}
	s := text.String()
	if strings.Contains(s, prunedMarker) {
		return m, false
	}
	r := []rune(s)
	// The marker costs about 60 characters: trim only what saves more.
	if images == 0 && len(r) <= pruneHeadChars+len(prunedMarker)+40 {
		return m, false
	}
	head := r
	if len(head) > pruneHeadChars {
		head = head[:pruneHeadChars]
	}
	var b strings.Builder
	b.WriteString(string(head))
	if omitted := len(r) - len(head); omitted > 0 {
		fmt.Fprintf(&b, "\n%s%d chars omitted ...]", prunedMarker, omitted)
	}
	if images > 0 {
		fmt.Fprintf(&b, "\n%s%d image(s) omitted ...]", prunedMarker, images)
	}
	m.Content = []engine.Block{engine.TextBlock(b.String())}
	return m, true
}
