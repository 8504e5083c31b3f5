package fs

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/tool"
)

// fixture is a workspace with an "outside" directory next to it.
type fixture struct {
	t       *testing.T
	ws      string
	outside string
	tools   map[string]tool.Tool
	env     tool.Env
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	base := t.TempDir()
	f := &fixture{t: t, ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside"), tools: map[string]tool.Tool{}}
	for _, d := range []string{f.ws, f.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f.env = tool.Env{Workspace: f.ws, AgentID: "main", SessionKey: "agent:main:main"}
	for _, tl := range Tools(Config{}) {
		f.tools[tl.Spec().Name] = tl
	}
	f.writeOutside("secret.txt", "top secret\n")
	// Escape hatches planted in the workspace.
	f.symlink(filepath.Join(f.outside, "secret.txt"), "link-out.txt")
	f.symlink(f.outside, "dir-out")
	return f
}

func (f *fixture) write(rel, content string) {
	f.t.Helper()
	p := filepath.Join(f.ws, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) writeOutside(name, content string) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.outside, name), []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) symlink(target, rel string) {
	f.t.Helper()
	if err := os.Symlink(target, filepath.Join(f.ws, rel)); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) read(rel string) string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.ws, rel))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

func (f *fixture) exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// run calls a tool with args given as a Go value.
func (f *fixture) run(name string, args any) engine.ToolResult {
	f.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		f.t.Fatal(err)
	}
	return f.tools[name].Run(context.Background(), f.env, raw)
}

// clipped keeps failure messages readable.
func clipped(s string) string {
	if len(s) > 600 {
		return s[:300] + "\n…\n" + s[len(s)-300:]
	}
	return s
}

func text(r engine.ToolResult) string {
	if len(r.Content) == 0 {
		return ""
	}
	return r.Content[0].Text
}

// outsideSnapshot lists the outside directory with contents, to prove
// nothing there changed.
func (f *fixture) outsideSnapshot() string {
	var b strings.Builder
	_ = filepath.WalkDir(f.outside, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + "\n")
		if !d.IsDir() {
			c, _ := os.ReadFile(p)
			b.Write(c)
		}
		return nil
	})
	return b.String()
}

type toolCase struct {
	name    string
	tool    string
	args    map[string]any
	wantErr bool
	want    []string // substrings of the first text block
}

func (f *fixture) check(tests []toolCase) {
	f.t.Helper()
	for _, tt := range tests {
		f.t.Run(tt.name, func(t *testing.T) {
			before := f.outsideSnapshot()
			res := f.run(tt.tool, tt.args)
			if res.IsError != tt.wantErr {
				t.Errorf("IsError = %v, want %v: %s", res.IsError, tt.wantErr, text(res))
			}
			for _, w := range tt.want {
				if !strings.Contains(text(res), w) {
					t.Errorf("result does not contain %q:\n%s", w, clipped(text(res)))
				}
			}
			if after := f.outsideSnapshot(); after != before {
				t.Errorf("the directory outside the workspace changed:\n%s\nwas\n%s", after, before)
			}
		})
	}
}

