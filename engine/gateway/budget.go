package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/prompt"
	"github.com/openclaw-edge/edge/engine/tool"
)

// A turn's context budget (engine/prompt budget.go has the rules): the
// effective window, the degradation level of the system prompt and tools,
// and the token counts that drive the memory flush and compaction.

// tokenCounter counts the prompt tokens of a request as the model sees it.
type tokenCounter func(ctx context.Context, req *engine.ChatRequest) (int, error)

// counterFor is the model's own counter (a local model counts with its
// tokenizer, chat template applied), else estimateTokens.
//
// A model that cannot count right now (its file is missing, the runner
// cannot start) is estimated instead: the call itself then fails and the
// failover chain moves on, or the user learns why — counting must not be
// what breaks a turn.
func counterFor(info ModelInfo) tokenCounter {
	if info.Count == nil {
		return estimateTokens
	}
	return func(ctx context.Context, req *engine.ChatRequest) (int, error) {
		n, err := info.Count(ctx, req)
		if err != nil && ctx.Err() == nil {
			return estimateTokens(ctx, req)
		}
		return n, err
	}
}

// estimateTokens is the estimate for models that cannot count before a
// call (remote APIs): about 4 bytes a token for English text and JSON, plus
// a few tokens of framing per message, with a 10 % margin. Remote windows
// are large, so the estimate errs on the safe side rather than being exact.
func estimateTokens(_ context.Context, req *engine.ChatRequest) (int, error) {
	n := len(req.System)
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters) + 16
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		n += 16
		for _, b := range m.Content {
			switch b.Type {
			case engine.BlockText:
				n += len(b.Text)
			case engine.BlockThinking:
				n += len(b.Thinking)
			case engine.BlockToolCall:
				n += len(b.Name) + len(b.Arguments) + 16
			case engine.BlockImage:
				n += 4 * 1600 // ~1.6k tokens an image
			}
		}
	}
	return n/4 + n/40 + 1, nil
}

// window is the effective context window of a turn: the model's limits
// and agents.defaults.contextTokens.
func (g *Gateway) window(ag *Agent, info ModelInfo) prompt.Window {
	limits := slices.Clone(info.Limits)
	if len(limits) == 0 && info.ContextWindow > 0 {
		limits = append(limits, prompt.Limit{Tokens: info.ContextWindow, Knob: "the contextWindow of " + info.Ref})
	}
	limits = append(limits, prompt.Limit{Tokens: ag.ContextTokens, Knob: "agents.defaults.contextTokens"})
	w, ok := prompt.EffectiveWindow(limits...)
	if !ok {
		return prompt.Window{Tokens: DefaultContextWindow, Knob: "the default window for models without a known contextWindow (set contextWindow on the model)"}
	}
	return w
}

// DefaultContextWindow is assumed for a model whose window nothing states.
const DefaultContextWindow = 128000

// turnPlan is a turn's prompt fitted to its budget.
type turnPlan struct {
	params prompt.Params
	prompt prompt.Prompt
	level  prompt.Level
	set    *tool.Set
	specs  []engine.ToolSpec
	budget prompt.Budget
	count  tokenCounter
	// forced: degraded further than the configuration's level for this
	// message only; the next turn's prompt differs (never prewarmed).
	forced bool
}

// request is the chat request of the plan over msgs.
func (p *turnPlan) request(info ModelInfo, msgs []engine.Message) *engine.ChatRequest {
	return &engine.ChatRequest{Model: info.ID, System: p.prompt.System, CacheBoundary: p.prompt.CacheBoundary, Tools: p.specs, Messages: msgs}
}

// tokens counts the plan's request over msgs.
func (p *turnPlan) tokens(ctx context.Context, info ModelInfo, msgs []engine.Message) (int, error) {
	n, err := p.count(ctx, p.request(info, msgs))
	if err != nil {
		return 0, fmt.Errorf("count prompt tokens: %w", err)
	}
	return n, nil
}

// placeholder stands for "a short message" when the fixed part is measured.
var placeholder = []engine.Message{{Role: engine.RoleUser, Content: []engine.Block{engine.TextBlock("Hi")}}}

