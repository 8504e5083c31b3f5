package tool

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCreatedSnapshot: the copy sent is taken in the same read that checks
// the file, so swapping the name afterwards (for a link to the owner's
// notes) changes nothing that is sent; a file changed before the snapshot
// is refused.
func TestCreatedSnapshot(t *testing.T) {
	dir := t.TempDir()
	ws, out := filepath.Join(dir, "ws"), filepath.Join(dir, "media", "out")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(ws, "MEMORY.md")
	if err := os.WriteFile(secret, []byte("locker 4711"), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(name, data string) (string, *Created) {
		p := filepath.Join(ws, name)
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(data); err != nil {
			t.Fatal(err)
		}
		fi, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		c := &Created{}
		c.Add(fi, []byte(data))
		return p, c
	}

	p, c := write("chart.md", "chart")
	snap, ok := c.Snapshot(p, out)
	if !ok {
		t.Fatal("a file the tool wrote was refused")
	}
	// The name is swapped for a symlink to MEMORY.md after the check.
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, p); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(snap); string(got) != "chart" {
		t.Fatalf("the copy sent is %q", got)
	}
	if _, ok := c.Snapshot(p, out); ok {
		t.Fatal("a symlink to MEMORY.md over the written name was accepted")
	}

	p2, c2 := write("x.md", "chart")
	if err := os.WriteFile(p2, []byte("locke"), 0o600); err != nil { // same size, other bytes
		t.Fatal(err)
	}
	if _, ok := c2.Snapshot(p2, out); ok {
		t.Fatal("a file rewritten in place was accepted")
	}
	var nilCreated *Created
	if _, ok := nilCreated.Snapshot(secret, out); ok {
		t.Fatal("nil Created accepted a file")
	}
	ents, _ := os.ReadDir(out)
	if len(ents) != 1 {
		t.Fatalf("refused snapshots left files behind: %d in media/out", len(ents))
	}
}
