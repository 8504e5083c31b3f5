package command

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "rewrite the testscript files' expected output")

// TestScripts runs testdata/script/*.txtar; each script gets its own fake
// gateway on $OPENCLAW_SOCKET.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			g, err := startFakeGateway()
			if err != nil {
				return err
			}
			env.Defer(g.close)
			env.Setenv("OPENCLAW_SOCKET", g.socket)
			env.Setenv("OPENCLAW_STATE_DIR", "")
			env.Setenv("OPENCLAW_CONFIG", "")
			// A -race binary sleeps 1 s at exit by default; the scripts run
			// it dozens of times.
			env.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
			return nil
		},
		UpdateScripts: *update,
	})
}

// TestExitCodes runs the CLI in-process: testscript only tells success from
// failure, the exit code tells errors (1) from usage errors (2).
func TestExitCodes(t *testing.T) {
	g, err := startFakeGateway()
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	down := filepath.Join(g.dir, "down.sock")
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"message", "send", "hello"}, 0, ""},
		{[]string{"message", "send", "fail"}, 1, "↻ failover: local/qwen3-1.7b unreachable; trying ollama/llama3.2\nopenclaw: every model failed: ollama/llama3.2: unreachable (connection refused)\n"},
		{[]string{"--socket", down, "status"}, 1, "openclaw: cannot reach the gateway at " + down + ": is it running? Start it with `openclaw-gateway run` (or `make run`)\n"},
		{[]string{"message", "send", "cut"}, 0, "… lost the gateway (gateway closed the stream early); retrying in 250ms (1)\n"},
		{[]string{"sessions", "history", "agent:main:nope"}, 1, "openclaw: no session agent:main:nope\n"},
		{[]string{"message", "send"}, 2, "openclaw: requires the message text (or --channel, --target and --message)\nRun 'openclaw message send --help' for usage.\n"},
		{[]string{"message", "send", "--session", "agent:main", "hi"}, 2, "openclaw: --session: session key \"agent:main\": want agent:<agentId>:<name>\nRun 'openclaw message send --help' for usage.\n"},
		{[]string{"status", "--frob"}, 2, "openclaw: unknown flag: --frob\nRun 'openclaw status --help' for usage.\n"},
		{[]string{"sesions", "list"}, 2, "openclaw: unknown command \"sesions\" for \"openclaw\"; did you mean sessions?\nRun 'openclaw --help' for usage.\n"},
		{[]string{"sessions", "history", "--limit", "-1", "agent:main:main"}, 2, "openclaw: --limit must be 0 (all) or more, not -1\nRun 'openclaw sessions history --help' for usage.\n"},
		{[]string{"sessions"}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := tt.args
			if args[0] != "--socket" {
				args = append([]string{"--socket", g.socket}, args...)
			}
			code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
			if code != tt.code || stderr.String() != tt.stderr {
				t.Errorf("exit %d, want %d; stderr:\n%s\nwant:\n%s", code, tt.code, stderr.String(), tt.stderr)
			}
		})
	}
}

