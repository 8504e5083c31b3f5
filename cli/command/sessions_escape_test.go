package command

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine/api"
)

// TestSessionsHistoryEscapes: `sessions history` prints what strangers
// wrote and tools printed; terminal escape sequences, carriage returns,
// bidi overrides and zero-width characters in it show escaped, never raw,
// while --json keeps the exact text.
func TestSessionsHistoryEscapes(t *testing.T) {
	hostile := "hi \x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\rowner approved\u202etxt.exe\u200b\u2028bye"
	user, _ := json.Marshal(map[string]any{"type": "message", "id": "e1", "message": map[string]any{
		"role": "user", "content": []map[string]any{{"type": "text", "text": hostile}},
	}})
	tool, _ := json.Marshal(map[string]any{"type": "message", "id": "e2", "message": map[string]any{
		"role": "toolResult", "toolName": "exec\x1b[31m", "content": []map[string]any{{"type": "text", "text": "\x1b[1mbold\x1b[0m"}},
	}})
	dir, err := os.MkdirTemp("", "oc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "gw.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != api.PathSessionHistory {
			fakeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: "not here"})
			return
		}
		fakeJSON(w, 200, api.History{SessionKey: r.URL.Query().Get("key"), SessionID: "0f3c9a51", Entries: []json.RawMessage{user, tool}})
	}))
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)

	for _, tt := range []struct {
		name  string
		args  []string
		check func(t *testing.T, out string)
	}{
		{"table", nil, func(t *testing.T, out string) {
			if strings.ContainsAny(out, "\x1b\x07\r\u202e\u200b\u2028") {
				t.Fatalf("raw control characters reach the terminal: %q", out)
			}
			for _, want := range []string{`\x1b]52;c;cm0gLXJmIH4=\a\x1b[2J↵owner approved\u202etxt.exe\u200b\u2028bye`, `exec\x1b[31m`, `\x1b[1mbold\x1b[0m`} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if n := strings.Count(out, "\n"); n != 2 {
				t.Errorf("%d lines, want one per entry:\n%s", n, out)
			}
		}},
		{"json stays exact", []string{"--json"}, func(t *testing.T, out string) {
			var h api.History
			if err := json.Unmarshal([]byte(out), &h); err != nil || len(h.Entries) != 2 {
				t.Fatalf("--json: %v %q", err, out)
			}
			var e struct {
				Message struct {
					Content []struct{ Text string } `json:"content"`
				} `json:"message"`
			}
			if err := json.Unmarshal(h.Entries[0], &e); err != nil || len(e.Message.Content) != 1 || e.Message.Content[0].Text != hostile {
				t.Fatalf("--json changed the text: %v %+v", err, e)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"--socket", sock, "sessions", "history", "agent:main:whatsapp:direct:+15550001111"}, tt.args...)
			if code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			tt.check(t, stdout.String())
		})
	}
}
