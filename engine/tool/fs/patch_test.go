package fs

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestApplyPatch(t *testing.T) {
	f := newFixture(t)
	f.write("hello.py", "def greet():\n    print(\"hi\")\n\n\ndef main():\n    greet()\n    return 0\n")
	f.write("old.txt", "to be moved\nline two\n")
	f.write("gone.txt", "delete me\n")
	f.write("crlf.txt", "one\r\ntwo\r\nthree\r\n")

	patch := `*** Begin Patch
*** Add File: new/dir/created.txt
+first
+second
*** Update File: hello.py
@@ def greet():
-    print("hi")
+    print("hello")
@@ def main():
     greet()
-    return 0
+    return 1
*** Update File: old.txt
*** Move to: moved/new.txt
@@
 to be moved
-line two
+line 2
*** Delete File: gone.txt
*** Update File: crlf.txt
@@
 one
-two
+TWO
*** End Patch
`
	res := f.run("apply_patch", map[string]any{"input": patch})
	if res.IsError {
		t.Fatalf("apply_patch failed: %s", text(res))
	}
	wantSummary := "Success. Updated the following files:\nA new/dir/created.txt\nM hello.py\nM old.txt -> moved/new.txt\nD gone.txt\nM crlf.txt"
	if text(res) != wantSummary {
		t.Errorf("summary:\n%s\nwant\n%s", text(res), wantSummary)
	}
	want := map[string]string{
		"new/dir/created.txt": "first\nsecond\n",
		"hello.py":            "def greet():\n    print(\"hello\")\n\n\ndef main():\n    greet()\n    return 1\n",
		"moved/new.txt":       "to be moved\nline 2\n",
		"crlf.txt":            "one\r\nTWO\r\nthree\r\n",
	}
	for p, w := range want {
		if got := f.read(p); got != w {
			t.Errorf("%s = %q, want %q", p, got, w)
		}
	}
	for _, p := range []string{"old.txt", "gone.txt"} {
		if f.exists(filepath.Join(f.ws, p)) {
			t.Errorf("%s still exists", p)
		}
	}
}

func TestApplyPatchAllOrNothing(t *testing.T) {
	tests := []struct {
		name  string
		patch string
		want  string // substring of the error
	}{
		{"second hunk does not match", `*** Begin Patch
*** Add File: added.txt
+new
*** Update File: a.txt
@@
-alpha
+ALPHA
*** Update File: b.txt
@@
-no such line
+x
*** End Patch`, "hunk 1: these lines were not found in b.txt"},
		{"delete of a missing file", `*** Begin Patch
*** Update File: a.txt
@@
-alpha
+ALPHA
*** Delete File: missing.txt
*** End Patch`, `"missing.txt" does not exist`},
		{"update of a missing file", `*** Begin Patch
*** Update File: a.txt
@@
-alpha
+ALPHA
*** Update File: nope.txt
@@
-x
+y
*** End Patch`, `"nope.txt" does not exist`},
		{"same file twice", `*** Begin Patch
*** Update File: a.txt
@@
-alpha
+ALPHA
*** Delete File: ./a.txt
*** End Patch`, "touched twice"},
		{"cut off patch", `*** Begin Patch
*** Update File: a.txt
@@
-alpha
+ALPHA`, "the last line of the patch must be \"*** End Patch\""},
		{"missing context", `*** Begin Patch
*** Update File: a.txt
@@ func nowhere()
-alpha
+ALPHA
*** End Patch`, `context line "func nowhere()" was not found`},
		{"delete a directory", `*** Begin Patch
*** Update File: a.txt
@@
-alpha
+ALPHA
*** Delete File: sub
*** End Patch`, "is a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.write("a.txt", "alpha\nbeta\n")
			f.write("b.txt", "one\ntwo\n")
			f.write("sub/keep.txt", "k\n")
			before := snapshot(t, f.ws)
			res := f.run("apply_patch", map[string]any{"input": tt.patch})
			if !res.IsError {
				t.Fatalf("patch applied: %s", text(res))
			}
			if !strings.Contains(text(res), tt.want) || !strings.Contains(text(res), "nothing was changed") {
				t.Errorf("error %q, want it to contain %q and say nothing was changed", text(res), tt.want)
			}
			if after := snapshot(t, f.ws); after != before {
				t.Errorf("workspace changed:\n%s\nwas\n%s", after, before)
			}
		})
	}
}