func TestSummarizeArgs(t *testing.T) {
	tests := []struct{ args, want string }{
		{``, ``},
		{`null`, ``},
		{`{}`, ``},
		{`{"path":"notes.md"}`, `{path: notes.md}`},
		{`{"path":"notes.md","content":"line one\nline two"}`, `{path: notes.md, content: line one↵line two}`},
		{`{"z":1,"a":true,"m":null}`, `{z: 1, a: true, m: null}`}, // key order kept
		{`{"cmd":["ls", "-la"],"env":{"A": "1"}}`, `{cmd: ["ls","-la"], env: {"A":"1"}}`},
		{`{"text":"` + strings.Repeat("x", 60) + `"}`, `{text: ` + strings.Repeat("x", 39) + `…}`},
		{`["not", "an", "object"]`, `["not","an","object"]`},
		{`{"broken":`, `{"broken":`},
	}
	for _, tt := range tests {
		if got := summarizeArgs(json.RawMessage(tt.args)); got != tt.want {
			t.Errorf("summarizeArgs(%s) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

func TestRelTime(t *testing.T) {
	now := time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		ago  time.Duration
		want string
	}{
		{-time.Minute, "just now"}, // clock skew
		{10 * time.Second, "just now"},
		{5*time.Minute + 30*time.Second, "5m ago"},
		{3 * time.Hour, "3h ago"},
		{50 * time.Hour, "2d ago"},
		{40 * 24 * time.Hour, now.Add(-40 * 24 * time.Hour).Local().Format("2006-01-02")},
	}
	for _, tt := range tests {
		if got := relTime(now, now.Add(-tt.ago)); got != tt.want {
			t.Errorf("relTime(-%v) = %q, want %q", tt.ago, got, tt.want)
		}
	}
	if got := relTime(now, time.Time{}); got != "-" {
		t.Errorf("relTime(zero) = %q", got)
	}
}

func TestShellQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"agent:main:main", "agent:main:main"},
		{"/approve a1", "'/approve a1'"},
		{"it's", `'it'\''s'`},
		{"", "''"},
	}
	for _, tt := range tests {
		if got := shellQuote(tt.in); got != tt.want {
			t.Errorf("shellQuote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestHistoryLine(t *testing.T) {
	tests := []struct{ entry, want string }{
		{`{"type":"message","message":{"role":"user","content":"hi\nthere"}}`, "user: hi↵there"},
		{`{"type":"message","message":{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","data":"AA==","mimeType":"image/png"}]}}`, "user: look [image]"},
		{`{"type":"message","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"toolCall","id":"c","name":"read","arguments":{"path":"a.md"}}]}}`, "assistant: → read {path: a.md}"},
		{`{"type":"message","message":{"role":"assistant","content":[],"errorMessage":"boom"}}`, "assistant: (error: boom)"},
		{`{"type":"message","message":{"role":"assistant","content":[]}}`, "assistant: (empty)"},
		{`{"type":"message","message":{"role":"toolResult","toolName":"exec","isError":true,"content":[{"type":"text","text":"\ndenied\nmore"}]}}`, "tool: ✗ exec: denied"},
		{`{"type":"custom_message","customType":"reminder","content":"water the plants"}`, "reminder: water the plants"},
		{`{"type":"branch_summary","summary":"we tried X"}`, "branch summary: we tried X"},
		{`{"type":"custom","customType":"ext-state","data":{}}`, "custom: ext-state"},
		{`{"type":"label"}`, "label"},
		{`{"no":"type"}`, `?: {"no":"type"}`},
		{`not json`, "?: not json"},
	}
	for _, tt := range tests {
		if got := historyLine(json.RawMessage(tt.entry)); got != tt.want {
			t.Errorf("historyLine(%s)\n got %q\nwant %q", tt.entry, got, tt.want)
		}
	}
}

// FuzzHistoryLine: whatever the gateway sends as an entry, history shows
// one line and does not panic.
func FuzzHistoryLine(f *testing.F) {
	f.Add(`{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","name":"x","arguments":{"a":"b\nc"}}]}}`)
	f.Add(`{"type":"message","message":{"role":"user","content":"a\r\nb"}}`)
	f.Add(`{"type":"compaction","summary":"s"}`)
	f.Add(`{"type":"message","message":null}`)
	f.Fuzz(func(t *testing.T, entry string) {
		line := historyLine(json.RawMessage(entry))
		if strings.ContainsAny(line, "\r\n") {
			t.Fatalf("historyLine(%q) = %q: more than one line", entry, line)
		}
	})
}

// FuzzSummarizeArgs: tool arguments from the model render on one line.
func FuzzSummarizeArgs(f *testing.F) {
	f.Add(`{"path":"a","content":"x\ny"}`)
	f.Add(`{"a":{"b":[1,2,{"c":"\n"}]}}`)
	f.Add(`[1,"\n"]`)
	f.Fuzz(func(t *testing.T, args string) {
		s := summarizeArgs(json.RawMessage(args))
		if strings.ContainsAny(s, "\r\n") {
			t.Fatalf("summarizeArgs(%q) = %q: more than one line", args, s)
		}
	})
}
