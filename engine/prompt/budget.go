package prompt

import (
	"fmt"
	"strings"
)

// The context budget (docs/design.md §5): every request must fit the model's
// real window. The window is the smallest of the bounds that apply (the
// model's configured or catalog contextWindow, the GGUF's trained context,
// models.local.contextSize for local models, agents.defaults.contextTokens);
// the reply's tokens are reserved first, and what is left is split between
// the fixed part (system prompt and tool schemas: at most a third of it) and
// the conversation (history and the new message).
//
// When the fixed part does not fit its half, the prompt degrades one Level
// at a time, in this order, until it does:
//
//  1. LevelFiles: bootstrap files cut to a per-file and a total cap scaled
//     to the share (OpenClaw's bootstrapMaxChars/bootstrapTotalMaxChars);
//  2. LevelNoSkills: the skills list is dropped;
//  3. LevelMinimalTools: the tools are narrowed to tool.SmallWindowTools
//     (the cron tool: a reminder is the first thing people ask a box with
//     a small model);
//  4. LevelSlim: the slim prompt (identity, tools, safety, workspace,
//     untrusted-content rule, time zone);
//  5. LevelBare: the slim prompt without tools, for a tiny window.
//
// Example, the shipped defaults on stories260K (a 2,048-token window, its
// own 512-token vocabulary): the reply gets 256 tokens, the prompt 1,792, the
// fixed part at most 597. The full prompt with its 15 tools' schemas is
// about 6,500 tokens, minimal tools still ~1,100 (the bootstrap files are
// long in this vocabulary), so the slim prompt is used (~420 tokens), and
// history takes the remaining ~1,370 until compaction summarizes it.
//
// The history is then compacted when the conversation does not fit (the
// gateway's job), and only a new message that cannot fit even with the
// slim prompt and no history is an error (OverflowError), which names the
// setting that bound the window. The level is decided against the share,
// not against the current history, so it stays the same from turn to turn
// and the rendered prefix keeps hitting the cache. Narrowing tools to only
// the ones a message needs is not done: it cannot be decided honestly from
// the text of a message.

// Limit is one bound on a model's context window and the setting (or file)
// that sets it, as a user would look for it.
type Limit struct {
	Tokens int
	Knob   string
}

// Window is the effective context window of a model.
type Window struct {
	Tokens int
	// Knob names what bound it, e.g. "models.local.contextSize" or "the
	// GGUF's trained context (stories260K.gguf)".
	Knob string
}

// EffectiveWindow is the smallest positive limit; ok is false when none
// is known.
func EffectiveWindow(limits ...Limit) (w Window, ok bool) {
	for _, l := range limits {
		if l.Tokens > 0 && (!ok || l.Tokens < w.Tokens) {
			w, ok = Window(l), true
		}
	}
	return w, ok
}

// Level is how far a system prompt was degraded to fit the budget.
type Level int

// Degradation levels, in the order they apply.
const (
	LevelFull Level = iota
	LevelFiles
	LevelNoSkills
	LevelMinimalTools
	LevelSlim
	LevelBare
)

var levelNames = [...]string{"full", "bootstrap-truncated", "no-skills", "minimal-tools", "slim", "bare"}

func (l Level) String() string {
	if l >= 0 && int(l) < len(levelNames) {
		return levelNames[l]
	}
	return fmt.Sprintf("level(%d)", int(l))
}

// Apply returns p degraded to level l; each level includes the ones before
// it. fileChars is the character budget of all bootstrap files together
// from LevelFiles on. Narrowing the tools themselves (LevelMinimalTools) is
// the caller's: Params.Tools must list what is really sent.
func (l Level) Apply(p Params, fileChars int) Params {
	if l >= LevelFiles {
		fileChars = max(fileChars, minFileChars)
		per := max(fileChars/2, minFileChars)
		if p.BootstrapMaxChars <= 0 || p.BootstrapMaxChars > per {
			p.BootstrapMaxChars = per
		}
		if p.BootstrapTotalMaxChars <= 0 || p.BootstrapTotalMaxChars > fileChars {
			p.BootstrapTotalMaxChars = fileChars
		}
	}
	if l >= LevelNoSkills {
		p.Skills = nil
	}
	if l >= LevelSlim {
		p.Slim = true
	}
	return p
}

// Budget splits a window between the reply, the fixed part of the prompt
// and the conversation.
type Budget struct {
	Window Window
	// Output is reserved for the reply: the configured maximum, at most an
	// eighth of the window (a 2k local model: 256 tokens a call).
	Output int
	// Input is what a prompt may take: Window − Output.
	Input int
	// Fixed is the share of the system prompt and tool schemas: a third of
	// Input, so that history keeps two thirds (on a small window every
	// token of bootstrap text is a token less of conversation).
	Fixed int
}

