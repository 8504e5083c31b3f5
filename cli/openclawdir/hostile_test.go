package openclawdir

import (
	"bytes"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// writeFile writes name under dir, making folders.
func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func zst(t *testing.T, b []byte) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	return enc.EncodeAll(b, nil)
}

const header = `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`

func openDir(t *testing.T, dir string) *Dir {
	t.Helper()
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func readAll(t *testing.T, s Session) (string, error) {
	t.Helper()
	rc, err := s.Open()
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	return string(b), err
}

func TestOpenRefuses(t *testing.T) {
	empty := t.TempDir()
	file := writeFile(t, t.TempDir(), "f", []byte("x"))
	for _, tc := range []struct{ name, dir, want string }{
		{"empty", "", "no OpenClaw state dir"},
		{"missing", filepath.Join(empty, "nope"), "does not exist"},
		{"file", file, "not a directory"},
		{"not openclaw", empty, "does not look like an OpenClaw state dir"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(tc.dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestBadAgentIDs(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "openclaw.json", []byte(`{}`))
	d := openDir(t, dir)
	for _, id := range []string{"", "..", "../x", "a/b", "Main", "x\x00", strings.Repeat("a", 65)} {
		if _, err := d.Sessions(id, SessionOptions{}); err == nil || !strings.Contains(err.Error(), "agent id") {
			t.Errorf("Sessions(%q): %v", id, err)
		}
		if _, err := d.WorkspaceFiles(id); err == nil {
			t.Errorf("WorkspaceFiles(%q): no error", id)
		}
	}
}

func TestBadConfig(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{agents: `, "not valid JSON5"},
		{`[1]`, "not valid JSON5"},
		{`null`, "top level is not an object"},
	} {
		dir := t.TempDir()
		writeFile(t, dir, "openclaw.json", []byte(tc.body))
		d := openDir(t, dir)
		_, err := d.Config()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "openclaw.json") {
			t.Errorf("%s: got %v, want %q naming the file", tc.body, err, tc.want)
		}
	}
}

func TestConfigSize(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "openclaw.json", []byte(`{"a": "`+strings.Repeat("x", 100)+`"}`))
	defer func(n int64) { MaxConfigBytes = n }(MaxConfigBytes)
	MaxConfigBytes = 50
	_, err := openDir(t, dir).Config()
	if err == nil || !strings.Contains(err.Error(), "more than the 50") {
		t.Fatalf("got %v", err)
	}
}

// TestSymlinksOutside: links that leave the state dir or the workspace are
// refused or skipped, never followed.
func TestSymlinksOutside(t *testing.T) {
	outside := t.TempDir()
	secret := writeFile(t, outside, "secret.jsonl", []byte(header+"\n"))
	writeFile(t, outside, "openclaw.json", []byte(`{}`))
	writeFile(t, outside, "AGENTS.md", []byte("secret"))
	os.MkdirAll(filepath.Join(outside, "memory"), 0o755)
	writeFile(t, outside, "memory/x.md", []byte("secret"))

	dir := t.TempDir()
	writeFile(t, dir, "agents/main/sessions/ok.jsonl", []byte(header+"\n"))
	os.Symlink(secret, filepath.Join(dir, "agents/main/sessions/link.jsonl"))
	os.Symlink(filepath.Join(outside, "openclaw.json"), filepath.Join(dir, "openclaw.json"))
	os.MkdirAll(filepath.Join(dir, "agents/main/agent"), 0o755)
	os.Symlink(secret, filepath.Join(dir, "agents/main/agent/openclaw-agent.sqlite"))
	ws := filepath.Join(dir, "workspace")
	os.MkdirAll(ws, 0o755)
	os.Symlink(filepath.Join(outside, "AGENTS.md"), filepath.Join(ws, "AGENTS.md"))
	os.Symlink(filepath.Join(outside, "memory"), filepath.Join(ws, "memory"))
	writeFile(t, ws, "SOUL.md", []byte("soul"))
	os.Symlink(filepath.Join(outside, "memory/x.md"), filepath.Join(ws, "USER.md"))

	d := openDir(t, dir)
	if _, err := d.Config(); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Config through a link: %v", err)
	}
	if _, err := d.Sessions("main", SessionOptions{}); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("store through a link: %v", err)
	}
	os.Remove(filepath.Join(dir, "agents/main/agent/openclaw-agent.sqlite"))
	ss, err := d.Sessions("main", SessionOptions{})
	if err != nil || len(ss) != 1 || ss[0].ID != "s1" {
		t.Fatalf("sessions: %v %+v", err, ss)
	}
	// The workspace is found only when the config says nothing; remove the
	// linked config.
	os.Remove(filepath.Join(dir, "openclaw.json"))
	files, err := d.WorkspaceFiles("main")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0].Rel != "SOUL.md" {
		t.Fatalf("workspace files %+v, want SOUL.md only", files)
	}
	// A file swapped for a link after listing is refused on Open.
	os.Remove(filepath.Join(ws, "SOUL.md"))
	os.Symlink(filepath.Join(outside, "AGENTS.md"), filepath.Join(ws, "SOUL.md"))
	if _, err := files[0].Open(); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Open of a swapped file: %v", err)
	}
}

func TestWorkspaceFiles(t *testing.T) {
	dir := t.TempDir()
	ws := t.TempDir()
	writeFile(t, dir, "openclaw.json", []byte(`{agents: {defaults: {workspace: "`+ws+`"}, list: [{id: "main"}, {id: "other", workspace: "rel-ws"}]}}`))
	for _, f := range []string{"AGENTS.md", "MEMORY.md", "notes.txt", "memory/2026-01-01.md", "memory/deep/x.md", "memory/x.txt", "memory/.hidden/y.md", "memory/.z.md"} {
		writeFile(t, ws, f, []byte("# "+f))
	}
	os.MkdirAll(filepath.Join(dir, "rel-ws"), 0o755)
	d := openDir(t, dir)
	agents, err := d.Agents()
	if err != nil {
		t.Fatal(err)
	}
	if len(agents) != 2 || agents[0].Workspace != ws || agents[1].Workspace != filepath.Join(dir, "rel-ws") {
		t.Fatalf("agents %+v", agents)
	}
	files, err := d.WorkspaceFiles("main")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.Rel)
	}
	want := "AGENTS.md MEMORY.md memory/2026-01-01.md memory/deep/x.md"
	if strings.Join(got, " ") != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	rc, err := files[2].Open()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "# memory/2026-01-01.md" {
		t.Errorf("read %q", b)
	}
	// Too big: listed, but Open says why it is not read.
	defer func(n int64) { MaxFileBytes = n }(MaxFileBytes)
	MaxFileBytes = 5
	if _, err := files[0].Open(); err == nil || !strings.Contains(err.Error(), "AGENTS.md is 11 bytes, more than the 5") {
		t.Errorf("big file: %v", err)
	}
}

// TestZstdBomb: an archive that decompresses past the cap fails with a
// message naming the file, in bounded memory.
func TestZstdBomb(t *testing.T) {
	defer func(n int64) { MaxSessionBytes = n }(MaxSessionBytes)
	MaxSessionBytes = 1 << 20
	dir := t.TempDir()
	body := append([]byte(header+"\n"), bytes.Repeat([]byte(" "), 4<<20)...)
	name := "agents/main/sessions/s1.jsonl.deleted.2026-01-01T00-00-00.000Z.zst"
	writeFile(t, dir, name, zst(t, body))
	d := openDir(t, dir)
	ss, err := d.Sessions("main", SessionOptions{Deleted: true})
	if err != nil || len(ss) != 1 {
		t.Fatalf("%v %+v", err, ss)
	}
	if s := ss[0]; !s.Deleted || s.Source != SourceZst || s.ID != "s1" || s.Key != "" {
		t.Errorf("session %+v", s)
	}
	_, err = readAll(t, ss[0])
	if err == nil || !strings.Contains(err.Error(), "decompresses to more than 1048576 bytes") || !strings.Contains(err.Error(), "s1.jsonl.deleted") {
		t.Fatalf("got %v", err)
	}
	// Not asked for deleted sessions: not listed.
	if ss, _ := d.Sessions("main", SessionOptions{}); len(ss) != 0 {
		t.Errorf("listed %+v without Deleted", ss)
	}
}

func TestBadFileSessions(t *testing.T) {
	for _, tc := range []struct{ name, file, body, want string }{
		{"not json", "a.jsonl", "{\n", "line 1: not a session header"},
		{"not header", "a.jsonl", `{"type":"message","id":"x"}` + "\n", `type "message"`},
		{"bad id", "a.jsonl", `{"type":"session","id":"../../etc"}` + "\n", "session id"},
		{"empty", "a.jsonl", "", "empty file"},
		{"bad zst", "a.jsonl.deleted.2026-01-01T00-00-00Z.zst", "not zstd", "zstd"},
		{"long line", "a.jsonl", `{"type":"session","id":"a","x":"` + strings.Repeat("x", 17<<20) + `"}`, "line longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "agents/main/sessions/"+tc.file, []byte(tc.body))
			writeFile(t, dir, "agents/main/sessions/s1.jsonl", []byte(header+"\n"))
			// Listed under the id of its name, beside the good one; Open
			// says what is wrong.
			ss, err := openDir(t, dir).Sessions("main", SessionOptions{Deleted: true})
			if err != nil || len(ss) != 2 {
				t.Fatalf("%v %+v", err, ss)
			}
			var bad Session
			for _, s := range ss {
				if s.ID == "a" {
					bad = s
				}
			}
			_, err = readAll(t, bad)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.file) {
				t.Fatalf("got %v, want %q naming %s", err, tc.want, tc.file)
			}
		})
	}
}

// TestBadFileName: a broken file whose name gives no usable id fails the
// listing, naming it.
func TestBadFileName(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "agents/main/sessions/a b.jsonl", []byte("{"))
	_, err := openDir(t, dir).Sessions("main", SessionOptions{})
	if err == nil || !strings.Contains(err.Error(), "a b.jsonl: line 1") {
		t.Fatalf("got %v", err)
	}
}

func TestBadSessionsIndex(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "agents/main/sessions/sessions.json", []byte(`[`))
	_, err := openDir(t, dir).Sessions("main", SessionOptions{})
	if err == nil || !strings.Contains(err.Error(), "sessions.json: not a JSON object") {
		t.Fatalf("got %v", err)
	}
}

// TestNotAStore: a file named like the store that is not one.
func TestNotAStore(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "agents/main/agent/openclaw-agent.sqlite", []byte("hello, not sqlite"))
	_, err := openDir(t, dir).Sessions("main", SessionOptions{})
	if err == nil || !strings.Contains(err.Error(), "openclaw-agent.sqlite") {
		t.Fatalf("got %v", err)
	}
	dir = t.TempDir()
	p := filepath.Join(dir, "agents/main/agent/openclaw-agent.sqlite")
	os.MkdirAll(filepath.Dir(p), 0o755)
	db, err := sql.Open("sqlite", p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE t (x)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = openDir(t, dir).Sessions("main", SessionOptions{})
	if err == nil || !strings.Contains(err.Error(), "not an OpenClaw 2026.9 agent store") {
		t.Fatalf("got %v", err)
	}
}

func zstdEncode(tb testing.TB, b []byte) []byte {
	tb.Helper()
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		tb.Fatal(err)
	}
	return enc.EncodeAll(b, nil)
}

// storePath is the main agent's store under dir.
func storePath(dir string) string {
	return filepath.Join(dir, "agents/main/agent/openclaw-agent.sqlite")
}

// execStore runs statements on the store at p.
func execStore(t *testing.T, p string, stmts ...string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(p), 0o755)
	w, err := sql.Open("sqlite", p)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, q := range stmts {
		if _, err := w.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// TestStoreRefused: stores that are not what they claim are refused with
// a clear error, and leave no copy behind.
func TestStoreRefused(t *testing.T) {
	const (
		nodes   = `CREATE TABLE session_nodes (session_key TEXT, current_session_id TEXT)`
		windows = `CREATE TABLE session_windows (session_id TEXT, session_key TEXT)`
		events  = `CREATE TABLE transcript_events (session_id TEXT, seq INTEGER, event_json TEXT)`
	)
	for _, tc := range []struct {
		name  string
		body  string   // raw file content, when set
		stmts []string // else the schema
		want  string
	}{
		{"empty file", "\x00", nil, "is not a SQLite database"},
		{"text", "SQLite format 2\x00 and more", nil, `does not begin with "SQLite format 3"`},
		{"short", "SQLite", nil, "is not a SQLite database"},
		{"windows view", "", []string{nodes, events, `CREATE TABLE w (session_id, session_key)`, `CREATE VIEW session_windows AS SELECT * FROM w`}, `session_windows is a "view", not a table`},
		{"events view", "", []string{nodes, windows, `CREATE TABLE e (session_id, seq, event_json)`, `CREATE VIEW transcript_events AS SELECT * FROM e`}, `transcript_events is a "view", not a table`},
		{"nodes view", "", []string{windows, events, `CREATE VIEW session_nodes AS SELECT 1 AS session_key, 2 AS current_session_id`}, `session_nodes is a "view", not a table`},
		{"case", "", []string{nodes, events, `CREATE TABLE w (session_id, session_key)`, `CREATE VIEW Session_Windows AS SELECT * FROM w`}, `session_windows is a "view", not a table`},
		{"virtual", "", []string{nodes, windows, `CREATE VIRTUAL TABLE transcript_events USING fts5(session_id, seq, event_json)`}, "transcript_events is a virtual or unusual table"},
		{"missing", "", []string{nodes, windows}, "no session_windows and transcript_events tables"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TMPDIR", t.TempDir())
			dir := t.TempDir()
			if tc.stmts == nil {
				writeFile(t, dir, "agents/main/agent/openclaw-agent.sqlite", []byte(tc.body))
			} else {
				execStore(t, storePath(dir), tc.stmts...)
			}
			_, err := openDir(t, dir).Sessions("main", SessionOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), storePath(dir)) {
				t.Fatalf("got %v, want %q naming the store", err, tc.want)
			}
			// Refused before the copy, or the copy removed at once.
			if ents, _ := os.ReadDir(os.TempDir()); len(ents) != 0 {
				t.Errorf("left %d temporary entries", len(ents))
			}
		})
	}
	// The same schema with real tables is read.
	dir := t.TempDir()
	execStore(t, storePath(dir), nodes, windows, events)
	if _, err := openDir(t, dir).Sessions("main", SessionOptions{}); err != nil {
		t.Fatalf("plain tables: %v", err)
	}
}

// TestStoreBudget: MaxDatabaseBytes bounds the copies of all agents'
// stores together, not each one.
func TestStoreBudget(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dir := copyTree(t, fixture)
	fi, err := os.Stat(storePath(dir))
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "agents/other/agent/openclaw-agent.sqlite")
	b, _ := os.ReadFile(storePath(dir))
	writeFile(t, dir, "agents/other/agent/openclaw-agent.sqlite", b)
	defer func(n int64) { MaxDatabaseBytes = n }(MaxDatabaseBytes)
	MaxDatabaseBytes = fi.Size() * 3 / 2
	d := openDir(t, dir)
	if _, err := d.Sessions("main", SessionOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = d.Sessions("other", SessionOptions{})
	if err == nil || !strings.Contains(err.Error(), "passes the") || !strings.Contains(err.Error(), other) {
		t.Fatalf("second store: %v", err)
	}
	// The first copy stays usable; Close removes it.
	if _, err := d.Sessions("main", SessionOptions{}); err != nil {
		t.Fatal(err)
	}
	d.Close()
	if ents, _ := os.ReadDir(os.TempDir()); len(ents) != 0 {
		t.Errorf("Close left %d temporary entries", len(ents))
	}
}

// TestStorePragmas: the copy is opened with the hostile schema's code
// untrusted and writes refused.
func TestStorePragmas(t *testing.T) {
	d := openDir(t, copyTree(t, fixture))
	s, err := d.store("main")
	if err != nil {
		t.Fatal(err)
	}
	for pragma, want := range map[string]int{"trusted_schema": 0, "query_only": 1} {
		var got int
		if err := s.sql.QueryRow("PRAGMA " + pragma).Scan(&got); err != nil || got != want {
			t.Errorf("%s = %d (%v), want %d", pragma, got, err, want)
		}
	}
}

// TestEventTooLarge: an event longer than MaxEventBytes is refused by its
// length, naming the session and seq, before its value is read.
func TestEventTooLarge(t *testing.T) {
	for _, tc := range []struct{ name, set, want string }{
		{"json", `event_json = '{"a":"' || hex(zeroblob(2200000)) || '"}', event_zstd = NULL`, "event_json is 4400008 bytes"},
		{"zstd", `event_json = NULL, event_zstd = zeroblob(5000000), event_utf8_bytes = 100`, "event_zstd is 5000000 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyTree(t, fixture)
			var id string
			var seq int64
			// A hostile store need not keep OpenClaw's CHECK constraints.
			w, err := sql.Open("sqlite", "file:"+storePath(dir)+"?_pragma=ignore_check_constraints(1)")
			if err != nil {
				t.Fatal(err)
			}
			if err := w.QueryRow(`SELECT session_id, seq FROM transcript_events WHERE seq > 1 ORDER BY session_id, seq LIMIT 1`).Scan(&id, &seq); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Exec(`UPDATE transcript_events SET `+tc.set+` WHERE session_id = ? AND seq = ?`, id, seq); err != nil {
				t.Fatal(err)
			}
			w.Close()
			ss, err := openDir(t, dir).Sessions("main", SessionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range ss {
				if s.ID != id {
					continue
				}
				_, err := readAll(t, s)
				where := fmt.Sprintf("transcript_events session %s seq %d: ", id, seq)
				if err == nil || !strings.Contains(err.Error(), where+tc.want) || !strings.Contains(err.Error(), "too large") {
					t.Fatalf("got %v, want %q", err, where+tc.want)
				}
				return
			}
			t.Fatalf("session %s not listed", id)
		})
	}
}

// TestLongSessionKey: a huge session id or key is refused by its length.
func TestLongSessionKey(t *testing.T) {
	dir := copyTree(t, fixture)
	execStore(t, storePath(dir), `UPDATE session_windows SET session_key = hex(zeroblob(3000)) WHERE rowid = (SELECT min(rowid) FROM session_windows)`)
	_, err := openDir(t, dir).Sessions("main", SessionOptions{})
	if err == nil || !strings.Contains(err.Error(), "a session id or key is 6000 bytes") {
		t.Fatalf("got %v", err)
	}
}