func TestConfinement(t *testing.T) {
	f := newFixture(t)
	f.write("ok.txt", "fine\n")
	outsideMsg := "is outside the workspace " + f.ws
	var tests []toolCase
	escapes := []string{"../outside/secret.txt", filepath.Join(f.outside, "secret.txt"), "link-out.txt", "dir-out/secret.txt", "a/../../outside/secret.txt", "/etc/passwd"}
	for _, p := range escapes {
		tests = append(tests,
			toolCase{"read " + p, "read", map[string]any{"path": p}, true, []string{outsideMsg}},
			toolCase{"write " + p, "write", map[string]any{"path": p, "content": "pwned"}, true, []string{outsideMsg}},
			toolCase{"edit " + p, "edit", map[string]any{"path": p, "oldText": "top", "newText": "pwned"}, true, []string{outsideMsg}},
		)
	}
	tests = append(tests,
		toolCase{"write new file under escaping dir", "write", map[string]any{"path": "dir-out/new/x.txt", "content": "pwned"}, true, []string{outsideMsg}},
		toolCase{"ls ..", "ls", map[string]any{"path": ".."}, true, []string{outsideMsg}},
		toolCase{"ls escaping link", "ls", map[string]any{"path": "dir-out"}, true, []string{outsideMsg}},
		toolCase{"grep ..", "grep", map[string]any{"pattern": "secret", "path": "../outside"}, true, []string{outsideMsg}},
		toolCase{"grep through link dir", "grep", map[string]any{"pattern": "secret", "path": "dir-out"}, true, []string{outsideMsg}},
		toolCase{"find ..", "find", map[string]any{"pattern": "*", "path": ".."}, true, []string{outsideMsg}},
		toolCase{"patch add outside", "apply_patch", map[string]any{"input": "*** Begin Patch\n*** Add File: ok2.txt\n+a\n*** Add File: ../outside/evil.txt\n+pwned\n*** End Patch\n"}, true, []string{outsideMsg, "nothing was changed"}},
		toolCase{"patch update via link", "apply_patch", map[string]any{"input": "*** Begin Patch\n*** Update File: link-out.txt\n@@\n-top secret\n+pwned\n*** End Patch"}, true, []string{outsideMsg}},
		toolCase{"patch move outside", "apply_patch", map[string]any{"input": "*** Begin Patch\n*** Update File: ok.txt\n*** Move to: dir-out/moved.txt\n@@\n-fine\n+moved\n*** End Patch"}, true, []string{outsideMsg}},
		toolCase{"absolute path inside is fine", "read", map[string]any{"path": filepath.Join(f.ws, "ok.txt")}, false, []string{"fine"}},
	)
	f.check(tests)
	if f.exists(filepath.Join(f.ws, "ok2.txt")) {
		t.Error("a refused patch still created ok2.txt")
	}
	if got := f.read("ok.txt"); got != "fine\n" {
		t.Errorf("ok.txt = %q after refused patches", got)
	}
	// The grep through the workspace root must not follow dir-out either.
	res := f.run("grep", map[string]any{"pattern": "top secret"})
	if strings.Contains(text(res), "secret.txt:") {
		t.Errorf("grep followed a link out of the workspace:\n%s", text(res))
	}
}

func TestRead(t *testing.T) {
	f := newFixture(t)
	var lines []string
	for i := 1; i <= 3000; i++ {
		lines = append(lines, "line "+string(rune('a'+i%26)))
	}
	f.write("big.txt", strings.Join(lines, "\n")+"\n")
	f.write("small.txt", "one\ntwo\nthree")
	f.write("empty.txt", "")
	f.write("bin.dat", "abc\x00def")
	f.write("long.txt", strings.Repeat("x", 50_000)+"\nsecond\n")
	png := "\x89PNG\r\n\x1a\n" + "fakeimagedata"
	f.write("pic.bin", png)
	f.check([]toolCase{
		{"small", "read", map[string]any{"path": "small.txt"}, false, []string{"one\ntwo\nthree"}},
		{"file_path alias", "read", map[string]any{"file_path": "small.txt"}, false, []string{"one"}},
		{"offset and limit", "read", map[string]any{"path": "small.txt", "offset": 2, "limit": 1}, false, []string{"two\n", "[... more lines; use offset=3]"}},
		{"string offset", "read", map[string]any{"path": "small.txt", "offset": "3"}, false, []string{"three"}},
		{"default limit", "read", map[string]any{"path": "big.txt"}, false, []string{"[... more lines; use offset="}},
		{"offset beyond end", "read", map[string]any{"path": "small.txt", "offset": 10}, true, []string{"offset 10 is beyond the end", "(3 lines)"}},
		{"empty", "read", map[string]any{"path": "empty.txt"}, false, []string{"(empty file)"}},
		{"binary", "read", map[string]any{"path": "bin.dat"}, true, []string{"binary file"}},
		{"directory", "read", map[string]any{"path": "."}, true, []string{"is a directory"}},
		{"missing", "read", map[string]any{"path": "nope.txt"}, true, []string{`"nope.txt" does not exist`}},
		{"no path", "read", map[string]any{}, true, []string{"path is required"}},
	})
	f.env.ResultChars = 16_000
	f.check([]toolCase{
		{"long line", "read", map[string]any{"path": "long.txt"}, false, []string{"line 1 is longer than this page", "offset=2"}},
		{"after the long line", "read", map[string]any{"path": "long.txt", "offset": 2}, false, []string{"second"}},
	})
	// Paging stops at the result budget and says where to continue.
	f.env.ResultChars = 1000
	res := f.run("read", map[string]any{"path": "big.txt"})
	if n := len(text(res)); n > 1000 {
		t.Errorf("page of %d chars exceeds the 1000-char budget", n)
	}
	if !strings.Contains(text(res), "use offset=") {
		t.Errorf("no continuation hint: %q", text(res))
	}
	// Images by magic bytes.
	res = f.run("read", map[string]any{"path": "pic.bin"})
	if res.IsError || len(res.Content) != 2 || res.Content[1].Type != engine.BlockImage || res.Content[1].MimeType != "image/png" {
		t.Fatalf("image read = %+v", res)
	}
	if data, _ := base64.StdEncoding.DecodeString(res.Content[1].Data); string(data) != png {
		t.Error("image data differs")
	}
}

