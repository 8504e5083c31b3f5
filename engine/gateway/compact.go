package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/agent"
	"github.com/openclaw-edge/edge/engine/prompt"
	"github.com/openclaw-edge/edge/engine/session"
	"github.com/openclaw-edge/edge/engine/transcript"
)

// Compaction and the memory flush (docs/design.md §5, OpenClaw's compaction
// and pre-compaction memory flush), as the gateway runs them around a turn:
//
//   - before the model is called, when the context crosses the flush
//     threshold (window − reserve − softThreshold) and no flush ran in this
//     compaction cycle: the silent flush turn;
//   - before the model is called, when the request does not fit the
//     budget's input share: compaction (trigger "budget");
//   - when a provider reports a context overflow: compaction and one retry
//     (trigger "overflow");
//   - after a successful turn whose context exceeds window − reserve:
//     compaction (trigger "threshold");
//   - on /compact [instructions] (trigger "manual").
//
// Every compaction is preceded by the flush if the cycle has had none, so
// the flush runs once before each compaction, and never on every turn (the
// scaled settings keep the context after a compaction below the flush
// threshold; prompt.ScaleCompaction).

// Compaction triggers, as recorded in the compaction entry's details.
const (
	TriggerBudget    = "budget"
	TriggerOverflow  = "overflow"
	TriggerThreshold = "threshold"
	TriggerManual    = "manual"
)

// MemoryFlushEntryType is the customType of the transcript entry that
// records a memory flush (outside the model context).
const MemoryFlushEntryType = "openclaw.memory_flush"

// ContinueEntryType is the customType of a "[continue]" round: the request
// that asked the model to go on after its output limit. It is a custom
// entry, not a user turn, so it never enters a later context.
const ContinueEntryType = "openclaw.continue"

// Flush prompts: OpenClaw's defaults, with the one tool named.
const (
	FlushSystemPrompt = "Session nearing compaction. Store durable memories now."
	FlushPrompt       = "Session nearing compaction. Store durable memories now: call memory_append with any lasting notes (decisions, facts, preferences, open tasks) for memory/%s. Reply with NO_REPLY if nothing to store."
)

// compactor holds what compaction and the flush need for one turn.
type compactor struct {
	g        *Gateway
	ag       *Agent
	key      engine.SessionKey
	model    agent.Model
	info     ModelInfo
	plan     *turnPlan
	settings prompt.CompactionSettings
}

func (g *Gateway) compactor(ag *Agent, key engine.SessionKey, model agent.Model, info ModelInfo, plan *turnPlan) *compactor {
	w := plan.budget.Window.Tokens
	c := ag.Compaction
	return &compactor{g: g, ag: ag, key: key, model: model, info: info, plan: plan,
		settings: prompt.ScaleCompaction(w, c.ReserveTokens, c.KeepRecentTokens, c.ReserveTokensFloor, c.SoftThresholdTokens)}
}

// contextMessages is the session's current model context.
func (c *compactor) contextMessages() ([]transcript.ContextItem, []engine.Message, error) {
	items, err := c.g.cfg.Sessions.ContextItems(c.ag.ID, c.key)
	if err != nil {
		return nil, nil, err
	}
	msgs := make([]engine.Message, len(items))
	for i := range items {
		msgs[i] = items[i].Message
	}
	return items, msgs, nil
}

// flushDue reports whether the memory flush should run now for a context
// of tokens: enabled, past the soft threshold, not yet run in this
// compaction cycle, and the workspace writable.
func (c *compactor) flushDue(e session.Entry, tokens int) bool {
	return tokens >= c.settings.FlushAt(c.plan.budget.Window.Tokens) && c.flushNeeded(e)
}

// flushNeeded: enabled, not yet run in this compaction cycle, and the
// workspace writable.
func (c *compactor) flushNeeded(e session.Entry) bool {
	if !c.ag.Compaction.FlushEnabled || c.ag.Workspace == "" {
		return false
	}
	if !e.MemoryFlushAt.IsZero() && e.MemoryFlushCompactionCount == e.CompactionCount {
		return false // already flushed in this cycle
	}
	return writable(c.ag.Workspace)
}

