package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestWrite: a write that succeeds replaces the file (mode 0600); one that
// fails leaves the old file as it was and no temporary file behind.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.jsonl")
	put := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	for _, tc := range []struct {
		name  string
		write func(io.Writer) error
		want  string
		err   bool
	}{
		{"new file", put("one\n"), "one\n", false},
		{"replaces", put("two\n"), "two\n", false},
		{"failed write keeps the old file", func(w io.Writer) error {
			_, _ = io.WriteString(w, "half")
			return errors.New("source broke")
		}, "two\n", true},
	} {
		err := Write(path, tc.write)
		if (err != nil) != tc.err {
			t.Fatalf("%s: err = %v, want error %v", tc.name, err, tc.err)
		}
		b, rerr := os.ReadFile(path)
		if rerr != nil || string(b) != tc.want {
			t.Errorf("%s: file = %q, %v; want %q", tc.name, b, rerr, tc.want)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v; want 0600", tc.name, fi.Mode().Perm(), err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("%s: %d entries in the dir, want only the file", tc.name, len(ents))
		}
	}
	if err := Write(filepath.Join(dir, "no-such-dir", "x"), put("x")); err == nil {
		t.Error("a write into a missing directory succeeded")
	}
}