func TestWrite(t *testing.T) {
	f := newFixture(t)
	f.write("inside-target.txt", "old\n")
	f.symlink("inside-target.txt", "link-in.txt")
	f.write("mode.sh", "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(f.ws, "mode.sh"), 0o750); err != nil {
		t.Fatal(err)
	}
	f.check([]toolCase{
		{"new file with dirs", "write", map[string]any{"path": "a/b/c.txt", "content": "hello"}, false, []string{"Wrote 5 bytes to a/b/c.txt"}},
		{"overwrite", "write", map[string]any{"path": "a/b/c.txt", "content": "bye"}, false, []string{"Wrote 3 bytes"}},
		{"empty content", "write", map[string]any{"path": "e.txt", "content": ""}, false, []string{"Wrote 0 bytes to e.txt"}},
		{"missing content", "write", map[string]any{"path": "x.txt"}, true, []string{"content is required"}},
		{"through inside link", "write", map[string]any{"path": "link-in.txt", "content": "new\n"}, false, []string{"Wrote 4 bytes"}},
		{"keeps mode", "write", map[string]any{"path": "mode.sh", "content": "#!/bin/sh\necho\n"}, false, nil},
		{"directory", "write", map[string]any{"path": "a", "content": "x"}, true, []string{"is a directory"}},
		{"workspace itself", "write", map[string]any{"path": ".", "content": "x"}, true, []string{"workspace directory"}},
	})
	if got := f.read("a/b/c.txt"); got != "bye" {
		t.Errorf("c.txt = %q", got)
	}
	if got := f.read("inside-target.txt"); got != "new\n" {
		t.Errorf("write through an inside link: target = %q", got)
	}
	if fi, _ := os.Lstat(filepath.Join(f.ws, "link-in.txt")); fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the inside symlink was replaced by a file")
	}
	if fi, _ := os.Stat(filepath.Join(f.ws, "mode.sh")); fi.Mode().Perm() != 0o750 {
		t.Errorf("mode.sh mode = %v, want 0750", fi.Mode().Perm())
	}
	// No temporary files left behind.
	entries, _ := os.ReadDir(filepath.Join(f.ws, "a", "b"))
	if len(entries) != 1 {
		t.Errorf("a/b holds %d entries, want 1", len(entries))
	}
}