// flush runs the silent memory-flush turn over history (the context before
// the new message): the model gets one tool, memory_append, that appends
// to today's note and nothing else, whatever the session's tool policy. Its
// messages are never stored as messages and nothing reaches the user; one
// custom entry records what happened. A failure is logged, never fatal to
// the user's turn.
func (c *compactor) flush(ctx context.Context, sessionID string, history []engine.Message) {
	now := c.g.cfg.Now().In(c.ag.Location)
	note := prompt.DailyMemoryPath(now)
	tools := &flushTools{workspace: c.ag.Workspace, path: note, written: c.ag.MemoryWritten}
	ask := engine.UserText(fmt.Sprintf(FlushPrompt, path.Base(note)))
	msgs := c.fitFlush(ctx, history, ask)
	out, err := agent.Loop(ctx, agent.Config{MaxTurns: 3, MaxContinuations: 1}, agent.Run{
		Model: c.model, Provider: c.info.Provider, ModelID: c.info.ID, API: c.info.API,
		System: c.plan.prompt.System, CacheBoundary: c.plan.prompt.CacheBoundary,
		History: msgs, Tools: tools, MaxTokens: min(c.plan.budget.Output, 512), Thinking: engine.ThinkingOff,
		// Its own runner slot: its request (another tool, another last
		// message) would otherwise replace the session's cached prefix.
		SessionID: sessionID + ":flush", Room: c.plan.room,
	}, agent.Hooks{})
	rec := map[string]any{"path": note, "appendedChars": tools.wrote, "calls": tools.calls, "modelCalls": out.ModelCalls, "usage": out.Usage}
	if err != nil {
		rec["error"] = err.Error()
		c.g.log.Warn("memory flush failed", "session", c.key, "err", err)
	}
	failed := err != nil && tools.wrote == 0
	reply := strings.TrimSpace(out.Text)
	if len(reply) > 200 {
		reply = reply[:200]
	}
	rec["reply"] = reply
	data, _ := json.Marshal(rec) // plain values
	entry := transcript.Entry{Type: transcript.EntryCustom, CustomType: MemoryFlushEntryType, Data: data, Timestamp: transcript.Timestamp(c.g.cfg.Now())}
	if failed {
		// Recorded, but the cycle is not marked flushed: the next
		// crossing (or compaction) tries again.
		if _, err := c.g.cfg.Sessions.AppendEntries(c.ag.ID, c.key, entry); err != nil {
			c.g.log.Error("could not record the failed memory flush", "session", c.key, "err", err)
		}
		return
	}
	if err := c.g.cfg.Sessions.MemoryFlushed(c.ag.ID, c.key, entry); err != nil {
		c.g.log.Error("could not record the memory flush", "session", c.key, "err", err)
	}
}

