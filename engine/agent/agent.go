// Package agent is the agent loop: it calls a model with the conversation,
// runs the tools the model asks for, feeds their results back, and repeats
// until the model answers with text only or the turn limit is reached
// (docs/design.md §3.6–3.7).
//
// The loop knows nothing of storage, channels or configuration. It reports
// every new message through Hooks.Message before it goes on, so the caller can
// persist each step in its own transaction (write before you act); a hook
// error stops the turn. Deltas go to Hooks.Event as they stream.
//
// Choices where the spec is silent:
//   - Tool calls of one assistant message run in call order, mutating ones
//     (write, edit, apply_patch, exec, process: tool.Mutating) one at a time
//     and each after every earlier call has finished; the read-only calls
//     between two mutating ones run concurrently. Models do issue parallel
//     edits of one file, and run concurrently those lose updates. Results
//     are appended in call order, so transcripts are deterministic.
//   - Tool-call ids are unique within a session: a new assistant message
//     whose call reuses an id already in the history (local models number
//     their calls call_1… anew every turn) or repeats one within itself gets
//     a fresh id before it is recorded, and its result carries that id.
//     Providers such as Anthropic refuse a request with repeated ids, which
//     would break a session that fails over to them.
//   - A reply cut by the output-token limit is continued by a follow-up
//     request: the partial assistant message is kept and a short user message
//     asks the model to continue. At most Config.MaxContinuations times, and
//     only while the window leaves room to write (Run.Room): on a small
//     local model a reply that filled the window ends there.
//   - When the turn limit is hit with tool calls still pending, the pending
//     calls get an error result saying so (the transcript stays well formed)
//     and the loop ends with ErrTurnLimit.
package agent

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/tool"
)