func TestEdit(t *testing.T) {
	f := newFixture(t)
	f.write("code.go", "package x\n\nfunc A() int {\n\treturn 1\n}\n\nfunc B() int {\n\treturn 1\n}\n")
	f.write("crlf.txt", "alpha\r\nbeta\r\ngamma\r\n")
	f.check([]toolCase{
		{"unique", "edit", map[string]any{"path": "code.go", "oldText": "func A() int {\n\treturn 1", "newText": "func A() int {\n\treturn 2"}, false,
			[]string{"Edited code.go: replaced 2 lines with 2 lines at line 3", "-\treturn 1", "+\treturn 2"}},
		{"several", "edit", map[string]any{"path": "code.go", "oldText": "int {", "newText": "int64 {"}, true,
			[]string{"occurs 2 times in code.go (at lines 3, 7)"}},
		{"none", "edit", map[string]any{"path": "code.go", "oldText": "func C()", "newText": "x"}, true,
			[]string{"oldText was not found in code.go"}},
		{"whitespace hint", "edit", map[string]any{"path": "code.go", "oldText": "  func B() int {", "newText": "x"}, true,
			[]string{"different surrounding whitespace"}},
		{"old_string aliases", "edit", map[string]any{"path": "code.go", "old_string": "func B", "new_string": "func Bee"}, false, []string{"Edited code.go"}},
		{"identical", "edit", map[string]any{"path": "code.go", "oldText": "x", "newText": "x"}, true, []string{"identical"}},
		{"empty oldText", "edit", map[string]any{"path": "code.go", "oldText": "", "newText": "x"}, true, []string{"must not be empty"}},
		{"crlf file", "edit", map[string]any{"path": "crlf.txt", "oldText": "beta\ngamma", "newText": "BETA\nGAMMA"}, false, []string{"Edited crlf.txt"}},
		{"missing file", "edit", map[string]any{"path": "nope.go", "oldText": "a", "newText": "b"}, true, []string{"does not exist"}},
	})
	want := "package x\n\nfunc A() int {\n\treturn 2\n}\n\nfunc Bee() int {\n\treturn 1\n}\n"
	if got := f.read("code.go"); got != want {
		t.Errorf("code.go =\n%s\nwant\n%s", got, want)
	}
	if got := f.read("crlf.txt"); got != "alpha\r\nBETA\r\nGAMMA\r\n" {
		t.Errorf("crlf.txt = %q", got)
	}
}

func TestGrep(t *testing.T) {
	f := newFixture(t)
	f.write("src/a.go", "package a\n// TODO: one\nfunc A() {}\n")
	f.write("src/b.ts", "// todo two\nconst b = 1\nconst c = 2\nconst d = 3 // TODO three\n")
	f.write("notes.md", "a.b literal\naxb\n")
	f.write(".git/config", "TODO in git\n")
	f.write("bin.dat", "TODO\x00binary")
	many := strings.Repeat("match\n", 300)
	f.write("many.txt", many)
	f.check([]toolCase{
		{"regexp", "grep", map[string]any{"pattern": "TODO:? \\w+", "path": "src"}, false,
			[]string{"src/a.go:2: // TODO: one", "src/b.ts:4: const d = 3 // TODO three"}},
		{"ignore case", "grep", map[string]any{"pattern": "todo two", "ignoreCase": true, "path": "src"}, false, []string{"src/b.ts:1: // todo two"}},
		{"glob", "grep", map[string]any{"pattern": "TODO", "glob": "*.go"}, false, []string{"src/a.go:2:"}},
		{"glob braces", "grep", map[string]any{"pattern": "TODO", "glob": "src/**/*.{ts,js}"}, false, []string{"src/b.ts:4:"}},
		{"literal", "grep", map[string]any{"pattern": "a.b", "literal": true, "path": "notes.md"}, false, []string{"notes.md:1: a.b literal"}},
		{"context", "grep", map[string]any{"pattern": "const c", "context": 1, "path": "src/b.ts"}, false,
			[]string{"src/b.ts-2- const b = 1\nsrc/b.ts:3: const c = 2\nsrc/b.ts-4- const d = 3 // TODO three"}},
		{"limit", "grep", map[string]any{"pattern": "match", "path": "many.txt", "limit": 5}, false, []string{"many.txt:5: match", "stopped at 5 matches"}},
		{"no match", "grep", map[string]any{"pattern": "zzz"}, false, []string{"No matches found"}},
		{"bad regexp", "grep", map[string]any{"pattern": "(("}, true, []string{"bad regular expression"}},
		{"missing dir", "grep", map[string]any{"pattern": "x", "path": "nope"}, true, []string{"does not exist"}},
	})
	res := f.run("grep", map[string]any{"pattern": "TODO"})
	for _, bad := range []string{".git/config", "bin.dat"} {
		if strings.Contains(text(res), bad) {
			t.Errorf("grep searched %s:\n%s", bad, text(res))
		}
	}
	if strings.Contains(text(f.run("grep", map[string]any{"pattern": "literal", "glob": "*.go"})), "notes.md") {
		t.Error("glob did not filter")
	}
	if got := text(f.run("grep", map[string]any{"pattern": "match", "path": "many.txt"})); strings.Count(got, "\n") != 100 {
		t.Errorf("default limit: %d lines", strings.Count(got, "\n"))
	}
}