// fitFlush is history (without its oldest messages, when the whole does not
// fit the window with the flush's own request and tool) followed by ask.
// The flush is about what the recent turns said; the oldest ones are about
// to be summarized anyway.
func (c *compactor) fitFlush(ctx context.Context, history []engine.Message, ask engine.Message) []engine.Message {
	with := func(from int) []engine.Message {
		return append(append([]engine.Message(nil), history[from:]...), ask)
	}
	fits := func(from int) bool {
		req := c.plan.request(c.info, with(from))
		req.Tools = []engine.ToolSpec{memoryAppendSpec}
		n, err := c.plan.count(ctx, req)
		return err == nil && n+min(c.plan.budget.Output, 512) <= c.plan.budget.Window.Tokens
	}
	// Binary search for the first start that fits, at user-message
	// boundaries so a tool result never opens the history.
	lo, hi := 0, len(history)
	for lo < hi {
		mid := (lo + hi) / 2
		if fits(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	for lo < len(history) && history[lo].Role != engine.RoleUser {
		lo++
	}
	return with(lo)
}

// compact summarizes the session's older history into a compaction entry.
// The flush runs first when this cycle has had none. ok is false when there
// was nothing to compact.
func (c *compactor) compact(ctx context.Context, trigger, instructions string) (res agent.CompactResult, ok bool, err error) {
	// Before or during a turn (budget, overflow) the turn's own user
	// message and what follows it are kept verbatim.
	keepTurn := trigger == TriggerBudget || trigger == TriggerOverflow
	e, found, err := c.g.cfg.Sessions.Get(c.ag.ID, c.key)
	if err != nil || !found {
		return res, false, err
	}
	items, msgs, err := c.contextMessages()
	if err != nil {
		return res, false, err
	}
	// Flush before every compaction that had none in its cycle, whatever
	// the threshold said: what compaction drops must have had its chance
	// to be written down. The flush adds only a custom entry, outside the
	// context, so msgs stays the context to compact.
	if compactable(msgs) && c.flushNeeded(e) {
		prior := msgs
		if last := msgs[len(msgs)-1]; last.Role == engine.RoleUser {
			prior = msgs[:len(msgs)-1]
		}
		c.flush(ctx, e.SessionID, prior)
	}
	if err := ctx.Err(); err != nil {
		return res, false, err
	}
	keepFrom := 0
	if keepTurn {
		for i := len(msgs) - 1; i > 0; i-- {
			if msgs[i].Role == engine.RoleUser {
				keepFrom = i
				break
			}
		}
	}
	sessionID := e.SessionID
	count := messageCounter(c.info, c.plan.count)
	res, err = agent.Compact(ctx, agent.CompactRequest{
		Model: c.model, ModelID: c.info.ID, SessionID: sessionID,
		Messages:         msgs,
		KeepFrom:         keepFrom,
		Count:            count,
		KeepRecentTokens: c.settings.KeepRecentTokens,
		Window:           c.plan.budget.Window.Tokens,
		SummaryTokens:    c.settings.SummaryTokens,
		Instructions:     instructions,
		Thinking:         engine.ThinkingOff,
		StripUser:        prompt.StripInbound,
	})
	if errors.Is(err, agent.ErrNothingToCompact) {
		return res, false, nil
	}
	if err != nil {
		return res, false, fmt.Errorf("compact: %w", err)
	}
	// A summary is model output: it must not pass for gateway metadata nor
	// close its own <summary> wrapper.
	res.Summary = strings.ReplaceAll(prompt.Defuse(res.Summary), "</summary>", "</ summary>")
	// The entry and the session report the size of the whole context
	// (system prompt and tools included), before and after.
	if n, cerr := c.plan.tokens(ctx, c.info, msgs); cerr == nil {
		res.TokensBefore = n
	}
	firstKept := ""
	for i := res.FirstKept; i < len(items); i++ {
		if items[i].EntryID != "" {
			firstKept = items[i].EntryID
			break
		}
	}
	after := []engine.Message{{Role: engine.RoleUser, Content: []engine.Block{engine.TextBlock(transcript.CompactionSummaryPrefix + res.Summary + transcript.CompactionSummarySuffix)}}}
	after = append(after, msgs[res.FirstKept:]...)
	tokensAfter, cerr := c.plan.tokens(ctx, c.info, after)
	if cerr != nil {
		tokensAfter = 0
	}
	details, _ := json.Marshal(map[string]any{"trigger": trigger, "chunks": res.Chunks, "model": c.info.Ref, "tokensAfter": tokensAfter, "usage": res.Usage, "instructions": instructions})
	if _, err := c.g.cfg.Sessions.Compacted(c.ag.ID, c.key, res.Summary, firstKept, res.TokensBefore, tokensAfter, details); err != nil {
		return res, false, err
	}
	c.g.resetLevels()
	c.g.log.Info("compacted a session", "session", c.key, "trigger", trigger, "tokensBefore", res.TokensBefore, "tokensAfter", tokensAfter, "chunks", res.Chunks)
	return res, true, nil
}

// compactable reports whether msgs hold at least two user turns besides a
// leading summary: less is nothing to compact (agent.ErrNothingToCompact),
// and no reason to flush either.
func compactable(msgs []engine.Message) bool {
	turns := 0
	for i := range msgs {
		if msgs[i].Role == engine.RoleUser && !(i == 0 && strings.HasPrefix(msgs[i].Text(), transcript.CompactionSummaryPrefix)) {
			turns++
		}
	}
	return turns >= 2
}

// flushTools is the flush turn's only tool: memory_append.
type flushTools struct {
	workspace, path string
	wrote, calls    int
	written         func() // the agent's MemoryWritten hook, may be nil
}

var memoryAppendSpec = engine.ToolSpec{
	Name:        "memory_append",
	Description: "Append lasting notes to today's memory file (never overwrites).",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"the notes to append, as Markdown"}},"required":["text"]}`),
}

func (f *flushTools) Specs() []engine.ToolSpec { return []engine.ToolSpec{memoryAppendSpec} }

// Mutating: appends must run in order.
func (f *flushTools) Mutating(string) bool { return true }

// maxFlushChars bounds one flush's notes: a runaway model cannot fill the
// disk through it.
const maxFlushChars = 16 << 10

func (f *flushTools) Run(_ context.Context, call engine.ToolCall) engine.ToolResult {
	f.calls++
	if call.Name != memoryAppendSpec.Name {
		return engine.ErrorResult("tool %q is not available now: only memory_append is", call.Name)
	}
	var args struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(call.Arguments, &args); err != nil {
		return engine.ErrorResult("memory_append: arguments must be {\"text\": \"…\"}: %v", err)
	}
	text := strings.TrimSpace(strings.ToValidUTF8(args.Text, "\uFFFD"))
	if text == "" {
		return engine.ErrorResult("memory_append: text is empty")
	}
	if f.wrote+len(text) > maxFlushChars {
		return engine.ErrorResult("memory_append: at most %d characters per flush", maxFlushChars)
	}
	if err := appendNote(f.workspace, f.path, text); err != nil {
		return engine.ErrorResult("memory_append: %v", err)
	}
	f.wrote += len(text)
	if f.written != nil {
		f.written() // the memory index syncs before its next search
	}
	return engine.TextResult("Appended to " + f.path + ".")
}

// appendNote appends text to rel inside workspace, creating memory/ if
// needed. os.Root keeps it inside the workspace whatever symlinks say, and
// O_APPEND never overwrites.
func appendNote(workspace, rel, text string) error {
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return fmt.Errorf("open workspace: %w", err)
	}
	defer root.Close()
	if err := root.Mkdir(path.Dir(rel), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create %s: %w", path.Dir(rel), err)
	}
	// memory/ must be a directory and the note a file, not symlinks: a
	// link inside the workspace (to AGENTS.md, say) would turn "append to
	// today's note" into writing another file.
	if st, err := root.Lstat(path.Dir(rel)); err != nil || !st.IsDir() {
		return fmt.Errorf("%s is not a directory", path.Dir(rel))
	}
	if st, err := root.Lstat(rel); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", rel)
	}
	f, err := root.OpenFile(rel, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", rel, err)
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", rel)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); err == nil && ok && sys.Nlink > 1 {
		// A hard link could point at a file outside the workspace.
		err = fmt.Errorf("%s has other hard links; refusing to append to it", rel)
	}
	if err == nil {
		prefix := ""
		if st.Size() > 0 {
			prefix = "\n"
		}
		_, err = f.WriteString(prefix + text + "\n")
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// The note's directory entry must survive a crash too.
		if d, derr := root.Open(path.Dir(rel)); derr == nil {
			err = d.Sync()
			d.Close()
		}
	}
	return err
}

// writable reports whether dir accepts new files (the flush is skipped for
// a read-only workspace, as OpenClaw skips it for workspaceAccess "ro").
func writable(dir string) bool {
	f, err := os.CreateTemp(dir, ".openclaw-writable-*")
	if err != nil {
		return false
	}
	name := f.Name()
	f.Close()
	os.Remove(name)
	return true
}
