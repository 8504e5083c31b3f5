package fs

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/openclaw-edge/edge/engine/tool"
)

// FuzzToolArgs runs every file tool with arbitrary JSON arguments in a fresh
// workspace beside a directory it must never touch: no panic, and nothing
// outside the workspace changes (docs/design.md §10: tool arguments from the
// model are untrusted input).
func FuzzToolArgs(f *testing.F) {
	tools := Tools(Config{MaxReadBytes: 1 << 16})
	for i, args := range []string{
		`{"path":"a.txt"}`, `{"path":"../outside/canary.txt"}`, `{"path":"/etc/passwd"}`,
		`{"path":"link/canary.txt","content":"pwned"}`, `{"path":"sub/new.txt","content":"x"}`,
		`{"path":"a.txt","oldText":"hello","newText":"bye"}`, `{"file_path":"a.txt","old_string":"hello","new_string":""}`,
		`{"input":"*** Begin Patch\n*** Add File: ../outside/x\n+x\n*** End Patch"}`,
		`{"input":"*** Begin Patch\n*** Update File: a.txt\n*** Move to: link/moved.txt\n@@\n-hello\n+bye\n*** End Patch"}`,
		`{"pattern":"hello","path":".."}`, `{"pattern":"**/*","path":"link"}`, `{"path":"link"}`,
		`{"path":"a.txt","offset":-5,"limit":1e99}`, `{"path":"~/x"}`, `null`, `[]`, `"{\"path\":\"a.txt\"}"`, `{"path":"\u0000"}`,
	} {
		f.Add(uint8(i), args)
	}
	f.Fuzz(func(t *testing.T, which uint8, args string) {
		root := t.TempDir()
		ws, outside := filepath.Join(root, "ws"), filepath.Join(root, "outside")
		for _, d := range []string{ws, outside} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		canary := filepath.Join(outside, "canary.txt")
		if err := os.WriteFile(canary, []byte("canary"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello\nworld\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(ws, "link")); err != nil {
			t.Fatal(err)
		}
		tl := tools[int(which)%len(tools)]
		res := tl.Run(context.Background(), tool.Env{Workspace: ws, ResultChars: 4000}, json.RawMessage(args))
		_ = res
		entries, err := os.ReadDir(outside)
		if err != nil || len(entries) != 1 {
			t.Fatalf("%s %s: the directory outside the workspace changed: %v %v", tl.Spec().Name, args, entries, err)
		}
		if b, err := os.ReadFile(canary); err != nil || string(b) != "canary" {
			t.Fatalf("%s %s: the file outside the workspace changed: %q %v", tl.Spec().Name, args, b, err)
		}
		top, _ := os.ReadDir(root)
		if len(top) != 2 {
			t.Fatalf("%s %s: something was created beside the workspace: %v", tl.Spec().Name, args, top)
		}
	})
}
