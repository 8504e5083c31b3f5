package openclawdir

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fixture is the state dir testdata/regen.sh made with the real OpenClaw
// 2026.9.6.
const fixture = "testdata/openclaw-home"

// copyTree copies the fixture, so a test may change it.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if e.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// snapshot lists every file under dir with its size and time.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, _ := e.Info()
		out[p] = fmt.Sprint(fi.ModTime(), fi.Mode(), fi.Size())
		return nil
	})
	return out
}

// lines splits a transcript into JSON objects, failing on a line that is
// not one.
func lines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %d: %v: %s", len(out)+1, err, sc.Text())
		}
		out = append(out, m)
	}
	return out
}

func TestFixtureConfigAgentsWorkspace(t *testing.T) {
	d := openDir(t, fixture)
	cfg, err := d.Config()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.Raw["models"].(map[string]any)["providers"]; !ok || filepath.Base(cfg.File) != "openclaw.json" {
		t.Errorf("config %s %v", cfg.File, cfg.Raw)
	}
	agents, err := d.Agents()
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(filepath.Join(fixture, "workspace"))
	if len(agents) != 1 || agents[0].ID != "main" || agents[0].Workspace != abs {
		t.Fatalf("agents %+v", agents)
	}
	files, err := d.WorkspaceFiles("main")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range files {
		got[f.Rel] = true
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || int64(len(b)) != f.Size {
			t.Errorf("%s: read %d bytes of %d: %v", f.Rel, len(b), f.Size, err)
		}
	}
	for _, want := range []string{"AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "BOOTSTRAP.md", "MEMORY.md", "memory/2026-11-26.md"} {
		if !got[want] {
			t.Errorf("no %s in %v", want, got)
		}
	}
}

// TestFixtureSessions: every session of the real store and files, with
// its key, id and source, and transcripts that are OpenClaw JSONL.
func TestFixtureSessions(t *testing.T) {
	before := snapshot(t, fixture)
	d := openDir(t, fixture)
	ss, err := d.Sessions("main", SessionOptions{Deleted: true})
	if err != nil {
		t.Fatal(err)
	}
	var sawArchived, sawToolCall, sawToolResult, sawLegacy, sawStringContent, sawReset bool
	deleted := map[string]bool{}
	for _, s := range ss {
		t.Logf("%s key=%q id=%s archived=%v deleted=%v updated=%s", s.Source, s.Key, s.ID, s.Archived, s.Deleted, s.Updated.Format(time.RFC3339))
		text, err := readAll(t, s)
		if err != nil {
			t.Fatalf("%s: %v", s.ID, err)
		}
		ls := lines(t, text)
		if len(ls) < 2 || ls[0]["type"] != "session" || ls[0]["id"] != s.ID {
			t.Fatalf("%s: header %v", s.ID, ls[0])
		}
		if s.Updated.IsZero() {
			t.Errorf("%s: no Updated", s.ID)
		}
		for _, l := range ls[1:] {
			m, _ := l["message"].(map[string]any)
			if _, ok := m["content"].(string); ok && m["role"] == "user" {
				sawStringContent = true
			}
			if m["role"] == "toolResult" {
				sawToolResult = true
			}
			blocks, _ := m["content"].([]any)
			for _, b := range blocks {
				if b, _ := b.(map[string]any); b["type"] == "toolCall" {
					sawToolCall = true
				}
			}
		}
		switch s.Source {
		case SourceSQLite:
			if s.Deleted || !strings.HasPrefix(s.Key, "agent:main:") && !s.Archived {
				t.Errorf("sqlite session %+v", s)
			}
			sawArchived = sawArchived || s.Archived && s.Key == "agent:main:main"
			if ls[0]["version"] != 4.0 {
				t.Errorf("%s: version %v", s.ID, ls[0]["version"])
			}
			// The gateway's /new: a reset entry inside the same, still
			// current session, and the conversation goes on after it.
			if s.Key == "agent:main:webchat" && !s.Archived {
				for i, l := range ls {
					if l["type"] == "reset" && l["reason"] == "new" && l["id"] != nil && l["parentId"] != nil && i < len(ls)-1 {
						sawReset = true
					}
				}
			}
		case SourceZst:
			if s.Deleted && s.Key == "" {
				deleted[s.ID] = true
			}
		case SourceJSONL:
			sawLegacy = s.Key == "agent:main:telegram:dm:42" && s.ID == "6f1d2c3b-0a9e-4b8c-9d7e-5f4a3b2c1d0e" && ls[0]["version"] == 3.0
		}
	}
	// Two deleted archives: the scratch session's, written with OpenClaw's
	// archive code while the store still holds it, and the one the
	// gateway's sessions.delete wrote (its name ends in .<32 hex>.zst).
	if !deleted["c9057dfa-bc8f-4149-9c49-042fcece4be9"] || !deleted["8db9adc9-e401-4158-b176-329bc6b810ea"] || len(deleted) != 2 {
		t.Errorf("deleted archives %v", deleted)
	}
	if !sawArchived || !sawToolCall || !sawToolResult || !sawReset || !sawLegacy || !sawStringContent {
		t.Errorf("archived %v toolCall %v toolResult %v reset %v legacy %v string content %v",
			sawArchived, sawToolCall, sawToolResult, sawReset, sawLegacy, sawStringContent)
	}
	// Without Deleted the archives are left out.
	ss2, err := d.Sessions("main", SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ss2) != len(ss)-2 {
		t.Errorf("%d sessions without deleted ones, %d with", len(ss2), len(ss))
	}
	d.Close()
	after := snapshot(t, fixture)
	if len(before) != len(after) {
		t.Fatalf("the state dir changed: %d files before, %d after", len(before), len(after))
	}
	for p, v := range before {
		if after[p] != v {
			t.Errorf("%s changed", p)
		}
	}
}

