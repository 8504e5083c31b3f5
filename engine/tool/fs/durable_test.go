package fs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/openclaw-edge/edge/engine/tool"
)

// TestWriteSyncsNewDirectories: writeFile knows which directories it
// creates (their parents' entries are synced after the rename) and the
// directory syncs succeed on this file system.
func TestWriteSyncsNewDirectories(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := openWorkspace(tool.Env{Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if got, want := w.missingDirs("a/b/c"), []string{"a/b/c", "a/b"}; !slices.Equal(got, want) {
		t.Errorf("missingDirs = %q, want %q", got, want)
	}
	if got := w.missingDirs("."); len(got) != 0 {
		t.Errorf("missingDirs(.) = %q", got)
	}
	if err := w.writeFile("a/b/c/f.txt", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := w.writeFile("top.txt", []byte("y")); err != nil {
		t.Fatal(err)
	}
	if err := w.remove("top.txt"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a/b/c/f.txt")); err != nil || string(b) != "x" {
		t.Errorf("read back %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "top.txt")); !os.IsNotExist(err) {
		t.Errorf("top.txt not removed: %v", err)
	}
}
