package fs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/openclaw-edge/edge/engine/tool"
)

// TestCreatedRecordsNewFilesOnly: the file tools record in Env.Created the
// files they create, by inode and content; a file that existed (overwritten,
// edited, reached through a symlink) is not recorded, and a recorded file
// replaced or rewritten by anything else no longer counts.
func TestCreatedRecordsNewFilesOnly(t *testing.T) {
	f := newFixture(t)
	f.env.Created = &tool.Created{}
	f.write("MEMORY.md", "secret 4711\n")
	f.write("old.md", "old\n")
	f.symlink("MEMORY.md", "to-memory.md")
	abs := func(rel string) string { return filepath.Join(f.ws, rel) }
	for _, c := range []struct {
		name string
		args any
	}{
		{"write", map[string]string{"path": "new.md", "content": "chart\n"}},
		{"write", map[string]string{"path": "deep/er/new.md", "content": "chart\n"}},
		{"write", map[string]string{"path": "old.md", "content": "overwritten\n"}},
		{"write", map[string]string{"path": "to-memory.md", "content": "through a link\n"}},
		{"edit", map[string]string{"path": "MEMORY.md", "oldText": "through", "newText": "via"}},
		{"apply_patch", map[string]string{"input": "*** Begin Patch\n*** Add File: patched.md\n+hello\n*** End Patch"}},
	} {
		if r := f.run(c.name, c.args); r.IsError {
			t.Fatalf("%s %v: %s", c.name, c.args, clipped(r.Content[0].Text))
		}
	}
	for rel, want := range map[string]bool{
		"new.md": true, "deep/er/new.md": true, "patched.md": true,
		"old.md": false, "to-memory.md": false, "MEMORY.md": false, "nope.md": false,
	} {
		if got := f.env.Created.Has(abs(rel)); got != want {
			t.Errorf("Has(%s) = %v, want %v", rel, got, want)
		}
	}
	// Replaced by a hard link, by a symlink, rewritten in place: no longer
	// what the tool made.
	if err := os.Remove(abs("new.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(abs("MEMORY.md"), abs("new.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(abs("deep/er/new.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(abs("MEMORY.md"), abs("deep/er/new.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(abs("patched.md"), []byte("public 4711\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"new.md", "deep/er/new.md", "patched.md"} {
		if f.env.Created.Has(abs(rel)) {
			t.Errorf("Has(%s) after it was replaced", rel)
		}
	}
	var none *tool.Created
	if none.Has(abs("MEMORY.md")) {
		t.Error("a nil Created has a file")
	}
}
