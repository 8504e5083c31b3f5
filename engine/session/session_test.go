package session_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/session"
	"github.com/openclaw-edge/edge/engine/store/bolt"
	"github.com/openclaw-edge/edge/engine/transcript"
)

// zone is a fixed zone so the daily boundary does not depend on the host.
var zone = time.FixedZone("UTC+2", 2*60*60)

// clock is a settable fake clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func at(day, hour, min int) time.Time { return time.Date(2026, 3, day, hour, min, 0, 0, zone) }

// stores runs a test against the in-memory fake and the real bolt store.
func stores(t *testing.T, f func(t *testing.T, st session.Store)) {
	t.Run("mem", func(t *testing.T) { f(t, newMemStore()) })
	t.Run("bolt", func(t *testing.T) {
		db, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), bolt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		f(t, db)
	})
}

func newManager(st session.Store, cfg session.Config) (*session.Manager, *clock) {
	clk := &clock{t: at(10, 9, 0)}
	cfg.Now = clk.Now
	if cfg.Location == nil {
		cfg.Location = zone
	}
	return session.NewManager(st, cfg), clk
}

const (
	agent = "main"
	key   = engine.SessionKey("agent:main:main")
)

func texts(msgs []engine.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, string(m.Role)+":"+m.Text())
	}
	return out
}

func TestExpired(t *testing.T) {
	tests := []struct {
		name         string
		hour         *int // nil: the default 04:00
		idle         int
		updated, now time.Time
		wantExpired  bool
	}{
		{"same morning after 4", nil, 0, at(10, 5, 0), at(10, 23, 0), false},
		{"crosses 04:00", nil, 0, at(10, 3, 59), at(10, 4, 0), true},
		{"late night to before 4", nil, 0, at(10, 23, 0), at(11, 3, 59), false},
		{"late night to after 4", nil, 0, at(10, 23, 0), at(11, 4, 1), true},
		{"days later", nil, 0, at(1, 12, 0), at(10, 12, 0), true},
		{"exactly at boundary", nil, 0, at(10, 4, 0), at(10, 9, 0), false},
		{"custom hour 6", new(6), 0, at(10, 5, 0), at(10, 6, 30), true},
		{"midnight (0)", new(0), 0, at(10, 23, 0), at(11, 0, 1), true},
		{"midnight (0) not yet", new(0), 0, at(10, 0, 1), at(10, 23, 59), false},
		{"midnight (24)", new(24), 0, at(10, 23, 0), at(11, 0, 1), true},
		{"daily disabled", new(-1), 0, at(1, 12, 0), at(10, 12, 0), false},
		{"idle not yet", new(-1), 30, at(10, 10, 0), at(10, 10, 29), false},
		{"idle expired", new(-1), 30, at(10, 10, 0), at(10, 10, 31), true},
		{"idle first when both", nil, 30, at(10, 10, 0), at(10, 11, 0), true},
		{"daily first when both", nil, 600, at(10, 3, 0), at(10, 4, 30), true},
		// The boundary is local: 04:00 UTC+2 is 02:00 UTC.
		{"zone respected", nil, 0, at(10, 3, 0).UTC(), time.Date(2026, 3, 10, 2, 30, 0, 0, time.UTC), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newManager(newMemStore(), session.Config{DailyResetHour: tt.hour, IdleMinutes: tt.idle})
			if got := m.Expired(tt.updated, tt.now); got != tt.wantExpired {
				t.Errorf("Expired(%v, %v) = %v", tt.updated, tt.now, got)
			}
		})
	}
}