// Model streams one model reply. Implementations live in models/….
type Model interface {
	Stream(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error
}

// Toolset is the set of tools one turn may use, already filtered by policy
// and bound to the turn's workspace and approver (engine/tool.Set).
type Toolset interface {
	Specs() []engine.ToolSpec
	Run(ctx context.Context, call engine.ToolCall) engine.ToolResult
}

// mutatingToolset is a Toolset that says which of its tools mutate
// (engine/tool.Set); for others tool.Mutating decides by name.
type mutatingToolset interface {
	Mutating(name string) bool
}

// Config bounds a loop.
type Config struct {
	// MaxTurns is the most model calls that may end in tool calls in one turn
	// (default 20).
	MaxTurns int
	// MaxContinuations is how often a reply cut at the token limit is
	// continued (default 3).
	MaxContinuations int
}

// Run is one turn's input.
type Run struct {
	Model         Model
	Provider      string // for the messages we write, e.g. "anthropic"
	ModelID       string // provider's model id
	API           string // provider api, e.g. "anthropic-messages"
	System        string
	CacheBoundary int
	History       []engine.Message // the context, ending with the new user message
	Tools         Toolset          // may be nil: no tools
	MaxTokens     int
	Thinking      engine.ThinkingLevel
	SessionID     string
	// Room, when set, is asked before every model call how many output
	// tokens the request leaves room for in the model's window (it replaces
	// MaxTokens when smaller). Zero means the prompt itself no longer fits:
	// a continuation is then not made (the turn ends with what it has) and
	// any other call fails with ErrContextOverflow, which the caller
	// answers by compacting and retrying.
	Room func(ctx context.Context, req *engine.ChatRequest) (int, error)
	// MayContinue, when set, decides whether a reply cut at the output
	// limit is continued with req, the continuation request (default: while
	// Room leaves at least a few tokens). The gateway continues only while
	// the context stays below its compaction threshold: on a small window a
	// reply that would fill it ends instead.
	MayContinue func(ctx context.Context, req *engine.ChatRequest) bool
}

// minContinueTokens is the least room worth a continuation round.
const minContinueTokens = 32

// Hooks observe a loop. Every field may be nil.
type Hooks struct {
	// Event receives every stream event as it arrives.
	Event func(engine.Event)
	// Message receives each new message (assistant replies, tool results,
	// continuation prompts) before the loop acts on it. An error ends the
	// turn: nothing further is done.
	Message func(engine.Message) error
	// ToolCall and ToolResult report tool activity for progress display.
	ToolCall   func(engine.ToolCall)
	ToolResult func(engine.ToolCall, engine.ToolResult)
}

// Result is what a turn produced.
type Result struct {
	Messages []engine.Message // every message the loop added, in order
	Text     string           // the visible reply: text of the final assistant message(s)
	Usage    engine.Usage     // summed over all model calls
	// LastUsage is the usage of the last model call; its Input+CacheRead
	// approximates the context size.
	LastUsage  engine.Usage
	StopReason engine.StopReason
	ModelCalls int
}

// ErrTurnLimit ends a turn whose model kept calling tools past Config.MaxTurns.
var ErrTurnLimit = errors.New("turn limit reached")

// ContinuePrompt is the user message that asks a model to continue a reply
// cut at its output-token limit (engine.ContinuePrompt).
const ContinuePrompt = engine.ContinuePrompt

// Loop runs one turn. On a model error it returns the error (a
// *engine.ModelError for classified failures) together with the messages
// produced so far; on abort the partial assistant message is kept with stop
// reason "aborted".
func Loop(ctx context.Context, cfg Config, run Run, hooks Hooks) (Result, error) {
	if cfg.MaxTurns <= 0 {
		cfg.MaxTurns = 20
	}
	if cfg.MaxContinuations <= 0 {
		cfg.MaxContinuations = 3
	}
	l := &loop{cfg: cfg, run: run, hooks: hooks, history: append([]engine.Message(nil), run.History...), callIDs: map[string]bool{}}
	for _, m := range l.history {
		l.noteIDs(m)
	}
	err := l.turn(ctx)
	return l.res, err
}

type loop struct {
	cfg     Config
	run     Run
	hooks   Hooks
	history []engine.Message
	res     Result
	callIDs map[string]bool // tool-call ids used in the history
}

func (l *loop) add(m engine.Message) error {
	if l.hooks.Message != nil {
		if err := l.hooks.Message(m); err != nil {
			return fmt.Errorf("record %s message: %w", m.Role, err)
		}
	}
	l.history = append(l.history, m)
	l.res.Messages = append(l.res.Messages, m)
	l.noteIDs(m)
	return nil
}

// noteIDs records the tool-call ids m uses.
func (l *loop) noteIDs(m engine.Message) {
	for _, b := range m.Content {
		if b.Type == engine.BlockToolCall {
			l.callIDs[b.ID] = true
		}
	}
	if m.ToolCallID != "" {
		l.callIDs[m.ToolCallID] = true
	}
}

// uniqueCallIDs gives every tool call of a new assistant message an id not
// used before in the session's history nor earlier in the message: an empty
// or reused id becomes "<id>_<n>" (or "call_<n>"), the first n free. The
// message is edited in place before it is recorded, so the results, which
// take their ids from it, follow.
func (l *loop) uniqueCallIDs(msg *engine.Message) {
	seen := map[string]bool{}
	for i := range msg.Content {
		b := &msg.Content[i]
		if b.Type != engine.BlockToolCall {
			continue
		}
		if b.ID == "" || l.callIDs[b.ID] || seen[b.ID] {
			base := b.ID
			if base == "" {
				base = "call"
			}
			for n := 2; ; n++ {
				id := base + "_" + strconv.Itoa(n)
				if !l.callIDs[id] && !seen[id] {
					b.ID = id
					break
				}
			}
		}
		seen[b.ID] = true
	}
}

func (l *loop) turn(ctx context.Context) error {
	var specs []engine.ToolSpec
	if l.run.Tools != nil {
		specs = l.run.Tools.Specs()
	}
	toolRounds, continuations := 0, 0
	var text strings.Builder
	for {
		msg, err := l.call(ctx, specs)
		if msg != nil {
			l.uniqueCallIDs(msg)
			if aerr := l.add(*msg); aerr != nil {
				return aerr
			}
			text.WriteString(msg.Text())
			l.res.StopReason = msg.StopReason
		}
		if err != nil {
			l.res.Text = text.String()
			return err
		}
		calls := msg.ToolCalls()
		if len(calls) == 0 {
			if msg.StopReason == engine.StopLength && continuations < l.cfg.MaxContinuations && l.roomToContinue(ctx, specs) {
				continuations++
				if err := l.add(engine.UserText(ContinuePrompt)); err != nil {
					return err
				}
				continue
			}
			l.res.Text = text.String()
			return nil
		}
		// A message with tool calls is not the visible reply; what counts is
		// the text after the tools ran.
		text.Reset()
		toolRounds++
		if toolRounds > l.cfg.MaxTurns {
			for _, c := range calls {
				r := engine.ErrorResult("not run: this turn reached its limit of %d tool rounds", l.cfg.MaxTurns)
				if err := l.add(r.Message(c)); err != nil {
					return err
				}
			}
			l.res.Text = text.String()
			return fmt.Errorf("%w: the model still wanted tools after %d rounds", ErrTurnLimit, l.cfg.MaxTurns)
		}
		if err := l.runTools(ctx, calls); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return &engine.ModelError{Kind: engine.ErrAborted, Message: "turn stopped", Err: err}
		}
	}
}

