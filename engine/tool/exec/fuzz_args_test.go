package exec_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/tool"
	"github.com/openclaw-edge/edge/engine/tool/exec"
)

// FuzzExecArgs runs exec and process with arbitrary JSON arguments under a
// policy that denies everything (security "deny", no safe bins, no
// approver): argument decoding never panics, and nothing runs — a command
// that would create a file does not.
func FuzzExecArgs(f *testing.F) {
	tools := exec.Tools(exec.Config{Security: "deny", Ask: "off", SafeBins: []string{}, Timeout: time.Second, ApprovalTimeout: time.Millisecond})
	f.Cleanup(func() {
		for _, tl := range tools {
			if c, ok := tl.(io.Closer); ok {
				c.Close()
			}
		}
	})
	for i, args := range []string{
		`{"command":"touch ran"}`, `{"command":"echo hi > ran","background":true}`, `{"command":"ls","workdir":"..","env":{"LD_PRELOAD":"x"}}`,
		`{"command":"","timeout":-1}`, `{"command":"touch ran","timeout":1e308,"yieldMs":"x"}`, `{"cmd":["touch","ran"]}`,
		`{"action":"list"}`, `{"action":"poll","sessionId":"nope"}`, `{"action":"kill","sessionId":"../../x"}`,
		`{"action":"write","sessionId":"1","data":"\u0000"}`, `{"action":"log","offset":-1,"limit":99999999999}`, `null`, `7`, `"x"`,
	} {
		f.Add(uint8(i), args)
	}
	f.Fuzz(func(t *testing.T, which uint8, args string) {
		ws := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond) // decoding is quick; a poll that waits is cut short
		defer cancel()
		tl := tools[int(which)%len(tools)]
		tl.Run(ctx, tool.Env{Workspace: ws}, json.RawMessage(args))
		if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
			t.Fatalf("%s %s: a command ran under a deny-all policy", tl.Spec().Name, args)
		}
	})
}
