package bolt

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/session"
	"github.com/openclaw-edge/edge/engine/transcript"
)

const (
	agent = "main"
	key   = engine.SessionKey("agent:main:main")
)

func openTemp(t testing.TB) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state", "state.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

// setSession returns a commit update that points the entry at id.
func setSession(id string) func(*session.Entry) error {
	return func(e *session.Entry) error {
		if e.SessionID == "" {
			e.SessionID = id
			e.CreatedAt = time.Now()
		}
		e.UpdatedAt = time.Now()
		return nil
	}
}

func userEntry(text string) transcript.Entry { return transcript.MessageEntry(engine.UserText(text)) }

func TestOpenModes(t *testing.T) {
	_, path := openTemp(t)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", fi.Mode().Perm())
	}
	di, _ := os.Stat(filepath.Dir(path))
	if di.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v, want 0700", di.Mode().Perm())
	}
}

func TestOpenLocked(t *testing.T) {
	_, path := openTemp(t)
	_, err := Open(path, Options{Timeout: 50 * time.Millisecond})
	want := "state database " + path + " is in use by another process (is another gateway running?)"
	if err == nil || err.Error() != want {
		t.Fatalf("second Open err = %v, want %q", err, want)
	}
}

func TestReopenKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	e, stored, err := db.Commit(agent, key, session.Commit{
		DedupKey: "whatsapp:1",
		Header:   transcript.Header{Cwd: "/ws"},
		Update:   setSession("s1"),
		Entries:  []transcript.Entry{userEntry("one"), userEntry("two")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if e.SessionID != "s1" || len(stored) != 2 || stored[0].ParentID != "" || stored[1].ParentID != stored[0].ID || len(stored[0].ID) != 8 {
		t.Fatalf("commit = %+v %+v", e, stored)
	}
	if _, _, err := db.Commit("work", "agent:work:main", session.Commit{Update: setSession("s2")}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, ok, err := db.Session(agent, key)
	if err != nil || !ok || got.SessionID != "s1" {
		t.Fatalf("Session after reopen = %+v %v %v", got, ok, err)
	}
	h, entries, err := db.Transcript("s1")
	if err != nil {
		t.Fatal(err)
	}
	if h.ID != "s1" || h.Cwd != "/ws" || h.Version != transcript.Version || h.Timestamp == "" || len(entries) != 2 || entries[1].Message.Text() != "two" {
		t.Errorf("transcript after reopen = %+v %+v", h, entries)
	}
	if _, _, err := db.Commit(agent, key, session.Commit{DedupKey: "whatsapp:1", Update: setSession("s1")}); !errors.Is(err, session.ErrDuplicate) {
		t.Errorf("dedup lost on reopen: %v", err)
	}
	if n, err := db.Stats(); err != nil || n != 2 {
		t.Errorf("Stats = %d, %v", n, err)
	}
	if all, _ := db.Sessions(""); len(all) != 2 {
		t.Errorf("Sessions = %+v", all)
	}
	// Appending continues the chain from the stored leaf.
	_, more, err := db.Commit(agent, key, session.Commit{Update: setSession("s1"), Entries: []transcript.Entry{userEntry("three")}})
	if err != nil || more[0].ParentID != entries[1].ID {
		t.Errorf("append after reopen: %+v %v", more, err)
	}
	if _, _, err := db.Transcript("nope"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("missing transcript err = %v", err)
	}
}

// An update error or a bad entry aborts the whole commit, dedup mark
// included.
func TestCommitAtomic(t *testing.T) {
	db, _ := openTemp(t)
	if _, _, err := db.Commit(agent, key, session.Commit{Update: setSession("s1"), Entries: []transcript.Entry{userEntry("a")}}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	_, _, err := db.Commit(agent, key, session.Commit{
		DedupKey: "d1",
		Update:   func(e *session.Entry) error { e.Messages = 99; return boom },
		Entries:  []transcript.Entry{userEntry("b")},
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	_, _, err = db.Commit(agent, key, session.Commit{
		DedupKey: "d1",
		Update:   setSession("s1"),
		Entries:  []transcript.Entry{userEntry("c"), {Type: transcript.EntryCustom, CustomType: "x", ParentID: "missing"}},
	})
	if err == nil || !strings.Contains(err.Error(), "names no entry") {
		t.Fatalf("bad parent err = %v", err)
	}
	for _, bad := range []transcript.Entry{
		{Type: transcript.EntryCustomMessage, CustomType: "x"}, // no content
		{Type: transcript.EntryMessage},                        // no message
		{Type: transcript.EntryMessage, Message: &engine.Message{Role: "system"}},
		{CustomType: "no type"},
	} {
		if _, _, err := db.Commit(agent, key, session.Commit{Update: setSession("s1"), Entries: []transcript.Entry{bad}}); err == nil {
			t.Errorf("bad entry %+v accepted", bad)
		}
	}
	_, entries, _ := db.Transcript("s1")
	e, _, _ := db.Session(agent, key)
	if len(entries) != 1 || e.Messages != 0 {
		t.Errorf("aborted commits wrote: %d entries, %+v", len(entries), e)
	}
	if _, _, err := db.Commit(agent, key, session.Commit{DedupKey: "d1", Update: setSession("s1")}); err != nil {
		t.Errorf("dedup key of an aborted commit was kept: %v", err)
	}
	if _, _, err := db.Commit(agent, "agent:main:none", session.Commit{}); err == nil {
		t.Error("commit without a session id accepted")
	}
	if _, _, err := db.Commit("", key, session.Commit{Update: setSession("s")}); err == nil {
		t.Error("empty agent accepted")
	}
}

func TestDedupPrune(t *testing.T) {
	db, _ := openTemp(t)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	db.now = func() time.Time { return now }
	commit := func(dedup string) error {
		_, _, err := db.Commit(agent, key, session.Commit{DedupKey: dedup, Update: setSession("s1")})
		return err
	}
	if err := commit("old"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(6 * 24 * time.Hour)
	if err := commit("recent"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * 24 * time.Hour) // "old" is 8 days old, "recent" 2
	if err := commit("trigger"); err != nil {
		t.Fatal(err)
	}
	if err := commit("old"); err != nil {
		t.Errorf("key older than 7 days not pruned: %v", err)
	}
	if err := commit("recent"); !errors.Is(err, session.ErrDuplicate) {
		t.Errorf("recent key pruned: %v", err)
	}
}

func TestImportTranscript(t *testing.T) {
	db, _ := openTemp(t)
	h := transcript.Header{Type: "session", Version: 3, ID: "imp", Timestamp: "2026-01-01T00:00:00.000Z", Cwd: "/x"}
	a, b := userEntry("root a"), userEntry("root b")
	a.ID, b.ID = "0000000a", "0000000b" // two roots: both parents stay null
	c := userEntry("child")
	c.ID, c.ParentID = "0000000c", "0000000a"
	if err := db.ImportTranscript(agent, key, h, []transcript.Entry{a, b, c}, session.Entry{ThinkingLevel: "low"}); err != nil {
		t.Fatal(err)
	}
	gotH, entries, err := db.Transcript("imp")
	if err != nil {
		t.Fatal(err)
	}
	if gotH.Cwd != "/x" || gotH.Timestamp != h.Timestamp || entries[1].ParentID != "" || entries[2].ParentID != "0000000a" {
		t.Errorf("imported = %+v %+v", gotH, entries)
	}
	if e, _, _ := db.Session(agent, key); e.SessionID != "imp" || e.ThinkingLevel != "low" {
		t.Errorf("entry = %+v", e)
	}
	// The leaf is the last imported entry.
	_, more, err := db.Commit(agent, key, session.Commit{Entries: []transcript.Entry{userEntry("next")}})
	if err != nil || more[0].ParentID != "0000000c" {
		t.Errorf("append after import: %+v %v", more, err)
	}
	if err := db.ImportTranscript(agent, "agent:main:other", h, nil, session.Entry{}); err == nil {
		t.Error("session id reused")
	}
	bad := []transcript.Entry{c}
	if err := db.ImportTranscript(agent, "agent:main:other", transcript.Header{ID: "imp2"}, bad, session.Entry{}); err == nil {
		t.Error("entry with unknown parent imported")
	}
	if _, _, err := db.Transcript("imp2"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("failed import left a transcript: %v", err)
	}
}

// Crash safety: a child process commits turns in a loop and is killed with
// SIGKILL at a random point; the store must open cleanly, hold every turn
// the child saw committed, and every transcript must be a whole chain.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := filepath.Join(t.TempDir(), "state.db")
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for run := range 3 {
		killAfter := 5 + r.IntN(25) // committed turns before the kill
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$")
		cmd.Env = append(os.Environ(), "BOLT_CRASH_DB="+path, "BOLT_CRASH_RUN="+strconv.Itoa(run))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var begun, done []string
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			word, id, _ := strings.Cut(sc.Text(), " ")
			switch word {
			case "begun":
				begun = append(begun, id)
			case "done":
				done = append(done, id)
			}
			if len(done) == killAfter {
				// Land somewhere inside the next turn's commits.
				time.Sleep(time.Duration(r.IntN(3000)) * time.Microsecond)
				cmd.Process.Kill()
				break
			}
		}
		cmd.Wait()
		if len(done) < killAfter {
			t.Fatalf("run %d: child stopped after %d turns: %s", run, len(done), stderr.Bytes())
		}
		checkStore(t, path, begun, done)
	}
}

func checkStore(t *testing.T, path string, begun, done []string) {
	t.Helper()
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("open after kill: %v", err)
	}
	defer db.Close()
	all, err := db.Sessions("")
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]bool{}
	for _, k := range all {
		h, entries, err := db.Transcript(k.Entry.SessionID)
		if err != nil {
			t.Fatalf("%s: %v", k.Key, err)
		}
		if h.ID != k.Entry.SessionID || h.Type != "session" {
			t.Errorf("%s: header %+v", k.Key, h)
		}
		ids := map[string]bool{}
		for i, e := range entries {
			want := ""
			if i > 0 {
				want = entries[i-1].ID
			}
			if e.ParentID != want || e.ID == "" || ids[e.ID] {
				t.Fatalf("%s: entry %d (%s) parent %q, want %q", k.Key, i, e.ID, e.ParentID, want)
			}
			ids[e.ID] = true
			texts[e.Message.Text()] = true
		}
		if k.Entry.OpenTurn != "" && !ids[k.Entry.OpenTurn] {
			t.Errorf("%s: open turn %s not in transcript", k.Key, k.Entry.OpenTurn)
		}
		if k.Entry.Messages != len(entries) {
			t.Errorf("%s: entry counts %d messages, transcript has %d", k.Key, k.Entry.Messages, len(entries))
		}
		var buf bytes.Buffer
		if err := transcript.Write(&buf, h, entries); err != nil {
			t.Fatal(err)
		}
		if _, _, err := transcript.Parse(&buf); err != nil {
			t.Fatalf("%s: export does not parse: %v", k.Key, err)
		}
	}
	for _, id := range begun {
		if !texts["question "+id] {
			t.Errorf("inbound %s lost", id)
		}
	}
	for _, id := range done {
		if !texts["answer "+id] {
			t.Errorf("answer %s lost", id)
		}
	}
	// The store still takes commits: close interrupted turns, start new ones.
	m := session.NewManager(db, session.Config{DailyResetHour: new(-1)})
	open, err := m.Interrupted()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range open {
		if err := m.CloseInterrupted(k.AgentID, k.Key, "interrupted"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.BeginTurn(agent, "agent:main:after", session.Meta{}, "", engine.UserText("after")); err != nil {
		t.Fatal(err)
	}
	if err := m.EndTurn(agent, "agent:main:after", engine.Usage{}, 0, ""); err != nil {
		t.Fatal(err)
	}
}

// TestCrashChild is the child of TestCrashSafety; it does nothing unless
// started by it.
func TestCrashChild(t *testing.T) {
	path := os.Getenv("BOLT_CRASH_DB")
	if path == "" {
		t.Skip("run by TestCrashSafety")
	}
	run := os.Getenv("BOLT_CRASH_RUN")
	db, err := Open(path, Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	m := session.NewManager(db, session.Config{DailyResetHour: new(-1)})
	deadline := time.Now().Add(time.Minute) // never outlive a dead parent for long
	for i := 0; time.Now().Before(deadline); i++ {
		id := run + "/" + strconv.Itoa(i)
		k := engine.AgentSessionKey(agent, "s"+strconv.Itoa(i%4))
		if _, err := m.BeginTurn(agent, k, session.Meta{}, "crash:"+id, engine.UserText("question "+id)); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(os.Stdout, "begun", id)
		call := engine.ToolCall{ID: "c" + id, Name: "exec", Arguments: json.RawMessage(`{"command":"date"}`)}
		if _, err := m.Append(agent, k,
			engine.Message{Role: engine.RoleAssistant, Content: []engine.Block{call.Block()}, StopReason: engine.StopToolUse},
			engine.TextResult("today").Message(call)); err != nil {
			t.Fatal(err)
		}
		answer := engine.Message{Role: engine.RoleAssistant, Content: []engine.Block{engine.TextBlock("answer " + id)}, StopReason: engine.StopEnd}
		if err := m.EndTurn(agent, k, engine.Usage{Input: 1, Output: 1}, 10, "local/x", answer); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(os.Stdout, "done", id)
	}
}

// One inbound user message: the cost of BeginTurn's commit (fsync bound).
func BenchmarkCommit(b *testing.B) {
	db, _ := openTemp(b)
	for b.Loop() {
		if _, _, err := db.Commit(agent, key, session.Commit{
			Update:  setSession("bench"),
			Entries: []transcript.Entry{userEntry("hello there, what is the weather like today?")},
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// Reading a 1,000-entry transcript, as each turn does to rebuild context:
// from the cache after the transcript grew by one entry, and decoding all
// of it (a cold start).
func BenchmarkTranscript1000(b *testing.B) {
	for _, bc := range []struct {
		name  string
		cache int
	}{{"cached", 0}, {"uncached", -1}} {
		b.Run(bc.name, func(b *testing.B) {
			db, err := Open(filepath.Join(b.TempDir(), "state.db"), Options{CacheBytes: bc.cache})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			fillTranscript(b, db, "bench", 999)
			_, _, err = db.Transcript("bench")
			if err != nil {
				b.Fatal(err)
			}
			fillTranscript(b, db, "bench", 1)
			for b.Loop() {
				_, entries, err := db.Transcript("bench")
				if err != nil || len(entries) != 1000 {
					b.Fatal(len(entries), err)
				}
			}
		})
	}
}

// fillTranscript appends n alternating user and assistant messages to
// sessionID, in commits of at most 100.
func fillTranscript(tb testing.TB, db *DB, sessionID string, n int) {
	tb.Helper()
	for n > 0 {
		var entries []transcript.Entry
		for j := 0; j < 100 && n > 0; j, n = j+1, n-1 {
			msg := engine.UserText(fmt.Sprintf("message %d: %s", n, strings.Repeat("lorem ipsum ", 20)))
			if n%2 == 1 {
				msg = engine.Message{Role: engine.RoleAssistant, Content: msg.Content, Provider: "local", Model: "qwen3",
					Usage: &engine.Usage{Input: 1000, Output: 100, TotalTokens: 1100}, StopReason: engine.StopEnd, Timestamp: msg.Timestamp}
			}
			entries = append(entries, transcript.MessageEntry(msg))
		}
		if _, _, err := db.Commit(agent, engine.SessionKey("agent:main:"+sessionID), session.Commit{Update: setSession(sessionID), Entries: entries}); err != nil {
			tb.Fatal(err)
		}
	}
}

func TestTranscriptCache(t *testing.T) {
	for _, size := range []int{0, 3000, -1} { // default, evicting often, off
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			db, err := Open(filepath.Join(t.TempDir(), "state.db"), Options{CacheBytes: size})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for round := 1; round <= 4; round++ {
				for _, id := range []string{"a", "b"} {
					fillTranscript(t, db, id, 7)
					_, entries, err := db.Transcript(id)
					if err != nil || len(entries) != 7*round {
						t.Fatalf("round %d %s: %d entries, %v", round, id, len(entries), err)
					}
					for i := 1; i < len(entries); i++ {
						if entries[i].ParentID != entries[i-1].ID {
							t.Fatalf("round %d %s: broken chain at %d", round, id, i)
						}
					}
					// Editing what was returned must not change the store.
					entries[0].Message.Content[0].Text = "edited"
					entries[0].Message.Usage = nil
					_, again, _ := db.Transcript(id)
					if again[0].Message.Text() == "edited" {
						t.Fatal("caller's edit leaked into the cache")
					}
				}
			}
		})
	}
}

// A reader whose transaction predates the cached copy gets its own view.
// (A second database stands in for the older snapshot: holding a read
// transaction open across a commit can deadlock bbolt's remap.)
func TestTranscriptCacheOlderSnapshot(t *testing.T) {
	db, _ := openTemp(t)
	fillTranscript(t, db, "s", 8)
	if _, entries, _ := db.Transcript("s"); len(entries) != 8 {
		t.Fatalf("%d entries, want 8", len(entries))
	}
	older, _ := openTemp(t)
	fillTranscript(t, older, "s", 5)
	err := older.db.View(func(tx *bbolt.Tx) error {
		old, err := db.cache.read("s", tx.Bucket(bucketTranscripts).Bucket([]byte("s")))
		if err != nil || len(old) != 5 {
			t.Errorf("old snapshot: %d entries, %v", len(old), err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
