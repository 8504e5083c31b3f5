package safebin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzCheck: Check never panics, and whatever it accepts keeps every path
// inside the workspace. The oracle is independent of the profile parser
// for cat (whose options take no values, so every non-option argument is
// a file) and, for every bin, checks the paths the parser reported with a
// plain EvalSymlinks of the whole path when it exists.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		"ls -la sub", "cat a.txt", "cat /etc/passwd", "cat ../x", "cat pw", "cat out/passwd",
		"sort --co=sh a.txt", "sort -o/etc/x", "sort --output=../x", "sort -T /tmp", "grep -r x /",
		"grep -f /etc/passwd x", "date -f /etc/shadow", "date +%s", "head -- /etc/passwd", "tail -5f a.txt",
		"ls $HOME", "ls ~", "cat a*", "FOO=1 ls", "ls; id", "ls | sh", "ls > f", "$(id)", "`id`",
		"ls\nid", "ls\r", "ls\x00", `cat "a"'.'txt`, `cat a\.txt`, "uniq a.txt b.txt", "wc --files0-from=x",
		"cat -- -n", "cat sub/../a.txt", "cat in", "grep -e x -f a.txt sub", "cut -d/ -f1 a.txt",
	} {
		f.Add(s)
	}
	ws := workspace(f)
	wsReal, err := filepath.EvalSymlinks(ws)
	if err != nil {
		f.Fatal(err)
	}
	in := func(p string) bool {
		if !filepath.IsAbs(p) {
			p = filepath.Join(ws, p)
		}
		r, err := filepath.EvalSymlinks(p)
		if err != nil {
			return true // does not exist (or not resolvable): nothing to read there
		}
		return r == wsReal || strings.HasPrefix(r, wsReal+string(filepath.Separator))
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		r := Check(cmd, defaultBins, ws, ws)
		if !r.Safe {
			if r.Reason == "" {
				t.Errorf("Check(%q): not safe without a reason", cmd)
			}
			return
		}
		if len(r.Argv) == 0 {
			t.Fatalf("Check(%q): safe without an argv", cmd)
		}
		paths, reason := profiles()[r.Argv[0]].check(r.Argv[0], r.Argv[1:])
		if reason != "" {
			t.Fatalf("Check(%q): safe, but the profile now says %s", cmd, reason)
		}
		for _, p := range paths {
			if !in(p) {
				t.Errorf("Check(%q) accepted path %q outside the workspace", cmd, p)
			}
		}
		if r.Argv[0] == "cat" {
			operands := false
			for _, a := range r.Argv[1:] {
				if operands || a == "-" || !strings.HasPrefix(a, "-") {
					if !in(a) {
						t.Errorf("Check(%q) accepted cat of %q outside the workspace", cmd, a)
					}
				} else if a == "--" {
					operands = true
				}
			}
		}
		if _, err := os.Stat(ws); err != nil {
			t.Fatal(err)
		}
	})
}