func TestBeginTurn(t *testing.T) {
	stores(t, func(t *testing.T, st session.Store) {
		m, clk := newManager(st, session.Config{})
		meta := session.Meta{ChatType: "direct", Channel: "whatsapp", DisplayName: "Ana", Workspace: "/ws"}
		turn, err := m.BeginTurn(agent, key, meta, "whatsapp:1", engine.UserText("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if !turn.NewSession || turn.SessionID == "" || turn.InboundID == "" || turn.Entry.OpenTurn != turn.InboundID {
			t.Fatalf("first turn = %+v", turn)
		}
		if e := turn.Entry; e.Messages != 1 || e.Channel != "whatsapp" || e.DisplayName != "Ana" || !e.UpdatedAt.Equal(clk.Now()) || !e.CreatedAt.Equal(clk.Now()) {
			t.Errorf("entry = %+v", e)
		}
		if got := texts(turn.History); !reflect.DeepEqual(got, []string{"user:hi"}) {
			t.Errorf("history = %v", got)
		}
		h, entries, err := m.History(agent, key)
		if err != nil {
			t.Fatal(err)
		}
		if h.ID != turn.SessionID || h.Cwd != "/ws" || h.Version != transcript.Version || len(entries) != 1 || entries[0].ID != turn.InboundID || entries[0].ParentID != "" {
			t.Errorf("transcript = %+v %+v", h, entries)
		}

		if err := m.EndTurn(agent, key, engine.Usage{Input: 10, Output: 5, TotalTokens: 15}, 900, "local/qwen",
			engine.Message{Role: engine.RoleAssistant, Content: []engine.Block{engine.TextBlock("hello")}}); err != nil {
			t.Fatal(err)
		}
		clk.Add(time.Minute)
		turn2, err := m.BeginTurn(agent, key, session.Meta{}, "whatsapp:2", engine.UserText("again"))
		if err != nil {
			t.Fatal(err)
		}
		if turn2.NewSession || turn2.SessionID != turn.SessionID {
			t.Errorf("second turn started a new session: %+v", turn2)
		}
		if got := texts(turn2.History); !reflect.DeepEqual(got, []string{"user:hi", "assistant:hello", "user:again"}) {
			t.Errorf("history = %v", got)
		}
		e := turn2.Entry
		if e.Messages != 3 || e.InputTokens != 10 || e.OutputTokens != 5 || e.TotalTokens != 15 || e.ContextTokens != 900 || e.LastModel != "local/qwen" || e.DisplayName != "Ana" {
			t.Errorf("entry after second turn = %+v", e)
		}
		_, entries, _ = m.History(agent, key)
		for i := 1; i < len(entries); i++ {
			if entries[i].ParentID != entries[i-1].ID {
				t.Errorf("entry %d parent %q, want %q", i, entries[i].ParentID, entries[i-1].ID)
			}
		}
	})
}

func TestBeginTurnDuplicateWritesNothing(t *testing.T) {
	stores(t, func(t *testing.T, st session.Store) {
		m, clk := newManager(st, session.Config{})
		if _, err := m.BeginTurn(agent, key, session.Meta{}, "imessage:guid-1", engine.UserText("hi")); err != nil {
			t.Fatal(err)
		}
		before, _, _ := m.Get(agent, key)
		_, entriesBefore, _ := m.History(agent, key)
		clk.Add(time.Hour)
		_, err := m.BeginTurn(agent, key, session.Meta{DisplayName: "changed"}, "imessage:guid-1", engine.UserText("hi"))
		if !errors.Is(err, session.ErrDuplicate) {
			t.Fatalf("err = %v, want ErrDuplicate", err)
		}
		after, _, _ := m.Get(agent, key)
		_, entriesAfter, _ := m.History(agent, key)
		if !reflect.DeepEqual(before, after) || len(entriesAfter) != len(entriesBefore) {
			t.Errorf("duplicate wrote something: %+v → %+v, %d → %d entries", before, after, len(entriesBefore), len(entriesAfter))
		}
		// The dedup key is global: another session sees it as seen too, and
		// a key that was never committed is not.
		if _, err := m.BeginTurn(agent, "agent:main:other", session.Meta{}, "imessage:guid-1", engine.UserText("x")); !errors.Is(err, session.ErrDuplicate) {
			t.Errorf("other session: err = %v", err)
		}
		if _, ok, _ := m.Get(agent, "agent:main:other"); ok {
			t.Error("duplicate created an entry")
		}
		if _, err := m.BeginTurn(agent, key, session.Meta{}, "", engine.UserText("no key")); err != nil {
			t.Errorf("empty dedup key: %v", err)
		}
	})
}

func TestResets(t *testing.T) {
	stores(t, func(t *testing.T, st session.Store) {
		m, clk := newManager(st, session.Config{IdleMinutes: 150})
		clk.Set(at(10, 22, 0))
		first, err := m.BeginTurn(agent, key, session.Meta{}, "", engine.UserText("one"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Update(agent, key, func(e *session.Entry) error {
			e.ThinkingLevel, e.VerboseLevel, e.ModelOverride, e.ProviderOverride = "high", "on", "claude", "anthropic"
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := m.EndTurn(agent, key, engine.Usage{Input: 100, Output: 10}, 500, "anthropic/claude"); err != nil {
			t.Fatal(err)
		}

		steps := []struct {
			name    string
			now     time.Time
			wantNew bool
		}{
			{"same evening", at(10, 23, 30), false},
			{"after midnight", at(11, 1, 20), false},
			{"just before 04:00", at(11, 3, 10), false},
			{"after the 04:00 boundary", at(11, 4, 1), true},
			{"soon after", at(11, 5, 0), false},
			{"idle expired", at(11, 7, 31), true},
			{"idle almost expired", at(11, 9, 30), false},
		}
		prev := first.SessionID
		for _, s := range steps {
			clk.Set(s.now)
			turn, err := m.BeginTurn(agent, key, session.Meta{}, "", engine.UserText(s.name))
			if err != nil {
				t.Fatal(err)
			}
			if turn.NewSession != s.wantNew || (turn.SessionID != prev) == !s.wantNew {
				t.Errorf("%s: NewSession=%v id changed=%v, want new=%v", s.name, turn.NewSession, turn.SessionID != prev, s.wantNew)
			}
			if s.wantNew {
				e := turn.Entry
				if e.ThinkingLevel != "high" || e.VerboseLevel != "on" || e.ModelOverride != "claude" || e.ProviderOverride != "anthropic" {
					t.Errorf("%s: overrides lost: %+v", s.name, e)
				}
				if e.InputTokens != 0 || e.TotalTokens != 0 || e.Messages != 1 || e.LastModel != "" || !e.CreatedAt.Equal(s.now) {
					t.Errorf("%s: counters not reset: %+v", s.name, e)
				}
				if got := texts(turn.History); !reflect.DeepEqual(got, []string{"user:" + s.name}) {
					t.Errorf("%s: new session history = %v", s.name, got)
				}
			}
			prev = turn.SessionID
			if err := m.EndTurn(agent, key, engine.Usage{}, 0, ""); err != nil {
				t.Fatal(err)
			}
		}
		// The old transcript is still there.
		if _, entries, err := st.Transcript(first.SessionID); err != nil || len(entries) != 4 || entries[0].Message.Text() != "one" {
			t.Errorf("old transcript: %d entries, %v", len(entries), err)
		}
	})
}

func TestResetCommand(t *testing.T) {
	stores(t, func(t *testing.T, st session.Store) {
		m, _ := newManager(st, session.Config{})
		first, err := m.BeginTurn(agent, key, session.Meta{}, "", engine.UserText("one"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Update(agent, key, func(e *session.Entry) error {
			e.ReasoningLevel, e.ModelOverride, e.ThinkingLevel = "on", "ollama/small", "high"
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		e, err := m.Reset(agent, key, session.Meta{Workspace: "/w2"})
		if err != nil {
			t.Fatal(err)
		}
		if e.SessionID == first.SessionID || e.ReasoningLevel != "on" || e.OpenTurn != "" || e.Messages != 0 {
			t.Errorf("after reset: %+v", e)
		}
		// The explicit fresh start clears /model and /think (issue 12).
		if e.ModelOverride != "" || e.ThinkingLevel != "" {
			t.Errorf("overrides survived /new: model %q think %q", e.ModelOverride, e.ThinkingLevel)
		}
		h, entries, err := m.History(agent, key)
		if err != nil || h.ID != e.SessionID || h.Cwd != "/w2" || len(entries) != 0 {
			t.Errorf("new transcript: %+v %d %v", h, len(entries), err)
		}
	})
}

func TestAppendAndCompaction(t *testing.T) {
	stores(t, func(t *testing.T, st session.Store) {
		m, _ := newManager(st, session.Config{})
		if _, err := m.Append(agent, key, engine.UserText("x")); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("Append without session: %v", err)
		}
		if err := m.EndTurn(agent, key, engine.Usage{}, 0, ""); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("EndTurn without session: %v", err)
		}
		turn, err := m.BeginTurn(agent, key, session.Meta{}, "", engine.UserText("q1"))
		if err != nil {
			t.Fatal(err)
		}
		call := engine.ToolCall{ID: "c1", Name: "ls", Arguments: json.RawMessage(`{}`)}
		stored, err := m.Append(agent, key,
			engine.Message{Role: engine.RoleAssistant, Content: []engine.Block{call.Block()}, StopReason: engine.StopToolUse},
			engine.TextResult("a b").Message(call))
		if err != nil {
			t.Fatal(err)
		}
		if len(stored) != 2 || stored[0].ParentID != turn.InboundID || stored[1].ParentID != stored[0].ID {
			t.Fatalf("stored = %+v", stored)
		}
		if err := m.EndTurn(agent, key, engine.Usage{}, 0, "", engine.Message{Role: engine.RoleAssistant, Content: []engine.Block{engine.TextBlock("a1")}}); err != nil {
			t.Fatal(err)
		}
		_, entries, _ := m.History(agent, key)
		keep := entries[len(entries)-1].ID
		if _, err := m.AppendEntries(agent, key, transcript.Entry{
			Type: transcript.EntryCompaction, Timestamp: transcript.Timestamp(time.Now()),
			Summary: "user asked q1", FirstKeptEntryID: keep, TokensBefore: 1234,
		}); err != nil {
			t.Fatal(err)
		}
		turn2, err := m.BeginTurn(agent, key, session.Meta{}, "", engine.UserText("q2"))
		if err != nil {
			t.Fatal(err)
		}
		got := texts(turn2.History)
		want := []string{"user:" + transcript.CompactionSummaryPrefix + "user asked q1" + transcript.CompactionSummarySuffix, "assistant:a1", "user:q2"}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("history after compaction = %q", got)
		}
		if turn2.Entry.Messages != 5 {
			t.Errorf("Messages = %d, want 5 (compaction is not a message)", turn2.Entry.Messages)
		}
		// A parent that is not in the transcript is refused, nothing written.
		if _, err := m.AppendEntries(agent, key, transcript.Entry{Type: transcript.EntryCustom, CustomType: "x", ParentID: "nope"}); err == nil {
			t.Error("unknown parent accepted")
		}
		// An explicit id already in the transcript is ErrIDInUse.
		if _, err := m.AppendEntries(agent, key, transcript.Entry{Type: transcript.EntryCustom, CustomType: "x", ID: turn2.InboundID}); !errors.Is(err, session.ErrIDInUse) {
			t.Errorf("duplicate id: %v", err)
		}
		_, after, _ := m.History(agent, key)
		if len(after) != len(entries)+2 {
			t.Errorf("refused appends wrote entries: %d", len(after))
		}
	})
}

func TestInterrupted(t *testing.T) {
	stores(t, func(t *testing.T, st session.Store) {
		m, _ := newManager(st, session.Config{})
		other := engine.SessionKey("agent:main:whatsapp:group:g1")
		turn, err := m.BeginTurn(agent, key, session.Meta{}, "", engine.UserText("crash here"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.BeginTurn(agent, other, session.Meta{}, "", engine.UserText("fine")); err != nil {
			t.Fatal(err)
		}
		if err := m.EndTurn(agent, other, engine.Usage{}, 0, ""); err != nil {
			t.Fatal(err)
		}
		open, err := m.Interrupted()
		if err != nil {
			t.Fatal(err)
		}
		if len(open) != 1 || open[0].Key != key || open[0].AgentID != agent || open[0].Entry.OpenTurn != turn.InboundID {
			t.Fatalf("Interrupted = %+v", open)
		}
		if err := m.CloseInterrupted(agent, key, "The gateway restarted before answering."); err != nil {
			t.Fatal(err)
		}
		if open, _ := m.Interrupted(); len(open) != 0 {
			t.Errorf("still open: %+v", open)
		}
		_, entries, _ := m.History(agent, key)
		last := entries[len(entries)-1].Message
		if last.Role != engine.RoleAssistant || last.StopReason != engine.StopError || last.ErrorMessage == "" || last.Text() != "The gateway restarted before answering." {
			t.Errorf("closing message = %+v", last)
		}
		// Closing again does nothing.
		if err := m.CloseInterrupted(agent, key, "again"); err != nil {
			t.Fatal(err)
		}
		if _, again, _ := m.History(agent, key); len(again) != len(entries) {
			t.Error("second close appended")
		}
	})
}

func TestListAndUpdate(t *testing.T) {
	stores(t, func(t *testing.T, st session.Store) {
		m, clk := newManager(st, session.Config{})
		for i, k := range []engine.SessionKey{"agent:main:a", "agent:main:b", "agent:main:c"} {
			clk.Add(time.Minute)
			if _, err := m.BeginTurn(agent, k, session.Meta{}, "", engine.UserText(string(rune('a'+i)))); err != nil {
				t.Fatal(err)
			}
		}
		clk.Add(time.Minute)
		if _, err := m.BeginTurn("work", "agent:work:main", session.Meta{}, "", engine.UserText("w")); err != nil {
			t.Fatal(err)
		}
		list, err := m.List(agent)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, k := range list {
			keys = append(keys, string(k.Key))
		}
		if want := []string{"agent:main:c", "agent:main:b", "agent:main:a"}; !reflect.DeepEqual(keys, want) {
			t.Errorf("List(main) = %v, want %v", keys, want)
		}
		all, _ := m.List("")
		if len(all) != 4 || all[0].AgentID != "work" {
			t.Errorf("List(\"\") = %+v", all)
		}
		// Update creates a missing entry; its error aborts.
		e, err := m.Update(agent, "agent:main:new", func(e *session.Entry) error { e.ThinkingLevel = "low"; return nil })
		if err != nil || e.SessionID == "" || e.ThinkingLevel != "low" {
			t.Fatalf("Update new = %+v, %v", e, err)
		}
		boom := errors.New("boom")
		if _, err := m.Update(agent, "agent:main:new", func(e *session.Entry) error { e.ThinkingLevel = "high"; return boom }); !errors.Is(err, boom) {
			t.Errorf("Update error = %v", err)
		}
		if e, _, _ := m.Get(agent, "agent:main:new"); e.ThinkingLevel != "low" {
			t.Error("failed Update changed the entry")
		}
		if _, err := m.BeginTurn(agent, "bad key", session.Meta{}, "", engine.UserText("x")); err == nil {
			t.Error("invalid key accepted")
		}
	})
}

func TestImport(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "transcript", "testdata", "openclaw.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	stores(t, func(t *testing.T, st session.Store) {
		m, _ := newManager(st, session.Config{})
		if _, err := m.Update(agent, key, func(e *session.Entry) error { e.ModelOverride = "m"; return nil }); err != nil {
			t.Fatal(err)
		}
		before, _, _ := m.Get(agent, key)

		// Bad input: an error naming the line, nothing stored.
		bad := strings.Replace(string(src), `"parentId":"10000003"`, `"parentId":"zzz"`, 1)
		if _, _, err := m.Import(agent, key, strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line 7") {
			t.Errorf("bad import err = %v", err)
		}
		if now, _, _ := m.Get(agent, key); !reflect.DeepEqual(now, before) {
			t.Error("bad import changed the entry")
		}
		if _, _, err := m.Import(agent, "has space", bytes.NewReader(src)); err == nil {
			t.Error("invalid key accepted")
		}

		e, n, err := m.Import(agent, key, bytes.NewReader(src))
		if err != nil {
			t.Fatal(err)
		}
		if n != 17 || e.SessionID != "0b6c3f52-8d2e-4c43-9a51-2f1c6a7e9d10" || e.ModelOverride != "m" || e.Messages != 9 || e.InputTokens != 270 || e.LastModel != "local/qwen3-1.7b" {
			t.Errorf("imported entry = %+v, n = %d", e, n)
		}
		h, entries, err := m.History(agent, key)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := transcript.Write(&out, h, entries); err != nil {
			t.Fatal(err)
		}
		if !sameJSONLines(t, src, out.Bytes()) {
			t.Errorf("export differs from import:\n%s", out.Bytes())
		}
		// The same transcript imported again gets a fresh session id, and
		// the first import is untouched.
		imp, err := m.BeginImport(bytes.NewReader(src))
		if err != nil {
			t.Fatal(err)
		}
		if imp.RenamedFrom() != e.SessionID || imp.SessionID() == e.SessionID {
			t.Errorf("second import: id %s, renamed from %q", imp.SessionID(), imp.RenamedFrom())
		}
		if n2, err := imp.Load(); err != nil || n2 != n {
			t.Fatalf("second import Load = %d, %v", n2, err)
		}
		copyEntry, err := imp.Publish(agent, "agent:main:copy")
		if err != nil || copyEntry.SessionID != imp.SessionID() || copyEntry.Messages != 9 {
			t.Fatalf("second import = %+v, %v", copyEntry, err)
		}
		if now, _, _ := m.Get(agent, key); now.SessionID != e.SessionID {
			t.Errorf("first import's key moved to %s", now.SessionID)
		}
		// The imported session continues normally.
		turn, err := m.BeginTurn(agent, key, session.Meta{}, "", engine.UserText("next"))
		if err != nil {
			t.Fatal(err)
		}
		if turn.NewSession || turn.SessionID != e.SessionID || texts(turn.History)[len(turn.History)-1] != "user:next" {
			t.Errorf("turn after import = %+v", turn)
		}
	})
}

func sameJSONLines(t *testing.T, a, b []byte) bool {
	t.Helper()
	decode := func(x []byte) []any {
		var out []any
		for _, line := range strings.Split(strings.TrimSpace(string(x)), "\n") {
			var v any
			if err := json.Unmarshal([]byte(line), &v); err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
		return out
	}
	return reflect.DeepEqual(decode(a), decode(b))
}

// Concurrent turns on many sessions through one Manager, each session's
// turns serialized by Lanes: every message lands, in order, in its own
// session.
func TestConcurrentSessions(t *testing.T) {
	stores(t, func(t *testing.T, st session.Store) {
		m := session.NewManager(st, session.Config{DailyResetHour: new(-1)})
		lanes := session.NewLanes()
		const sessions, turns = 8, 5
		var wg sync.WaitGroup
		errs := make(chan error, sessions*turns)
		for s := range sessions {
			k := engine.AgentSessionKey(agent, "s"+string(rune('a'+s)))
			for range turns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					release, _, err := lanes.Acquire(t.Context(), string(k))
					if err != nil {
						errs <- err
						return
					}
					defer release()
					if _, err := m.BeginTurn(agent, k, session.Meta{}, "", engine.UserText(string(k))); err != nil {
						errs <- err
						return
					}
					if err := m.EndTurn(agent, k, engine.Usage{Input: 1}, 0, "", engine.Message{Role: engine.RoleAssistant, Content: []engine.Block{engine.TextBlock("ok")}}); err != nil {
						errs <- err
					}
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for s := range sessions {
			k := engine.AgentSessionKey(agent, "s"+string(rune('a'+s)))
			e, _, _ := m.Get(agent, k)
			_, entries, _ := m.History(agent, k)
			if e.Messages != 2*turns || len(entries) != 2*turns || e.InputTokens != turns || e.OpenTurn != "" {
				t.Errorf("%s: %+v, %d entries", k, e, len(entries))
			}
			for i, te := range entries {
				want := engine.RoleUser
				if i%2 == 1 {
					want = engine.RoleAssistant
				}
				if te.Message.Role != want || (want == engine.RoleUser && te.Message.Text() != string(k)) {
					t.Errorf("%s entry %d = %+v", k, i, te.Message)
				}
			}
		}
	})
}

// BeginTurn on a session whose transcript holds 1,000 entries, over the
// real store: the session part of the per-message pipeline overhead
// (commit with two fsyncs, transcript read, context rebuild).
func BenchmarkBeginTurn1000(b *testing.B) {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "state.db"), bolt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	m := session.NewManager(db, session.Config{DailyResetHour: new(-1)})
	if _, err := m.BeginTurn(agent, key, session.Meta{}, "", engine.UserText("first")); err != nil {
		b.Fatal(err)
	}
	for i := range 10 {
		msgs := make([]engine.Message, 0, 100)
		for j := range 100 {
			if j == 99 && i == 9 {
				break
			}
			msgs = append(msgs, engine.Message{Role: engine.RoleAssistant, Content: []engine.Block{engine.TextBlock(strings.Repeat("lorem ipsum ", 20))}})
		}
		if _, err := m.Append(agent, key, msgs...); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		turn, err := m.BeginTurn(agent, key, session.Meta{}, "", engine.UserText("hello"))
		if err != nil || len(turn.History) < 1000 {
			b.Fatal(len(turn.History), err)
		}
	}
}