// planTurn picks the first degradation level whose fixed part (system
// prompt and tools) fits its share of the budget and leaves room for the
// new message. The level depends on the agent, model and workspace, not on
// the history, so it is the same from one turn to the next (the cache
// stays warm); it is remembered per configuration so a turn usually counts
// twice, not ten times. A message that does not fit even at the slim level
// is a *prompt.OverflowError.
func (g *Gateway) planTurn(ctx context.Context, ag *Agent, info ModelInfo, base prompt.Params, env tool.Env, user engine.Message) (*turnPlan, error) {
	count := counterFor(info)
	w := g.window(ag, info)
	maxOut := ag.MaxTokens
	if maxOut == 0 {
		maxOut = info.MaxTokens
	}
	b := prompt.NewBudget(w, maxOut)
	minimal := tool.SmallWindowTools
	build := func(lvl prompt.Level) (*turnPlan, error) {
		allow := ag.Allowed
		switch {
		case lvl >= prompt.LevelBare:
			// The last resort of a tiny window: no tool schemas at all.
			allow = func(string) bool { return false }
		case lvl >= prompt.LevelMinimalTools:
			allow = func(name string) bool { return ag.Allowed(name) && slices.Contains(minimal, name) }
		}
		set := tool.NewSet(g.cfg.Tools, allow, env, tool.TruncateConfig{ContextWindow: w.Tokens})
		p := base
		p.Tools = set.Specs()
		p.MemoryTools = slices.ContainsFunc(p.Tools, func(s engine.ToolSpec) bool { return s.Name == "memory_search" })
		// Bootstrap files get a third of the fixed share, at ~3 characters
		// a token (small vocabularies tokenize worse than 4).
		p = lvl.Apply(p, b.Fixed)
		pr, err := prompt.Build(p)
		if err != nil {
			return nil, fmt.Errorf("build the system prompt: %w", err)
		}
		return &turnPlan{params: p, prompt: pr, level: lvl, set: set, specs: p.Tools, budget: b, count: count}, nil
	}
	cacheKey := planKey(ag, info, w, base)
	g.mu.Lock()
	start, known := g.levels[cacheKey]
	g.mu.Unlock()
	var tried []string // "level=tokens" of the levels that did not fit, for the log
	forced := false    // degrading further for this message only: not remembered
	for lvl := start; ; lvl++ {
		p, err := build(lvl)
		if err != nil {
			return nil, err
		}
		if !known || lvl > start {
			fixed, err := p.tokens(ctx, info, placeholder)
			if err != nil {
				return nil, err
			}
			if fixed > b.Fixed && lvl < prompt.LevelBare {
				tried = append(tried, fmt.Sprintf("%s=%d", lvl, fixed))
				continue
			}
			if !forced {
				g.mu.Lock()
				g.levels[cacheKey] = lvl
				g.mu.Unlock()
			}
			g.log.Info("context budget", "agent", ag.ID, "model", info.Ref, "window", w.Tokens, "boundBy", w.Knob,
				"reply", b.Output, "fixedShare", b.Fixed, "fixed", fixed, "level", lvl.String(), "tools", len(p.specs), "tooBig", strings.Join(tried, " "))
			known, start = true, lvl
		}
		need, err := p.tokens(ctx, info, []engine.Message{user})
		if err != nil {
			return nil, err
		}
		if need <= b.Input {
			p.forced = forced
			return p, nil
		}
		if lvl == prompt.LevelBare {
			return nil, &prompt.OverflowError{Need: need, Budget: b}
		}
		// This message is too long for the usual level: degrade further for
		// this turn only (the remembered level stays).
		known, forced = false, true
	}
}

// planKey identifies what the fitting level depends on.
func planKey(ag *Agent, info ModelInfo, w prompt.Window, p prompt.Params) string {
	h := sha256.New()
	data, _ := json.Marshal([]any{ag.ID, info.Ref, w.Tokens, p.Mode, p.Workspace, p.MainSession, p.ChatType, p.LocalModel, p.BootstrapMaxChars, len(p.Skills)})
	h.Write(data)
	// The workspace files change the fixed part: their sizes are in the key
	// through the level-0 prompt only when they change, which a cheap stat
	// cannot tell; the key is refreshed whenever the gateway restarts and
	// after every compaction (resetLevels).
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// resetLevels forgets the remembered levels, e.g. after a compaction
// (bootstrap files may have grown since).
func (g *Gateway) resetLevels() {
	g.mu.Lock()
	clear(g.levels)
	g.mu.Unlock()
}

// messageCounter adapts a plan's counter to agent.Counter: messages
// counted with the plan's system prompt left out (the summarizer has its
// own).
func messageCounter(info ModelInfo, count tokenCounter) func(ctx context.Context, msgs []engine.Message) (int, error) {
	return func(ctx context.Context, msgs []engine.Message) (int, error) {
		return count(ctx, &engine.ChatRequest{Model: info.ID, Messages: msgs})
	}
}

// room is agent.Run.Room for a plan: what the window leaves for the reply
// of req (at most the budget's Output), 0 when the prompt exceeds the
// budget's input share.
func (p *turnPlan) room(ctx context.Context, req *engine.ChatRequest) (int, error) {
	n, err := p.count(ctx, req)
	if err != nil {
		return 0, fmt.Errorf("count prompt tokens: %w", err)
	}
	if n > p.budget.Input {
		return 0, nil
	}
	return p.budget.MaxOutput(n, p.budget.Output), nil
}