// TestFixtureCompressed: the real store holds a zstd-compressed event and
// the reader expands it exactly.
func TestFixtureCompressed(t *testing.T) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(fixture, "agents/main/agent/openclaw-agent.sqlite")+"?mode=ro&immutable=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var id string
	var seq, size int64
	if err := db.QueryRow(`SELECT session_id, seq, event_utf8_bytes FROM transcript_events WHERE event_zstd IS NOT NULL LIMIT 1`).Scan(&id, &seq, &size); err != nil {
		t.Fatalf("no compressed event in the fixture: %v", err)
	}
	d := openDir(t, fixture)
	ss, err := d.Sessions("main", SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if s.ID != id {
			continue
		}
		text, err := readAll(t, s)
		if err != nil {
			t.Fatal(err)
		}
		line := strings.Split(text, "\n")[seq]
		if int64(len(line)) != size {
			t.Errorf("event %d is %d bytes, want %d", seq, len(line), size)
		}
		return
	}
	t.Fatalf("session %s not listed", id)
}

// TestWAL: transactions still in the -wal file are read, and nothing is
// created beside the store.
func TestWAL(t *testing.T) {
	dir := copyTree(t, fixture)
	store := filepath.Join(dir, "agents/main/agent/openclaw-agent.sqlite")
	w, err := sql.Open("sqlite", "file:"+store+"?_pragma=journal_mode(WAL)&_pragma=wal_autocheckpoint(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.SetMaxOpenConns(1)
	var id string
	var seq int64
	if err := w.QueryRow(`SELECT session_id, max(seq) FROM transcript_events GROUP BY session_id LIMIT 1`).Scan(&id, &seq); err != nil {
		t.Fatal(err)
	}
	line := `{"type":"custom","customType":"wal-test","data":{},"id":"wal-1","parentId":null,"timestamp":"2026-11-26T12:00:00.000Z"}`
	if _, err := w.Exec(`INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?, ?, ?, 0)`, id, seq+1, line); err != nil {
		t.Fatal(err)
	}
	// The writer stays open, so the WAL is not checkpointed into the store.
	if fi, err := os.Stat(store + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("no WAL: %v", err)
	}
	before := snapshot(t, dir)
	d := openDir(t, dir)
	ss, err := d.Sessions("main", SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range ss {
		if s.ID == id {
			text, err := readAll(t, s)
			if err != nil {
				t.Fatal(err)
			}
			found = strings.HasSuffix(text, line+"\n")
		}
	}
	if !found {
		t.Error("the event in the WAL was not read")
	}
	d.Close()
	after := snapshot(t, dir)
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("created %s", p)
		}
	}
}

// TestBadRows: a hostile store's rows fail the read with the file, session
// and seq named, never a panic.
func TestBadRows(t *testing.T) {
	bomb := zstdEncode(t, make([]byte, 8<<20))
	for _, tc := range []struct {
		name, update string
		args         []any
		want         string
	}{
		{"not json", `UPDATE transcript_events SET event_json = '{bad' WHERE event_json IS NOT NULL AND seq = 1 AND session_id = (SELECT min(session_id) FROM transcript_events)`, nil, "seq 1: event is not valid JSON"},
		{"two lines", `UPDATE transcript_events SET event_json = '{}' || char(10) || '{}' WHERE event_json IS NOT NULL AND seq = 1 AND session_id = (SELECT min(session_id) FROM transcript_events)`, nil, "seq 1: event spans several lines"},
		{"bad zstd", `UPDATE transcript_events SET event_zstd = x'28b52ffd00112233' WHERE event_zstd IS NOT NULL`, nil, "event_zstd"},
		{"size lies", `UPDATE transcript_events SET event_utf8_bytes = event_utf8_bytes - 1 WHERE event_zstd IS NOT NULL`, nil, "event_utf8_bytes says"},
		{"bomb", `UPDATE transcript_events SET event_zstd = ?, event_utf8_bytes = 1000 WHERE event_zstd IS NOT NULL`, []any{bomb}, "event_zstd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyTree(t, fixture)
			store := filepath.Join(dir, "agents/main/agent/openclaw-agent.sqlite")
			w, err := sql.Open("sqlite", store)
			if err != nil {
				t.Fatal(err)
			}
			res, err := w.Exec(tc.update, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				t.Fatal("changed no row")
			}
			w.Close()
			d := openDir(t, dir)
			ss, err := d.Sessions("main", SessionOptions{})
			if err != nil {
				if !strings.Contains(err.Error(), "openclaw-agent.sqlite") {
					t.Fatalf("listing: %v", err)
				}
				return
			}
			var errs []string
			for _, s := range ss {
				if _, err := readAll(t, s); err != nil {
					errs = append(errs, err.Error())
				}
			}
			if len(errs) != 1 || !strings.Contains(errs[0], tc.want) || !strings.Contains(errs[0], "openclaw-agent.sqlite: transcript_events session ") {
				t.Fatalf("got %q, want one error with %q", errs, tc.want)
			}
		})
	}
}
