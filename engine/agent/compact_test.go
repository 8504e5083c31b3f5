package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/openclaw-edge/edge/engine"
)

// fakeSummarizer is a Model that answers each call with reply(i, req) and
// records the requests.
type fakeSummarizer struct {
	mu    sync.Mutex
	reqs  []*engine.ChatRequest
	reply func(i int, req *engine.ChatRequest) (string, error)
}

func (f *fakeSummarizer) Stream(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error {
	f.mu.Lock()
	i := len(f.reqs)
	cp := *req
	cp.Messages = append([]engine.Message(nil), req.Messages...)
	f.reqs = append(f.reqs, &cp)
	f.mu.Unlock()
	text, err := f.reply(i, req)
	if err != nil {
		return err
	}
	emit(engine.Event{Type: engine.EventThinkingDelta, Text: "THINKING-NOT-IN-SUMMARY"})
	for _, w := range strings.SplitAfter(text, " ") {
		emit(engine.Event{Type: engine.EventTextDelta, Text: w})
	}
	emit(engine.Event{Type: engine.EventMessageEnd, StopReason: engine.StopEnd, Usage: &engine.Usage{Input: 10, Output: 2, TotalTokens: 12}})
	return nil
}

func (f *fakeSummarizer) requests() []*engine.ChatRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*engine.ChatRequest(nil), f.reqs...)
}

func replyAll(s string) func(int, *engine.ChatRequest) (string, error) {
	return func(int, *engine.ChatRequest) (string, error) { return s, nil }
}

func isMerge(req *engine.ChatRequest) bool {
	return strings.HasPrefix(req.System, mergePrompt) || strings.HasPrefix(req.System, shortMergePrompt)
}

// runeCount is a deterministic Counter: a token per 4 runes (rounded up) of
// all of a message's blocks, plus one a message.
func runeCount(_ context.Context, msgs []engine.Message) (int, error) {
	n := 0
	for _, m := range msgs {
		r := 0
		for _, b := range m.Content {
			r += utf8.RuneCountInString(b.Text) + utf8.RuneCountInString(b.Thinking) + utf8.RuneCountInString(b.Name) + len(b.Arguments)
		}
		n += 1 + (r+3)/4
	}
	return n, nil
}

// tenEach counts 10 tokens a message, whatever it holds.
func tenEach(_ context.Context, msgs []engine.Message) (int, error) { return 10 * len(msgs), nil }

func cu(text string) engine.Message {
	return engine.Message{Role: engine.RoleUser, Content: []engine.Block{engine.TextBlock(text)}}
}

func ca(text string) engine.Message {
	return engine.Message{Role: engine.RoleAssistant, Content: []engine.Block{engine.TextBlock(text)}, StopReason: engine.StopEnd}
}

func cacall(id, name, args string) engine.Message {
	return engine.Message{Role: engine.RoleAssistant, StopReason: engine.StopToolUse,
		Content: []engine.Block{{Type: engine.BlockToolCall, ID: id, Name: name, Arguments: json.RawMessage(args)}}}
}

func ctr(id, name, text string) engine.Message {
	return engine.Message{Role: engine.RoleToolResult, ToolCallID: id, ToolName: name, Content: []engine.Block{engine.TextBlock(text)}}
}

func csum(text string) engine.Message {
	return cu(compactionSummaryPrefix + text + compactionSummarySuffix)
}

// userText is the text of the single user message of req.
func userText(t *testing.T, req *engine.ChatRequest) string {
	t.Helper()
	if len(req.Messages) != 1 || req.Messages[0].Role != engine.RoleUser {
		t.Fatalf("summarizer request has messages %+v, want one user message", req.Messages)
	}
	return req.Messages[0].Text()
}