// call makes one streamed model call and assembles the assistant message.
// A non-nil message is returned even with an error when the model produced
// something before failing or being stopped.
func (l *loop) call(ctx context.Context, specs []engine.ToolSpec) (*engine.Message, error) {
	req := &engine.ChatRequest{
		Model:         l.run.ModelID,
		System:        l.run.System,
		CacheBoundary: l.run.CacheBoundary,
		Messages:      l.history,
		Tools:         specs,
		MaxTokens:     l.run.MaxTokens,
		Thinking:      l.run.Thinking,
		SessionID:     l.run.SessionID,
	}
	if l.run.Room != nil {
		room, err := l.run.Room(ctx, req)
		if err != nil {
			return nil, err
		}
		if room <= 0 {
			return nil, &engine.ModelError{Kind: engine.ErrContextOverflow, Provider: l.run.Provider, Model: l.run.ModelID,
				Message: "the conversation no longer fits the model's context window"}
		}
		if req.MaxTokens <= 0 || room < req.MaxTokens {
			req.MaxTokens = room
		}
	}
	var (
		text, thinking strings.Builder
		signature      string
		blocks         []engine.Block
		usage          engine.Usage
		stop           engine.StopReason
		ended          bool
	)
	flushText := func() {
		if thinking.Len() > 0 {
			blocks = append(blocks, engine.Block{Type: engine.BlockThinking, Thinking: thinking.String(), ThinkingSignature: signature})
			thinking.Reset()
			signature = ""
		}
		if text.Len() > 0 {
			blocks = append(blocks, engine.TextBlock(text.String()))
			text.Reset()
		}
	}
	emit := func(ev engine.Event) {
		switch ev.Type {
		case engine.EventTextDelta:
			text.WriteString(ev.Text)
		case engine.EventThinkingDelta:
			if text.Len() > 0 {
				flushText() // a new thinking block after text
			}
			thinking.WriteString(ev.Text)
			if ev.Signature != "" {
				signature = ev.Signature
			}
		case engine.EventToolCall:
			if ev.ToolCall != nil {
				flushText()
				blocks = append(blocks, ev.ToolCall.Block())
			}
		case engine.EventMessageEnd:
			ended = true
			stop = ev.StopReason
			if ev.Usage != nil {
				usage = *ev.Usage
			}
		}
		if l.hooks.Event != nil {
			l.hooks.Event(ev)
		}
	}
	l.res.ModelCalls++
	err := l.run.Model.Stream(ctx, req, emit)
	flushText()
	l.res.Usage.Add(usage)
	l.res.LastUsage = usage
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err == nil && !ended {
		err = &engine.ModelError{Kind: engine.ErrUnreachable, Provider: l.run.Provider, Model: l.run.ModelID, Message: "model stream ended without a final event"}
	}
	msg := &engine.Message{
		Role:      engine.RoleAssistant,
		Content:   blocks,
		API:       l.run.API,
		Provider:  l.run.Provider,
		Model:     l.run.ModelID,
		Usage:     &usage,
		Timestamp: time.Now().UnixMilli(),
	}
	if err != nil {
		if engine.KindOf(err) == engine.ErrAborted {
			msg.StopReason = engine.StopAborted
		} else {
			msg.StopReason = engine.StopError
			msg.ErrorMessage = err.Error()
		}
		// Tool calls of an interrupted message are never run: drop them so
		// the transcript holds no call without a result.
		msg.Content = textOnly(msg.Content)
		if len(msg.Content) == 0 {
			return nil, err
		}
		return msg, err
	}
	// The calls decide, whatever the provider said: a message with calls
	// waits for their results, one without them ends the turn.
	switch {
	case len(msg.ToolCalls()) > 0:
		stop = engine.StopToolUse
	case stop == "" || stop == engine.StopToolUse:
		stop = engine.StopEnd
	}
	msg.StopReason = stop
	return msg, nil
}