func TestFindAndLs(t *testing.T) {
	f := newFixture(t)
	f.write("src/a.go", "")
	f.write("src/sub/b.go", "")
	f.write("src/sub/c.ts", "")
	f.write("README.md", "")
	f.write(".git/HEAD", "")
	f.write(".hidden", "")
	if err := os.Mkdir(filepath.Join(f.ws, "emptydir"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.check([]toolCase{
		{"find base name", "find", map[string]any{"pattern": "*.go"}, false, []string{"src/a.go\nsrc/sub/b.go"}},
		{"find doublestar", "find", map[string]any{"pattern": "src/**/*.ts"}, false, []string{"src/sub/c.ts"}},
		{"find under path", "find", map[string]any{"pattern": "sub/*", "path": "src"}, false, []string{"src/sub/b.go\nsrc/sub/c.ts"}},
		{"find dirs", "find", map[string]any{"pattern": "sub"}, false, []string{"src/sub/"}},
		{"find limit", "find", map[string]any{"pattern": "*", "limit": 2}, false, []string{"more results; showing the first 2"}},
		{"find none", "find", map[string]any{"pattern": "*.rs"}, false, []string{"No files found"}},
		{"find bad glob", "find", map[string]any{"pattern": "[a"}, true, []string{"bad glob"}},
		{"ls root", "ls", map[string]any{}, false, []string{".git/\n.hidden\nREADME.md\ndir-out\nemptydir/\nlink-out.txt\nsrc/"}},
		{"ls sub", "ls", map[string]any{"path": "src/sub"}, false, []string{"b.go\nc.ts"}},
		{"ls limit", "ls", map[string]any{"limit": 2}, false, []string{".git/\n.hidden\n[... 5 more entries"}},
		{"ls empty", "ls", map[string]any{"path": "emptydir"}, false, []string{"(empty directory)"}},
		{"ls file", "ls", map[string]any{"path": "README.md"}, true, []string{"is a file"}},
	})
	if got := text(f.run("find", map[string]any{"pattern": "*"})); strings.Contains(got, ".git/HEAD") {
		t.Errorf("find entered .git:\n%s", got)
	}
}

func TestSpecsAreSimple(t *testing.T) {
	for _, tl := range Tools(Config{}) {
		spec := tl.Spec()
		var schema map[string]any
		if err := json.Unmarshal(spec.Parameters, &schema); err != nil {
			t.Errorf("%s: schema: %v", spec.Name, err)
		}
		if schema["type"] != "object" {
			t.Errorf("%s: schema type %v", spec.Name, schema["type"])
		}
		for _, banned := range []string{`"pattern":{"type":"string","pattern"`, `"maxLength"`, `"$ref"`} {
			if strings.Contains(string(spec.Parameters), banned) {
				t.Errorf("%s: schema uses %s", spec.Name, banned)
			}
		}
	}
}
