package gateway_test

import (
	"context"
	"encoding/json"
	"github.com/openclaw-edge/edge/engine/gateway"
	"github.com/openclaw-edge/edge/engine/gateway/gatewaytest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/agent"
	"github.com/openclaw-edge/edge/engine/prompt"
	"github.com/openclaw-edge/edge/engine/transcript"
)

// memoryModel plays a model with a small window: it echoes user turns at
// length, writes a note when asked to flush, and summarizes when asked to.
type memoryModel struct {
	*gatewaytest.Model
	flushes, summaries int
}

const boilerNote = "- the boiler code is 4711"

func (m *memoryModel) Stream(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error {
	m.Model.Record(req)
	last := req.Messages[len(req.Messages)-1]
	switch {
	case last.Role == engine.RoleToolResult:
		return gatewaytest.Reply("NO_REPLY")(ctx, req, emit)
	case strings.Contains(last.Text(), "Session nearing compaction"):
		m.flushes++
		return gatewaytest.CallTool("memory_append", map[string]string{"text": boilerNote})(ctx, req, emit)
	case len(req.Tools) == 0 && strings.Contains(req.System, "summar"):
		m.summaries++
		return gatewaytest.Reply("The user told stories about Lily and a red ball.")(ctx, req, emit)
	}
	return gatewaytest.Reply("Once upon a time "+strings.Repeat("there was a ball in the garden and ", 8)+"the end.")(ctx, req, emit)
}

// A long conversation on a small window: the flush writes the note once per
// compaction cycle, nothing of it reaches the user, compaction follows, and
// the next turn still sees what the flush stored.
func TestLongConversationFlushAndCompact(t *testing.T) {
	h := gatewaytest.NewHarness(t, "fake/model", nil)
	mm := &memoryModel{Model: h.Model}
	h.G.SetModels(gatewaytest.Models{M: h.Model, Window: 2048})
	// fakeModels hands out h.Model; route its calls through memoryModel.
	h.G.SetModels(modelsFunc(func() (agent.Model, gateway.ModelInfo) {
		return mm, gateway.ModelInfo{Ref: "fake/model", Provider: "fake", ID: "model", API: "openai-completions", ContextWindow: 2048}
	}))
	h.G.Agent("main").Compaction.FlushEnabled = true
	text := "Lily found a small red ball under the old oak tree in the garden, and she wondered who had lost it there. She asked her mother and her brother, but nobody knew."
	for i := range 12 {
		res, evs, err := h.Send(t, text)
		if err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
		if res.Reply == "" || strings.Contains(res.Reply, "NO_REPLY") {
			t.Fatalf("turn %d: reply %q", i+1, res.Reply)
		}
		for _, ev := range evs {
			if strings.Contains(ev.Text, "NO_REPLY") || strings.Contains(ev.Text, "boiler") || (ev.Tool != nil && ev.Tool.Name == "memory_append") {
				t.Fatalf("turn %d: the flush reached the user: %+v", i+1, ev)
			}
		}
	}
	e, _, err := h.Sessions.Get("main", "agent:main:main")
	if err != nil {
		t.Fatal(err)
	}
	if e.CompactionCount < 1 {
		t.Fatalf("no compaction in 12 long turns on a 2k window: %+v", e)
	}
	if mm.flushes < 1 || mm.flushes > e.CompactionCount+1 {
		t.Errorf("%d flushes for %d compactions: want one per compaction cycle", mm.flushes, e.CompactionCount)
	}
	note := filepath.Join(h.Workspace, prompt.DailyMemoryPath(time.Now()))
	data, err := os.ReadFile(note)
	if err != nil || !strings.Contains(string(data), boilerNote) {
		t.Fatalf("memory note %s: %q %v", note, data, err)
	}

	_, entries, err := h.Sessions.History("main", "agent:main:main")
	if err != nil {
		t.Fatal(err)
	}
	var compactions, flushEntries int
	for _, en := range entries {
		switch {
		case en.Type == transcript.EntryCompaction:
			compactions++
			if en.Summary == "" || en.TokensBefore == 0 {
				t.Errorf("compaction entry %+v", en)
			}
		case en.Type == transcript.EntryCustom && en.CustomType == gateway.MemoryFlushEntryType:
			flushEntries++
		case en.Message != nil:
			if strings.Contains(en.Message.Text(), "nearing compaction") || en.Message.Role == engine.RoleToolResult {
				t.Errorf("the flush turn is in the visible history: %+v", en.Message)
			}
		}
	}
	if compactions != e.CompactionCount || flushEntries != mm.flushes {
		t.Errorf("transcript: %d compactions (entry says %d), %d flush entries (%d flushes)", compactions, e.CompactionCount, flushEntries, mm.flushes)
	}

	// The next turn sees the summary first and the note the flush wrote.
	res, _, err := h.Send(t, "What is the boiler code?")
	if err != nil {
		t.Fatal(err)
	}
	_ = res
	reqs := h.Model.Requests()
	last := reqs[len(reqs)-1]
	if first := last.Messages[0].Text(); !strings.HasPrefix(first, transcript.CompactionSummaryPrefix) {
		t.Errorf("the context does not start with the summary: %.80q", first)
	}
	var sees bool
	for _, m := range last.Messages {
		if m.Role == engine.RoleUser && strings.Contains(m.Text(), boilerNote) {
			sees = true
		}
	}
	if !sees {
		t.Error("the turn after compaction does not see the note the flush stored")
	}
	for _, r := range reqs {
		if strings.Contains(r.System, "Current Date & Time\n") && strings.Contains(r.System, "Runtime:") {
			t.Fatal("the runtime line is in the system prompt")
		}
	}
}

// modelsFunc resolves every ref to one model.
type modelsFunc func() (agent.Model, gateway.ModelInfo)

func (f modelsFunc) Resolve([]string, func(gateway.Switch)) (agent.Model, gateway.ModelInfo, func() string, error) {
	m, info := f()
	return m, info, func() string { return "" }, nil
}
func (f modelsFunc) Refs() []string { return []string{"fake/model"} }

// A [continue] round is a custom entry, never a user turn, and the next
// context joins the two parts of the reply.
func TestContinueIsCustomEntry(t *testing.T) {
	cut := func(_ context.Context, _ *engine.ChatRequest, emit func(engine.Event)) error {
		emit(engine.Event{Type: engine.EventTextDelta, Text: "first half, "})
		emit(engine.Event{Type: engine.EventMessageEnd, StopReason: engine.StopLength, Usage: &engine.Usage{Input: 10, Output: 5}})
		return nil
	}
	h := gatewaytest.NewHarness(t, "fake/model", nil, cut, gatewaytest.Reply("second half."))
	res, _, err := h.Send(t, "tell me")
	if err != nil || res.Reply != "first half, second half." {
		t.Fatalf("reply %+v %v", res, err)
	}
	_, entries, _ := h.Sessions.History("main", "agent:main:main")
	var kinds []string
	for _, e := range entries {
		switch {
		case e.Message != nil:
			kinds = append(kinds, string(e.Message.Role))
		default:
			kinds = append(kinds, string(e.Type)+":"+e.CustomType)
		}
	}
	if got := strings.Join(kinds, " "); got != "user assistant custom:"+gateway.ContinueEntryType+" assistant" {
		t.Errorf("entries: %s", got)
	}
	if _, _, err := h.Send(t, "again"); err != nil {
		t.Fatal(err)
	}
	reqs := h.Model.Requests()
	msgs := reqs[len(reqs)-1].Messages
	if len(msgs) != 3 || msgs[1].Text() != "first half, second half." {
		t.Errorf("next context: %d messages, reply %q", len(msgs), msgs[1].Text())
	}
}

// A message that cannot fit even the slimmest prompt is refused with the
// knob to change — never "/new".
func TestMessageTooLongForWindow(t *testing.T) {
	h := gatewaytest.NewHarness(t, "fake/model", nil)
	h.G.SetModels(gatewaytest.Models{M: h.Model, Window: 1024})
	_, _, err := h.Send(t, strings.Repeat("word ", 2000))
	var ae interface{ Error() string }
	if err == nil {
		t.Fatal("a 10k-character message fit a 1k window")
	}
	ae = err
	msg := ae.Error()
	if !strings.Contains(msg, "context window is 1024") || !strings.Contains(msg, "shorter message") || strings.Contains(msg, "/new") {
		t.Errorf("error %q", msg)
	}
	if len(h.Model.Requests()) != 0 {
		t.Error("the model was called")
	}
}

// A context-overflow error from the provider compacts and retries once.
func TestOverflowCompactsAndRetries(t *testing.T) {
	h := gatewaytest.NewHarness(t, "fake/model", nil, gatewaytest.Reply("one"), gatewaytest.Reply("two"),
		gatewaytest.Fail(&engine.ModelError{Kind: engine.ErrContextOverflow, Message: "prompt too long"}),
		gatewaytest.Reply("summary of one and two"), gatewaytest.Reply("three"))
	for _, text := range []string{"a", "b"} {
		if _, _, err := h.Send(t, text); err != nil {
			t.Fatal(err)
		}
	}
	res, _, err := h.Send(t, "c")
	if err != nil || res.Reply != "three" {
		t.Fatalf("after overflow: %+v %v", res, err)
	}
	e, _, _ := h.Sessions.Get("main", "agent:main:main")
	if e.CompactionCount != 1 {
		t.Errorf("compactionCount = %d", e.CompactionCount)
	}
	_, entries, _ := h.Sessions.History("main", "agent:main:main")
	for _, en := range entries {
		if en.Type == transcript.EntryCompaction {
			var d map[string]any
			_ = json.Unmarshal(en.Details, &d)
			if d["trigger"] != gateway.TriggerOverflow {
				t.Errorf("trigger %v", d["trigger"])
			}
			return
		}
	}
	t.Error("no compaction entry")
}

// /compact [instructions] compacts now, with the focus passed on.
func TestCompactCommand(t *testing.T) {
	h := gatewaytest.NewHarness(t, "fake/model", nil, gatewaytest.Reply("one"), gatewaytest.Reply("two"))
	res, _, err := h.Send(t, "/compact")
	if err != nil || !strings.Contains(res.Reply, "Nothing to compact") {
		t.Fatalf("empty session: %+v %v", res, err)
	}
	for _, text := range []string{"a", "b"} {
		if _, _, err := h.Send(t, text); err != nil {
			t.Fatal(err)
		}
	}
	res, _, err = h.Send(t, "/compact keep the names")
	if err != nil || !strings.Contains(res.Reply, "Compacted:") || !strings.Contains(res.Reply, "#1") {
		t.Fatalf("/compact: %+v %v", res, err)
	}
	reqs := h.Model.Requests()
	if sys := reqs[len(reqs)-1].System; !strings.Contains(sys, "keep the names") {
		t.Errorf("instructions not passed to the summarizer: %.200q", sys)
	}
	if _, _, err := h.Send(t, "c"); err != nil {
		t.Fatal(err)
	}
	reqs = h.Model.Requests()
	if first := reqs[len(reqs)-1].Messages[0].Text(); !strings.HasPrefix(first, transcript.CompactionSummaryPrefix) {
		t.Errorf("next turn does not start with the summary: %.60q", first)
	}
}

// A remote model without a configured maxTokens gets the provider's own
// default, not a cap of the budget's.
func TestRemoteReplyNotCapped(t *testing.T) {
	h := gatewaytest.NewHarness(t, "fake/model", nil, gatewaytest.Reply("hi"))
	if _, _, err := h.Send(t, "hello"); err != nil {
		t.Fatal(err)
	}
	if got := h.Model.Requests()[0].MaxTokens; got != 0 {
		t.Errorf("MaxTokens = %d, want 0 (the provider's default)", got)
	}
}

// One long message degrades the prompt for its own turn only.
func TestLongMessageDoesNotStickLevel(t *testing.T) {
	h := gatewaytest.NewHarness(t, "fake/model", nil)
	h.G.SetModels(gatewaytest.Models{M: h.Model, Window: 8192})
	if _, _, err := h.Send(t, "short"); err != nil {
		t.Fatal(err)
	}
	first := h.Model.Requests()[0].System
	if _, _, err := h.Send(t, strings.Repeat("long words here ", 1200)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Send(t, "short again"); err != nil {
		t.Fatal(err)
	}
	reqs := h.Model.Requests()
	if last := reqs[len(reqs)-1].System; last != first {
		t.Errorf("the prompt stayed degraded after the long message: %d vs %d bytes", len(last), len(first))
	}
}

// After /compact on a local model the new prompt prefix (system prompt,
// tools, the summary, the kept turns) is sent once in the background with
// a one-token reply, in the session's own cache slot, and the next turn's
// request starts with exactly that prefix: the runner evaluates only the
// new message. A remote model is never sent it.
func TestPrewarmAfterCompact(t *testing.T) {
	for _, local := range []bool{true, false} {
		t.Run(map[bool]string{true: "local", false: "remote"}[local], func(t *testing.T) {
			h := gatewaytest.NewHarness(t, "fake/model", nil)
			h.G.SetModels(gatewaytest.Models{M: h.Model, Local: local})
			for _, text := range []string{"a", "b", "c"} {
				if _, _, err := h.Send(t, text); err != nil {
					t.Fatal(err)
				}
			}
			if res, _, err := h.Send(t, "/compact"); err != nil || !strings.Contains(res.Reply, "Compacted:") {
				t.Fatalf("/compact: %+v %v", res, err)
			}
			h.G.WaitPrewarms()
			reqs := h.Model.Requests()
			warm := reqs[len(reqs)-1]
			if !local {
				if warm.MaxTokens == 1 {
					t.Fatalf("a remote model was prewarmed: %+v", warm)
				}
				return
			}
			e, _, _ := h.Sessions.Get("main", "agent:main:main")
			if warm.MaxTokens != 1 || warm.SessionID != e.SessionID || len(warm.Tools) == 0 {
				t.Fatalf("prewarm request: maxTokens %d, session %q (want %q), %d tools", warm.MaxTokens, warm.SessionID, e.SessionID, len(warm.Tools))
			}
			if first := warm.Messages[0].Text(); !strings.HasPrefix(first, transcript.CompactionSummaryPrefix) {
				t.Fatalf("prewarm does not start with the summary: %.60q", first)
			}
			if _, _, err := h.Send(t, "d"); err != nil {
				t.Fatal(err)
			}
			reqs = h.Model.Requests()
			next := reqs[len(reqs)-1]
			if next.System != warm.System || !reflect.DeepEqual(next.Tools, warm.Tools) || next.SessionID != warm.SessionID {
				t.Fatal("the next turn's system prompt, tools or cache slot differ from the prewarmed ones")
			}
			// The prewarm ends with the beginning of the next message (up
			// to its time); the next turn sends the same messages before
			// it, and a message that begins with it.
			k := len(warm.Messages) - 1
			if len(next.Messages) != len(warm.Messages) || !reflect.DeepEqual(next.Messages[:k], warm.Messages[:k]) {
				t.Fatalf("the next turn's messages do not extend the prewarmed ones: %d vs %d", len(next.Messages), len(warm.Messages))
			}
			begin, got := warm.Messages[k].Text(), next.Messages[k].Text()
			if !strings.HasSuffix(begin, `"timestamp":"`) || !strings.HasPrefix(got, begin) || !strings.HasSuffix(got, "d") {
				t.Fatalf("the next message\n%q\ndoes not begin with the prewarmed\n%q", got, begin)
			}
			// Nothing was written: the transcript holds the turns and the
			// compaction only.
			if roles := h.EntryRoles(t); slices.Contains(roles, "assistant!") {
				t.Fatalf("entries: %v", roles)
			}
		})
	}
}