// roomToContinue reports whether a continuation round would still leave
// the model room to write (always, without Run.Room).
func (l *loop) roomToContinue(ctx context.Context, specs []engine.ToolSpec) bool {
	if l.run.Room == nil && l.run.MayContinue == nil {
		return true
	}
	next := append(append([]engine.Message(nil), l.history...), engine.UserText(ContinuePrompt))
	req := &engine.ChatRequest{Model: l.run.ModelID, System: l.run.System, CacheBoundary: l.run.CacheBoundary,
		Messages: next, Tools: specs, MaxTokens: l.run.MaxTokens, Thinking: l.run.Thinking, SessionID: l.run.SessionID}
	if l.run.MayContinue != nil {
		return l.run.MayContinue(ctx, req)
	}
	room, err := l.run.Room(ctx, req)
	return err == nil && room >= minContinueTokens
}

func textOnly(blocks []engine.Block) []engine.Block {
	var out []engine.Block
	for _, b := range blocks {
		if b.Type != engine.BlockToolCall {
			out = append(out, b)
		}
	}
	return out
}

// runTools runs calls and records their results in call order. A mutating
// call waits for every earlier call and runs alone; read-only calls run
// concurrently with the read-only calls next to them.
func (l *loop) runTools(ctx context.Context, calls []engine.ToolCall) error {
	results := make([]engine.ToolResult, len(calls))
	mutating := tool.Mutating
	if m, ok := l.run.Tools.(mutatingToolset); ok {
		mutating = m.Mutating
	}
	var wg sync.WaitGroup
	for i, c := range calls {
		if l.hooks.ToolCall != nil {
			l.hooks.ToolCall(c)
		}
		if l.run.Tools == nil {
			results[i] = engine.ErrorResult("tool %q is not available: this agent has no tools", c.Name)
			continue
		}
		if mutating(c.Name) {
			wg.Wait() // the calls before it have finished…
			results[i] = l.run.Tools.Run(ctx, c)
			continue // …and the ones after it start once it has
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = l.run.Tools.Run(ctx, c)
		}()
	}
	wg.Wait()
	for i, c := range calls {
		if l.hooks.ToolResult != nil {
			l.hooks.ToolResult(c, results[i])
		}
		if err := l.add(results[i].Message(c)); err != nil {
			return err
		}
	}
	return nil
}