// NewBudget reserves maxOutput tokens for the reply (default 1024), at most
// an eighth of the window: on a small window a long reply would leave no
// room for the next turn, and the reply can still be continued (while the
// context stays below the compaction threshold).
func NewBudget(w Window, maxOutput int) Budget {
	if maxOutput <= 0 {
		maxOutput = 1024
	}
	out := max(1, min(maxOutput, w.Tokens/8))
	in := w.Tokens - out
	return Budget{Window: w, Output: out, Input: in, Fixed: in / 3}
}

// MaxOutput is the reply cap for a prompt of promptTokens: what the window
// has left, at most want (0 = no cap of the caller's).
func (b Budget) MaxOutput(promptTokens, want int) int {
	left := b.Window.Tokens - promptTokens
	if want > 0 {
		left = min(left, want)
	}
	return max(left, 1)
}

// OverflowError says that a new message cannot fit the window even with the
// slimmest prompt and no history: the only error the budget returns.
type OverflowError struct {
	Need   int // tokens of the slim prompt plus the message
	Budget Budget
}

func (e *OverflowError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "this message needs %d tokens even with the smallest system prompt and no history, but the model's context window is %d tokens",
		e.Need, e.Budget.Window.Tokens)
	if e.Budget.Window.Knob != "" {
		fmt.Fprintf(&b, " (set by %s)", e.Budget.Window.Knob)
	}
	fmt.Fprintf(&b, ", of which %d are kept for the reply. Send a shorter message, or raise %s",
		e.Budget.Output, orDefault(e.Budget.Window.Knob, "the model's context window"))
	if strings.Contains(e.Budget.Window.Knob, "trained context") {
		b.WriteString(" — here the model file itself is the limit: use a model trained on a longer context")
	}
	return b.String()
}

func orDefault(s, def string) string {
	if s == "" || strings.Contains(s, "trained context") {
		return def
	}
	return s
}

// CompactionSettings are OpenClaw's compaction knobs
// (agents.defaults.compaction.reserveTokens, keepRecentTokens,
// reserveTokensFloor, memoryFlush.softThresholdTokens) resolved for one
// window.
type CompactionSettings struct {
	ReserveTokens       int // compact after a turn when contextTokens > window − ReserveTokens (floor applied)
	KeepRecentTokens    int // newest history kept verbatim
	ReserveTokensFloor  int // 0: no floor
	SoftThresholdTokens int // flush when the context crosses window − floor − soft
	SummaryTokens       int // cap of a compaction summary
}

// OpenClaw's defaults, sized for windows of 128k tokens and more.
const (
	DefaultReserveTokens       = 16384
	DefaultKeepRecentTokens    = 20000
	DefaultReserveTokensFloor  = 20000
	DefaultSoftThresholdTokens = 4000
)

// ScaleCompaction resolves the compaction knobs for a window. The rule (the
// docs/context-budget.md has an example): each default is OpenClaw's,
// capped to a share of the window — reserveTokens and reserveTokensFloor a
// quarter, keepRecentTokens an eighth, softThresholdTokens a sixteenth — so
// a 200k window gets OpenClaw's own numbers and a 2k one reserves 512,
// keeps 256 and flushes 128 tokens before compacting. Configured values (> 0;
// floor: nil = default, 0 = none) are honoured but capped at half the window
// (soft: an eighth): a 2k window cannot reserve 16k. The summary is capped
// at an eighth of the window (at most 2048). With these shares the context
// after a compaction (fixed part ≤ half the input, summary and kept
// history an eighth each) sits below the flush threshold, so the flush runs
// once before each compaction and not on every turn.
func ScaleCompaction(window int, reserve, keepRecent int, floor *int, soft int) CompactionSettings {
	pick := func(configured, def, share, limit int) int {
		if configured > 0 {
			return max(1, min(configured, limit))
		}
		return max(1, min(def, share))
	}
	s := CompactionSettings{
		ReserveTokens:       pick(reserve, DefaultReserveTokens, window/4, window/2),
		KeepRecentTokens:    pick(keepRecent, DefaultKeepRecentTokens, window/8, window/2),
		SoftThresholdTokens: pick(soft, DefaultSoftThresholdTokens, window/16, window/8),
		SummaryTokens:       max(1, min(2048, window/8)),
	}
	switch {
	case floor == nil:
		s.ReserveTokensFloor = max(1, min(DefaultReserveTokensFloor, window/4))
	case *floor > 0:
		s.ReserveTokensFloor = max(1, min(*floor, window/2))
	}
	return s
}

// EffectiveReserve is ReserveTokens raised to the floor.
func (s CompactionSettings) EffectiveReserve() int { return max(s.ReserveTokens, s.ReserveTokensFloor) }

// CompactAt is the context size above which a finished turn triggers
// compaction.
func (s CompactionSettings) CompactAt(window int) int { return window - s.EffectiveReserve() }

// FlushAt is the context size at which the memory flush runs.
func (s CompactionSettings) FlushAt(window int) int {
	return window - s.EffectiveReserve() - s.SoftThresholdTokens
}