func TestCompactCutPoints(t *testing.T) {
	turns := []engine.Message{ // 0 u, 1 a, 2 u, 3 a(call), 4 tr, 5 a, 6 u, 7 a
		cu("q0"), ca("a0"), cu("q1"), cacall("c1", "read", `{"path":"x"}`), ctr("c1", "read", "x body"), ca("a1"), cu("q2"), ca("a2"),
	}
	bigTurn := []engine.Message{ // 0 u, 1 a, 2 u, 3 a(call), 4 tr, 5 a(call), 6 tr, 7 a
		cu("q0"), ca("a0"), cu("q1"), cacall("c1", "read", `{}`), ctr("c1", "read", "r1"), cacall("c2", "exec", `{}`), ctr("c2", "exec", "r2"), ca("a1"),
	}
	endsInResult := []engine.Message{cu("q0"), ca("a0"), cu("q1"), cacall("c1", "read", `{}`), ctr("c1", "read", "r1")}
	withSummary := []engine.Message{csum("earlier things"), cu("q1"), ca("a1"), cu("q2"), ca("a2")}
	tests := []struct {
		name string
		msgs []engine.Message
		keep int
		want int // FirstKept, or -1 for ErrNothingToCompact
	}{
		{"turn boundary", turns, 25, 6},
		{"assistant moves to next user", turns, 35, 6},
		{"tool result never first kept", turns, 45, 6},
		{"assistant with calls moves to next user", turns, 55, 6},
		{"two whole turns", turns, 65, 2},
		{"all fits: keep last turn", turns, 1000, 6},
		{"big last turn: cut at its last assistant", bigTurn, 15, 7},
		{"big last turn: skip tool result", bigTurn, 25, 7},
		{"big last turn: assistant with its results", bigTurn, 35, 5},
		{"nothing fits: summarize all", bigTurn, 5, 8},
		{"only tool results fit: keep none", endsInResult, 15, 5},
		{"earlier summary", withSummary, 25, 3},
		{"earlier summary, all fits", withSummary, 1000, 3},
		{"leading partial turn counts as a turn", []engine.Message{ca("a0"), cu("q1"), ca("a1")}, 1000, 1},
		{"empty", nil, 1000, -1},
		{"one turn", []engine.Message{cu("q0"), cacall("c", "read", `{}`), ctr("c", "read", "r"), ca("a0")}, 1000, -1},
		{"summary and one turn", []engine.Message{csum("s"), cu("q1"), ca("a1")}, 1000, -1},
		{"summary alone", []engine.Message{csum("s")}, 1000, -1},
		{"summary alone, nothing fits", []engine.Message{csum("s")}, 0, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &fakeSummarizer{reply: replyAll("the summary")}
			res, err := Compact(context.Background(), CompactRequest{
				Model: m, Messages: tt.msgs, Count: tenEach, KeepRecentTokens: tt.keep, Window: 100000, SummaryTokens: 500,
			})
			if tt.want < 0 {
				if !errors.Is(err, ErrNothingToCompact) {
					t.Fatalf("err = %v, want ErrNothingToCompact", err)
				}
				if n := len(m.requests()); n != 0 {
					t.Errorf("%d summarizer calls, want none", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.FirstKept != tt.want {
				t.Errorf("FirstKept = %d, want %d", res.FirstKept, tt.want)
			}
			if res.FirstKept < len(tt.msgs) && tt.msgs[res.FirstKept].Role == engine.RoleToolResult {
				t.Errorf("first kept message is a tool result")
			}
			if res.Summary != "the summary" || res.Chunks != 1 {
				t.Errorf("Summary %q, Chunks %d", res.Summary, res.Chunks)
			}
			if res.TokensBefore != 10*len(tt.msgs) {
				t.Errorf("TokensBefore = %d, want %d", res.TokensBefore, 10*len(tt.msgs))
			}
			// The summarized text holds exactly the messages before the cut.
			text := userText(t, m.requests()[0])
			for i, msg := range tt.msgs {
				s := msg.Text()
				if msg.Role == engine.RoleAssistant && s == "" {
					continue
				}
				if _, ok := summaryText(msg); ok {
					if !strings.HasPrefix(strings.TrimPrefix(text, "Conversation to summarize:\n\n<conversation>\n"), "Previous summary:\n"+strings.TrimSuffix(strings.TrimPrefix(s, compactionSummaryPrefix), compactionSummarySuffix)) {
						t.Errorf("earlier summary not at the top as Previous summary:\n%s", text)
					}
					continue
				}
				if in := strings.Contains(text, s); in != (i < res.FirstKept) {
					t.Errorf("message %d (%q) summarized = %v, want %v", i, s, in, i < res.FirstKept)
				}
			}
		})
	}
}

func TestCompactSerialization(t *testing.T) {
	long := strings.Repeat("x", 600)
	msgs := []engine.Message{
		{Role: engine.RoleUser, Content: []engine.Block{
			engine.TextBlock("Inbound metadata (trusted, generated by the gateway):\n```json\n{\"channel\":\"cli\"}\n```\n\nplease read /etc/hosts"),
			{Type: engine.BlockImage, Data: "aGk=", MimeType: "image/png"},
		}},
		{Role: engine.RoleAssistant, StopReason: engine.StopToolUse, Content: []engine.Block{
			{Type: engine.BlockThinking, Thinking: "secret musings"},
			engine.TextBlock("Reading it."),
			{Type: engine.BlockToolCall, ID: "c1", Name: "read", Arguments: json.RawMessage(`{ "path": "/etc/hosts", "pad": "` + long + `" }`)},
		}},
		{Role: engine.RoleToolResult, ToolCallID: "c1", Content: []engine.Block{engine.TextBlock("HEAD" + strings.Repeat("m", 3000) + "TAIL")}, IsError: true},
		ca("It failed."),
		cu(ContinuePrompt),
		ca("Done."),
		cu("next question"),
		ca("answer"),
	}
	m := &fakeSummarizer{reply: replyAll("ok")}
	res, err := Compact(context.Background(), CompactRequest{
		Model: m, ModelID: "tiny", SessionID: "s1", Messages: msgs, Count: runeCount, KeepRecentTokens: 10, Window: 100000, SummaryTokens: 300,
		Instructions: "focus on hosts", Thinking: "",
		StripUser: func(s string) string {
			_, rest, ok := strings.Cut(s, "```\n\n")
			if !ok {
				return s
			}
			return rest
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.FirstKept != 6 {
		t.Fatalf("FirstKept = %d, want 6", res.FirstKept)
	}
	reqs := m.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d calls, want 1", len(reqs))
	}
	req := reqs[0]
	if req.Model != "tiny" || req.MaxTokens != 300 || req.Thinking != engine.ThinkingOff || len(req.Tools) != 0 || req.SessionID != "s1:compact" {
		t.Errorf("request: model %q max %d thinking %q tools %d session %q", req.Model, req.MaxTokens, req.Thinking, len(req.Tools), req.SessionID)
	}
	if !(strings.HasPrefix(req.System, summarizerPrompt) || strings.HasPrefix(req.System, shortSummarizerPrompt)) || !strings.Contains(req.System, "focus on hosts") {
		t.Errorf("system prompt lacks the summarizer prompt or the instructions:\n%s", req.System)
	}
	text := userText(t, req)
	for _, want := range []string{
		"User: please read /etc/hosts\n[image]",
		"Assistant: Reading it.\nAssistant called read({\"path\":\"/etc/hosts\",\"pad\":\"xxx",
		"Tool result (read, error): HEADmmm",
		"mmmTAIL",
		" chars omitted ...]",
		"Assistant: It failed.",
		"Assistant: Done.",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("summarizer text lacks %q:\n%s", want, text)
		}
	}
	for _, bad := range []string{"Inbound metadata", "secret musings", "[continue]", "next question", strings.Repeat("x", 400), strings.Repeat("m", 1200)} {
		if strings.Contains(text, bad) {
			t.Errorf("summarizer text holds %.40q", bad)
		}
	}
	if strings.Contains(res.Summary, "THINKING") || res.Summary != "ok" {
		t.Errorf("Summary = %q", res.Summary)
	}
}

// manyTurns returns n turns of a user question and an assistant answer,
// each about size tokens under runeCount.
func manyTurns(n, size int) []engine.Message {
	var msgs []engine.Message
	for i := range n {
		pad := strings.Repeat("z", size*4-20)
		msgs = append(msgs, cu(fmt.Sprintf("question %03d %s", i, pad)), ca(fmt.Sprintf("answer %03d %s", i, pad)))
	}
	return msgs
}

// checkFits checks every request fits the window: system and user message
// counted as user messages, plus the output cap.
func checkFits(t *testing.T, reqs []*engine.ChatRequest, window int) {
	t.Helper()
	for i, req := range reqs {
		sys, _ := runeCount(context.Background(), []engine.Message{cu(req.System)})
		msg, _ := runeCount(context.Background(), req.Messages)
		if sys+msg+req.MaxTokens > window {
			t.Errorf("call %d: %d + %d + %d tokens > window %d", i, sys, msg, req.MaxTokens, window)
		}
	}
}

func TestCompactChunksAndMerge(t *testing.T) {
	msgs := manyTurns(30, 100)
	m := &fakeSummarizer{reply: func(i int, req *engine.ChatRequest) (string, error) {
		if isMerge(req) {
			return "MERGED", nil
		}
		return fmt.Sprintf("partial %d", i), nil
	}}
	res, err := Compact(context.Background(), CompactRequest{
		Model: m, Messages: msgs, Count: runeCount, KeepRecentTokens: 250, Window: 1500, SummaryTokens: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	if res.Chunks < 3 || len(reqs) != res.Chunks+1 {
		t.Fatalf("Chunks %d, calls %d: want several chunks and one merge", res.Chunks, len(reqs))
	}
	checkFits(t, reqs, 1500)
	for i, req := range reqs[:res.Chunks] {
		if isMerge(req) {
			t.Errorf("call %d is a merge", i)
		}
		if want := fmt.Sprintf("(part %d of %d)", i+1, res.Chunks); !strings.Contains(userText(t, req), want) {
			t.Errorf("call %d lacks %q", i, want)
		}
	}
	// Chunks follow the history in order, each message in exactly one.
	var all strings.Builder
	for _, req := range reqs[:res.Chunks] {
		all.WriteString(userText(t, req))
	}
	last := -1
	for i := 0; i < res.FirstKept; i++ {
		s := msgs[i].Text()[:len("question 000")]
		at := strings.Index(all.String(), s)
		if at < 0 || strings.Count(all.String(), s) != 1 || at < last {
			t.Fatalf("message %d (%s) at %d after %d, count %d", i, s, at, last, strings.Count(all.String(), s))
		}
		last = at
	}
	merge := userText(t, reqs[len(reqs)-1])
	if !isMerge(reqs[len(reqs)-1]) || !strings.Contains(merge, "partial 0") || strings.Index(merge, "partial 0") > strings.Index(merge, "partial 1") {
		t.Errorf("last call is not the merge of the partials in order:\n%s", merge)
	}
	if res.Summary != "MERGED" {
		t.Errorf("Summary = %q", res.Summary)
	}
	if want := 12 * len(reqs); res.Usage.TotalTokens != want {
		t.Errorf("Usage.TotalTokens = %d, want %d", res.Usage.TotalTokens, want)
	}
	if res.FirstKept != 58 {
		t.Errorf("FirstKept = %d, want 58 (the last turn)", res.FirstKept)
	}
}

func TestCompactHierarchicalMerge(t *testing.T) {
	msgs := manyTurns(40, 100)
	long := strings.Repeat("word ", 200) // capped to SummaryTokens
	m := &fakeSummarizer{reply: func(i int, req *engine.ChatRequest) (string, error) {
		if isMerge(req) {
			return fmt.Sprintf("merge%d %s", i, long), nil
		}
		return fmt.Sprintf("partial%d %s", i, long), nil
	}}
	res, err := Compact(context.Background(), CompactRequest{
		Model: m, Messages: msgs, Count: runeCount, KeepRecentTokens: 250, Window: 1500, SummaryTokens: 150,
	})
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	checkFits(t, reqs, 1500)
	merges := len(reqs) - res.Chunks
	if merges < 2 {
		t.Fatalf("%d merge calls for %d chunks, want a hierarchy", merges, res.Chunks)
	}
	if want := fmt.Sprintf("merge%d ", len(reqs)-1); !strings.HasPrefix(res.Summary, want) {
		t.Errorf("Summary %.30q does not come from the last merge %q", res.Summary, want)
	}
	if n, _ := runeCount(context.Background(), []engine.Message{cu(res.Summary)}); n > 150 {
		t.Errorf("summary is %d tokens, cap 150", n)
	}
}

func TestCompactEmptyMergeJoinsInOrder(t *testing.T) {
	msgs := manyTurns(30, 100)
	m := &fakeSummarizer{reply: func(i int, req *engine.ChatRequest) (string, error) {
		if isMerge(req) {
			return "  \n", nil
		}
		return fmt.Sprintf("partial-%d", i), nil
	}}
	res, err := Compact(context.Background(), CompactRequest{
		Model: m, Messages: msgs, Count: runeCount, KeepRecentTokens: 250, Window: 1500, SummaryTokens: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	prev := -1
	for i := range res.Chunks {
		at := strings.Index(res.Summary, fmt.Sprintf("partial-%d", i))
		if at <= prev {
			t.Fatalf("partial-%d at %d in %q", i, at, res.Summary)
		}
		prev = at
	}
}

func TestCompactEmptySummaryFallsBack(t *testing.T) {
	msgs := []engine.Message{
		csum("we talked about cats"),
		cu("What is the capital of France?\nsecond line"), ca("Paris."),
		cu("  \n  And of Spain?"), ca("Madrid."),
		cu("thanks"), ca("bye"),
	}
	m := &fakeSummarizer{reply: replyAll(" \n\t ")}
	res, err := Compact(context.Background(), CompactRequest{
		Model: m, Messages: msgs, Count: runeCount, KeepRecentTokens: 8, Window: 100000, SummaryTokens: 200,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Previous summary: we talked about cats", "- User: What is the capital of France?", "- User: And of Spain?"} {
		if !strings.Contains(res.Summary, want) {
			t.Errorf("extractive summary lacks %q:\n%s", want, res.Summary)
		}
	}
	if strings.Contains(res.Summary, "second line") || strings.Contains(res.Summary, "thanks") {
		t.Errorf("extractive summary holds more than first lines of summarized messages:\n%s", res.Summary)
	}

	// Cut to the cap, whole lines first.
	var many []engine.Message
	for i := range 50 {
		many = append(many, cu(fmt.Sprintf("user line number %d with some words", i)), ca("ok"))
	}
	res, err = Compact(context.Background(), CompactRequest{
		Model: &fakeSummarizer{reply: replyAll("")}, Messages: many, Count: runeCount, KeepRecentTokens: 5, Window: 100000, SummaryTokens: 60,
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := runeCount(context.Background(), []engine.Message{cu(res.Summary)}); n > 60 || !strings.Contains(res.Summary, "- User: user line number 0 ") {
		t.Errorf("summary of %d tokens:\n%s", n, res.Summary)
	}
	if strings.HasSuffix(res.Summary, "…") {
		t.Errorf("summary cut mid-line though whole lines fit:\n%s", res.Summary)
	}

	// A chunk with no user message falls back to first lines of the rest.
	res, err = Compact(context.Background(), CompactRequest{
		Model:    &fakeSummarizer{reply: replyAll("")},
		Messages: []engine.Message{ca("lead-in answer"), cacall("c", "exec", `{"cmd":"ls"}`), ctr("c", "exec", "a.txt"), cu("q"), ca("a")},
		Count:    runeCount, KeepRecentTokens: 1000, Window: 100000, SummaryTokens: 200,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Summary, "lead-in answer") || !strings.Contains(res.Summary, `exec({"cmd":"ls"})`) {
		t.Errorf("fallback without user messages:\n%s", res.Summary)
	}
}

func TestCompactErrors(t *testing.T) {
	boom := errors.New("boom")
	m := &fakeSummarizer{reply: func(int, *engine.ChatRequest) (string, error) { return "", boom }}
	res, err := Compact(context.Background(), CompactRequest{
		Model: m, Messages: manyTurns(4, 20), Count: runeCount, KeepRecentTokens: 10, Window: 100000, SummaryTokens: 100,
	})
	if !errors.Is(err, boom) || res.Summary != "" {
		t.Errorf("err = %v, res %+v; want boom wrapped", err, res)
	}

	// An error event without an error return counts as an error.
	evErr := &engine.ModelError{Kind: engine.ErrUnreachable, Message: "down"}
	_, err = Compact(context.Background(), CompactRequest{
		Model: modelFunc(func(_ context.Context, _ *engine.ChatRequest, emit func(engine.Event)) error {
			emit(engine.Event{Type: engine.EventError, Err: evErr})
			return nil
		}),
		Messages: manyTurns(4, 20), Count: runeCount, KeepRecentTokens: 10, Window: 100000, SummaryTokens: 100,
	})
	if !errors.Is(err, evErr) {
		t.Errorf("err = %v, want the error event's", err)
	}

	countErr := errors.New("tokenizer down")
	_, err = Compact(context.Background(), CompactRequest{
		Model: m, Messages: manyTurns(4, 20), KeepRecentTokens: 10, Window: 100000,
		Count: func(context.Context, []engine.Message) (int, error) { return 0, countErr },
	})
	if !errors.Is(err, countErr) {
		t.Errorf("err = %v, want the counter's", err)
	}

	for name, req := range map[string]CompactRequest{
		"no model":     {Messages: manyTurns(4, 20), Window: 1000},
		"no window":    {Model: m, Messages: manyTurns(4, 20)},
		"window small": {Model: m, Messages: manyTurns(4, 20), Count: runeCount, Window: 300},
	} {
		if _, err := Compact(context.Background(), req); err == nil || errors.Is(err, ErrNothingToCompact) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

type modelFunc func(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error

func (f modelFunc) Stream(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error {
	return f(ctx, req, emit)
}

func TestCompactCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := &fakeSummarizer{reply: replyAll("x")}
	if _, err := Compact(ctx, CompactRequest{Model: m, Messages: manyTurns(4, 20), Count: runeCount, Window: 100000}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled before: err = %v", err)
	}
	if n := len(m.requests()); n != 0 {
		t.Errorf("%d calls after cancel", n)
	}

	ctx, cancel = context.WithCancel(context.Background())
	started := make(chan struct{})
	blocking := modelFunc(func(ctx context.Context, _ *engine.ChatRequest, _ func(engine.Event)) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	})
	done := make(chan error, 1)
	go func() {
		_, err := Compact(ctx, CompactRequest{Model: blocking, Messages: manyTurns(4, 20), Count: runeCount, Window: 100000})
		done <- err
	}()
	<-started
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("canceled during a call: err = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Compact did not return after cancel")
	}

	// A model that ignores the context and returns text: still canceled.
	ctx, cancel = context.WithCancel(context.Background())
	ignoring := modelFunc(func(_ context.Context, _ *engine.ChatRequest, emit func(engine.Event)) error {
		cancel()
		emit(engine.Event{Type: engine.EventTextDelta, Text: "sum"})
		return nil
	})
	if _, err := Compact(ctx, CompactRequest{Model: ignoring, Messages: manyTurns(4, 20), Count: runeCount, Window: 100000}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled in a call that returned: err = %v", err)
	}
}

func TestCompactSummaryCap(t *testing.T) {
	long := strings.Repeat("lorem ipsum dolor ", 400)
	for _, capTok := range []int{20, 50, 300} {
		m := &fakeSummarizer{reply: replyAll(long)}
		res, err := Compact(context.Background(), CompactRequest{
			Model: m, Messages: manyTurns(3, 20), Count: runeCount, KeepRecentTokens: 10, Window: 100000, SummaryTokens: capTok,
		})
		if err != nil {
			t.Fatal(err)
		}
		n, _ := runeCount(context.Background(), []engine.Message{cu(res.Summary)})
		if n > capTok || n < capTok-6 || !strings.HasSuffix(res.Summary, "…") || !strings.HasPrefix(res.Summary, "lorem ipsum") {
			t.Errorf("cap %d: summary of %d tokens: %.60q…%q", capTok, n, res.Summary, res.Summary[max(0, len(res.Summary)-10):])
		}
	}

	// SummaryTokens 0, or too big for the window, is lowered to a third of
	// what the prompt leaves.
	m := &fakeSummarizer{reply: replyAll(long)}
	res, err := Compact(context.Background(), CompactRequest{
		Model: m, Messages: manyTurns(3, 20), Count: runeCount, KeepRecentTokens: 10, Window: 1500, SummaryTokens: 5000,
	})
	if err != nil {
		t.Fatal(err)
	}
	checkFits(t, m.requests(), 1500)
	if mt := m.requests()[0].MaxTokens; mt >= 500 || mt < 200 {
		t.Errorf("MaxTokens = %d", mt)
	}
	if n, _ := runeCount(context.Background(), []engine.Message{cu(res.Summary)}); n > m.requests()[0].MaxTokens {
		t.Errorf("summary %d tokens > cap %d", n, m.requests()[0].MaxTokens)
	}
}

func TestCompactHugeMessage(t *testing.T) {
	huge := "START " + strings.Repeat("blah ", 20000) + " END"
	msgs := []engine.Message{cu(huge), ca("ok"), cu("q2"), ca("a2")}
	m := &fakeSummarizer{reply: replyAll("sum")}
	res, err := Compact(context.Background(), CompactRequest{
		Model: m, Messages: msgs, Count: runeCount, KeepRecentTokens: 10, Window: 1500, SummaryTokens: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	checkFits(t, reqs, 1500)
	if res.FirstKept != 2 || res.Summary != "sum" {
		t.Fatalf("res %+v", res)
	}
	var text string
	for _, req := range reqs[:res.Chunks] {
		text += userText(t, req)
	}
	for _, want := range []string{"User: START blah", "chars omitted to fit the summarizer's window", "blah  END", "Assistant: ok"} {
		if !strings.Contains(text, want) {
			t.Errorf("chunk lacks %q", want)
		}
	}
}

func TestEstimateTokens(t *testing.T) {
	n, err := estimateTokens(context.Background(), []engine.Message{cu(strings.Repeat("a", 400)), {Role: engine.RoleUser, Content: []engine.Block{{Type: engine.BlockImage}}}})
	if err != nil || n != 4+100+4+1200 {
		t.Errorf("estimateTokens = %d, %v", n, err)
	}
	// Compact works without a counter.
	res, err := Compact(context.Background(), CompactRequest{
		Model: &fakeSummarizer{reply: replyAll("s")}, Messages: manyTurns(3, 20), KeepRecentTokens: 50, Window: 8000,
	})
	if err != nil || res.Summary != "s" || res.FirstKept != 4 {
		t.Errorf("res %+v, err %v", res, err)
	}
}

// The turn being answered stays verbatim even when it alone exceeds
// KeepRecentTokens.
func TestCompactKeepFrom(t *testing.T) {
	long := strings.Repeat("word ", 400)
	msgs := []engine.Message{
		engine.UserText("first question " + long), {Role: engine.RoleAssistant, Content: []engine.Block{engine.TextBlock("answer " + long)}},
		engine.UserText("second question " + long), {Role: engine.RoleAssistant, Content: []engine.Block{engine.TextBlock("answer " + long)}},
		engine.UserText("the new question " + long),
	}
	m := &fakeSummarizer{reply: replyAll("summary")}
	res, err := Compact(context.Background(), CompactRequest{Model: m, Messages: msgs, Count: runeCount, KeepRecentTokens: 10, Window: 4000, SummaryTokens: 100, KeepFrom: 4})
	if err != nil {
		t.Fatal(err)
	}
	if res.FirstKept != 4 {
		t.Errorf("FirstKept = %d, want 4 (the new question)", res.FirstKept)
	}
}
