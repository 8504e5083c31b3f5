//go:build unix

package openclawdir

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within runs f and fails the test when it does not return in time: a
// FIFO opened for reading blocks until a writer comes. Then it opens fifo
// for writing, so the reader wakes and the test ends instead of hanging.
func within(t *testing.T, fifo string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatalf("blocked opening %s", fifo)
		return nil
	}
}

func mkfifo(t *testing.T, p string) {
	t.Helper()
	os.Remove(p)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFIFOs: a named pipe (or folder) where a file is read is refused,
// naming it, instead of blocking the read forever.
func TestFIFOs(t *testing.T) {
	sessions := func(d *Dir) error { _, err := d.Sessions("main", SessionOptions{}); return err }
	for _, tc := range []struct {
		name, file string
		dir        bool // a folder instead of a FIFO
		call       func(*Dir) error
		want       string
	}{
		{"config", "openclaw.json", false, func(d *Dir) error { _, err := d.Config(); return err }, "named pipe"},
		{"config folder", "openclaw.json", true, func(d *Dir) error { _, err := d.Config(); return err }, "a folder"},
		{"agents", "openclaw.json", false, func(d *Dir) error { _, err := d.Agents(); return err }, "named pipe"},
		{"index", "agents/main/sessions/sessions.json", false, sessions, "named pipe"},
		{"store", "agents/main/agent/openclaw-agent.sqlite", false, sessions, "named pipe"},
		{"store folder", "agents/main/agent/openclaw-agent.sqlite", true, sessions, "a folder"},
		{"wal", "agents/main/agent/openclaw-agent.sqlite-wal", false, sessions, "named pipe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TMPDIR", t.TempDir())
			dir := copyTree(t, fixture)
			p := filepath.Join(dir, filepath.FromSlash(tc.file))
			if tc.dir {
				os.Remove(p)
				os.Mkdir(p, 0o755)
			} else {
				mkfifo(t, p)
			}
			d := openDir(t, dir)
			err := within(t, p, func() error { return tc.call(d) })
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("got %v, want %q naming %s", err, tc.want, p)
			}
			d.Close()
			if ents, _ := os.ReadDir(os.TempDir()); len(ents) != 0 {
				t.Errorf("left %d temporary copies", len(ents))
			}
		})
	}
}

// TestFIFOSwapped: a transcript swapped for a FIFO after it was listed, or
// between the check and the open, is refused on Open without blocking.
func TestFIFOSwapped(t *testing.T) {
	for _, name := range []string{"6f1d2c3b-0a9e-4b8c-9d7e-5f4a3b2c1d0e.jsonl", "c9057dfa-bc8f-4149-9c49-042fcece4be9.jsonl.deleted.2026-11-26T11-42-46.734Z.zst"} {
		t.Run(name, func(t *testing.T) {
			dir := copyTree(t, fixture)
			os.Remove(filepath.Join(dir, "agents/main/agent/openclaw-agent.sqlite"))
			p := filepath.Join(dir, "agents/main/sessions", name)
			ss, err := openDir(t, dir).Sessions("main", SessionOptions{Deleted: true})
			if err != nil {
				t.Fatal(err)
			}
			var s *Session
			for i := range ss {
				if strings.HasPrefix(name, ss[i].ID) {
					s = &ss[i]
				}
			}
			if s == nil {
				t.Fatalf("%s not listed: %+v", name, ss)
			}
			// Swapped after the listing: the Lstat sees it.
			mkfifo(t, p)
			err = within(t, p, func() error { _, err := s.Open(); return err })
			if err == nil || !strings.Contains(err.Error(), "named pipe") || !strings.Contains(err.Error(), name) {
				t.Fatalf("after listing: got %v", err)
			}
			// Swapped between the Lstat and the open: O_NONBLOCK and the
			// Stat of the open file see it.
			os.Remove(p)
			writeFile(t, dir, "agents/main/sessions/"+name, []byte(header+"\n"))
			testHookBeforeOpen = func(string) { mkfifo(t, p) }
			defer func() { testHookBeforeOpen = nil }()
			err = within(t, p, func() error { _, err := s.Open(); return err })
			if err == nil || !strings.Contains(err.Error(), "named pipe") || !strings.Contains(err.Error(), name) {
				t.Fatalf("between check and open: got %v", err)
			}
		})
	}
}

// TestSweepStaleCopies: Open removes this user's copy folders left for
// more than a day by a run that died, and nothing else.
func TestSweepStaleCopies(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	old := time.Now().Add(-48 * time.Hour)
	mk := func(name string, inner bool, innerOld bool) string {
		p := filepath.Join(tmp, name)
		os.Mkdir(p, 0o700)
		if inner {
			f := writeFile(t, p, "main.sqlite", []byte("x"))
			if innerOld {
				os.Chtimes(f, old, old)
			}
		}
		os.Chtimes(p, old, old)
		return p
	}
	stale := mk("openclaw-migrate-1", true, true)
	staleEmpty := mk("openclaw-migrate-2", false, false)
	inUse := mk("openclaw-migrate-3", true, false)
	notOurs := mk("other-4", true, true)
	target := t.TempDir()
	writeFile(t, target, "main.sqlite", []byte("x"))
	link := filepath.Join(tmp, "openclaw-migrate-5")
	os.Symlink(target, link)
	fresh := filepath.Join(tmp, "openclaw-migrate-6")
	os.Mkdir(fresh, 0o700)

	openDir(t, copyTree(t, fixture))
	for p, want := range map[string]bool{stale: false, staleEmpty: false, inUse: true, notOurs: true, link: true, fresh: true} {
		if _, err := os.Lstat(p); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(p), err == nil, want)
		}
	}
	if _, err := os.Stat(filepath.Join(target, "main.sqlite")); err != nil {
		t.Errorf("followed the link: %v", err)
	}
}