// snapshot lists a tree with file contents.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(strings.TrimPrefix(p, dir) + "\n")
		if d.Type().IsRegular() {
			c, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.Write(c)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestParsePatch(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []fileOp
		wantErr string
	}{
		{"add and delete", "*** Begin Patch\n*** Add File: a.txt\n+x\n+\n*** Delete File: b.txt\n*** End Patch\n",
			[]fileOp{{kind: opAdd, path: "a.txt", lines: []string{"x", ""}}, {kind: opDelete, path: "b.txt"}}, ""},
		{"update with move and eof", "*** Begin Patch\n*** Update File: a\n*** Move to: b\n@@ ctx\n keep\n-old\n+new\n*** End of File\n*** End Patch",
			[]fileOp{{kind: opUpdate, path: "a", moveTo: "b", chunks: []chunk{{context: "ctx", oldLines: []string{"keep", "old"}, newLines: []string{"keep", "new"}, endOfFile: true}}}}, ""},
		{"first hunk without @@", "*** Begin Patch\n*** Update File: a\n-old\n+new\n*** End Patch",
			[]fileOp{{kind: opUpdate, path: "a", chunks: []chunk{{oldLines: []string{"old"}, newLines: []string{"new"}}}}}, ""},
		{"crlf and heredoc", "apply_patch <<'EOF'\r\n*** Begin Patch\r\n*** Delete File: x\r\n*** End Patch\r\nEOF\r\n",
			[]fileOp{{kind: opDelete, path: "x"}}, ""},
		{"unified diff header", "*** Begin Patch\n*** Update File: a\n@@ -1,2 +1,2 @@\n-old\n+new\n*** End Patch",
			[]fileOp{{kind: opUpdate, path: "a", chunks: []chunk{{oldLines: []string{"old"}, newLines: []string{"new"}}}}}, ""},
		{"no begin", "*** Update File: a\n*** End Patch", nil, "first line of the patch must be"},
		{"no end", "*** Begin Patch\n*** Delete File: a\n", nil, "last line of the patch must be"},
		{"empty patch", "*** Begin Patch\n*** End Patch", nil, "no file operations"},
		{"bad op", "*** Begin Patch\n*** Rename File: a\n*** End Patch", nil, "line 2: \"*** Rename File: a\" is not a valid file operation"},
		{"update without hunks", "*** Begin Patch\n*** Update File: a\n*** End Patch", nil, "has no hunks"},
		{"second hunk without @@", "*** Begin Patch\n*** Update File: a\n@@\n-a\n+b\n@@\n-c\n+d\nbogus\n*** End Patch", nil, "expected a hunk starting with @@"},
		{"empty path", "*** Begin Patch\n*** Add File: \n*** End Patch", nil, "needs a path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parsePatch(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestApplyChunks(t *testing.T) {
	tests := []struct {
		name    string
		content string
		chunks  []chunk
		want    string
		wantErr string
	}{
		{"replace", "a\nb\nc\n", []chunk{{oldLines: []string{"b"}, newLines: []string{"B"}}}, "a\nB\nc\n", ""},
		{"insert after context", "func f() {\n}\nfunc g() {\n}\n", []chunk{{context: "func g() {", newLines: []string{"\tx()"}}}, "func f() {\n}\nfunc g() {\n\tx()\n}\n", ""},
		{"append at end", "a\n", []chunk{{newLines: []string{"z"}}}, "a\nz\n", ""},
		{"trailing whitespace tolerated", "a  \nb\n", []chunk{{oldLines: []string{"a"}, newLines: []string{"A"}}}, "A\nb\n", ""},
		{"indentation tolerated", "    a\nb\n", []chunk{{oldLines: []string{"a"}, newLines: []string{"A"}}}, "A\nb\n", ""},
		{"typographic quotes", "say(\"hi\") - ok\n", []chunk{{oldLines: []string{"say(“hi”) — ok"}, newLines: []string{"x"}}}, "x\n", ""},
		{"end of file prefers the end", "x\ny\nx\n", []chunk{{oldLines: []string{"x"}, newLines: []string{"X"}, endOfFile: true}}, "x\ny\nX\n", ""},
		{"hunks in order", "x\ny\nx\n", []chunk{{oldLines: []string{"y"}, newLines: []string{"Y"}}, {oldLines: []string{"x"}, newLines: []string{"X"}}}, "x\nY\nX\n", ""},
		{"delete everything", "a\n", []chunk{{oldLines: []string{"a"}}}, "", ""},
		{"no newline at end gets one", "a\nb", []chunk{{oldLines: []string{"b"}, newLines: []string{"c"}}}, "a\nc\n", ""},
		{"not found", "a\n", []chunk{{oldLines: []string{"q"}, newLines: []string{"r"}}}, "", "were not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := applyChunks(tt.content, tt.chunks, "f")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func FuzzParsePatch(f *testing.F) {
	f.Add("*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\n", "x\n")
	f.Add("*** Begin Patch\n*** Update File: a\n*** Move to: b\n@@ ctx\n keep\n-old\n+new\n\n@@\n-q\n*** End of File\n*** End Patch", "ctx\nkeep\nold\nq\n")
	f.Add("apply_patch <<EOF\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF", "")
	f.Add("*** Begin Patch\n*** Update File: a\n-\n+\n \n*** End Patch", "\n\n")
	f.Fuzz(func(t *testing.T, patch, content string) {
		ops, err := parsePatch(patch)
		if err != nil {
			return
		}
		if len(ops) == 0 {
			t.Fatal("parsed a patch with no operations")
		}
		// Rendering and parsing again gives the same operations.
		again, err := parsePatch(formatPatch(ops))
		if err != nil {
			t.Fatalf("formatted patch does not parse: %v\n%s", err, formatPatch(ops))
		}
		if !reflect.DeepEqual(normalizeOps(ops), normalizeOps(again)) {
			t.Fatalf("round trip changed the patch:\n%#v\n%#v", ops, again)
		}
		for _, op := range ops {
			if op.path == "" || (op.kind == opUpdate && len(op.chunks) == 0) {
				t.Fatalf("bad op %#v", op)
			}
			if op.kind == opUpdate {
				// Applying never panics; a result always ends with a newline.
				if out, err := applyChunks(content, op.chunks, op.path); err == nil && out != "" && !strings.HasSuffix(out, "\n") {
					t.Fatalf("applied content %q lacks a final newline", out)
				}
			}
		}
	})
}

// normalizeOps drops differences formatPatch cannot preserve (hunk line
// order within a hunk is preserved per side; context lines become -/+).
func normalizeOps(ops []fileOp) []fileOp {
	out := make([]fileOp, len(ops))
	for i, op := range ops {
		op.lines = append([]string{}, op.lines...)
		var cs []chunk
		for _, c := range op.chunks {
			c.oldLines = append([]string{}, c.oldLines...)
			c.newLines = append([]string{}, c.newLines...)
			cs = append(cs, c)
		}
		op.chunks = cs
		out[i] = op
	}
	return out
}

func FuzzCompileGlob(f *testing.F) {
	f.Add("src/**/*.{ts,tsx}", "src/a/b.ts")
	f.Add("*.go", "x/y.go")
	f.Add("{a,{b,c}}/**", "c/d")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		g, err := compileGlob(pattern)
		if err != nil {
			return
		}
		if len(g.alts) == 0 || len(g.alts) > maxGlobAlternatives {
			t.Fatalf("%d alternatives", len(g.alts))
		}
		_ = g.match(name)
	})
}
