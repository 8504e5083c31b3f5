package command

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// jsonArgs are arguments that get each --json command past its own
// argument checks, so that it reaches the gateway (or its local work).
// A command missing here runs without arguments: its usage error is then
// what is checked, which is fine, but add it so the gateway path is too.
var jsonArgs = map[string][]string{
	"openclaw agent":                      {"--message", "hi"},
	"openclaw approvals allowlist add":    {"--command", "git status"},
	"openclaw approvals allowlist remove": {"--command", "git status"},
	"openclaw approvals approve":          {"k7m2qp"},
	"openclaw approvals deny":             {"k7m2qp"},
	"openclaw config get":                 {"gateway.port"},
	"openclaw config set":                 {"gateway.port", "18790"},
	"openclaw config unset":               {"gateway.port"},
	"openclaw cron add":                   {"--every", "30m", "--message", "drink water"},
	"openclaw cron disable":               {"j1"},
	"openclaw cron edit":                  {"j1", "--every", "1h"},
	"openclaw cron enable":                {"j1"},
	"openclaw cron rm":                    {"j2"},
	"openclaw cron run":                   {"j1"},
	"openclaw cron runs":                  {"j1"},
	"openclaw cron show":                  {"j1"},
	"openclaw memory search":              {"garden"},
	"openclaw message send":               {"hi"},
	"openclaw models import":              {"/nonexistent/m.gguf"},
	"openclaw models info":                {"qwen3-1.7b"},
	"openclaw models pull":                {"qwen3-1.7b"},
	"openclaw onboard":                    {"--model", "ollama/qwen3:1.7b", "--owner", "whatsapp:+15551234567", "--timezone", "UTC"},
	"openclaw pair":                       {"--host", "127.0.0.1:1", "--code", "K7QXM2PA"},
	"openclaw pairing approve":            {"whatsapp", "ABCD1234"},
	"openclaw pairing deny":               {"whatsapp", "ABCD1234"},
	"openclaw sessions delete":            {"agent:main:main", "--yes"},
	"openclaw sessions history":           {"agent:main:main"},
	"openclaw sessions import":            {"/nonexistent/s.jsonl", "--key", "agent:main:x"},
	"openclaw sessions reset":             {"agent:main:main"},
	"openclaw logs":                       {"-n", "5"},
}

// jsonLinesCommands are the commands whose --json output is JSON Lines: one object
// per line (a log follows).
var jsonLinesCommands = map[string]bool{"openclaw logs": true}

// jsonCommands are the commands of the tree that have --json, with
// migrate's real command (LinkedForTests) in place of its stand-in.
func jsonCommands(t *testing.T) []string {
	t.Helper()
	var out []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.LocalFlags().Lookup("json") != nil {
			out = append(out, c.CommandPath())
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(NewWith(strings.NewReader(""), io.Discard, io.Discard, LinkedForTests))
	if len(out) < 20 {
		t.Fatalf("found only %d --json commands: %v", len(out), out)
	}
	return out
}

// TestJSONConvention: every command with --json prints exactly one JSON
// value on stdout, whatever happens: its own object on success, and
// {"ok": false, "error": {"code", "message"}} (or its own documented
// object with "ok": false) on failure, with a non-zero exit — for a usage
// error, a gateway that is down, and an error the gateway returns.
func TestJSONConvention(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("OPENCLAW_CONFIG_DIR", filepath.Join(home, "cli"))
	for _, v := range []string{"OPENCLAW_SOCKET", "OPENCLAW_STATE_DIR", "OPENCLAW_CONFIG", "OPENCLAW_CONFIG_PATH", "OPENCLAW_GATEWAY"} {
		t.Setenv(v, "")
	}
	t.Setenv("OPENCLAW_SEND_RETRIES", "0")
	g, err := startFakeGateway()
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	down := filepath.Join(g.dir, "down.sock")

	for _, path := range jsonCommands(t) {
		words := strings.Fields(path)[1:]
		args := jsonArgs[path]
		cases := []struct {
			name     string
			argv     []string
			wantFail bool
			code     string // the failure's code; "" any
		}{
			{"usage error", append(append(append([]string{}, words...), args...), "--json", "--frob"), true, "bad_request"},
			{"usage error before --json", append(append(append([]string{}, words...), "--frob"), "--json"), true, "bad_request"},
			{"gateway down", append(append([]string{"--socket", down}, words...), append(args, "--json")...), false, ""},
			{"fake gateway", append(append([]string{"--socket", g.socket}, words...), append(args, "--json")...), false, ""},
		}
		for _, tc := range cases {
			t.Run(path+"/"+tc.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				var stdout, stderr bytes.Buffer
				code := runWith(ctx, tc.argv, strings.NewReader(""), &stdout, &stderr, options{linked: LinkedForTests})
				dec := json.NewDecoder(bytes.NewReader(stdout.Bytes()))
				var v any
				if err := dec.Decode(&v); err != nil {
					t.Fatalf("exit %d; stdout is not JSON (%v):\n%s\nstderr:\n%s", code, err, stdout.String(), stderr.String())
				}
				if dec.More() && !(jsonLinesCommands[path] && code == 0) {
					t.Fatalf("stdout holds more than one JSON value:\n%s", stdout.String())
				}
				if tc.wantFail && code == 0 {
					t.Fatalf("exit 0; want a failure")
				}
				obj, _ := v.(map[string]any)
				failed := obj != nil && obj["ok"] == false
				if code != 0 && !failed {
					t.Fatalf("exit %d but stdout does not say \"ok\": false:\n%s", code, stdout.String())
				}
				if code == 0 {
					return
				}
				if code != 1 && code != 2 {
					t.Errorf("exit %d; want 1 or 2", code)
				}
				if stderr.Len() == 0 {
					t.Error("nothing on stderr: the message must also go there")
				}
				e, isFailure := obj["error"].(map[string]any)
				if !isFailure {
					return // the command's own documented object (config validate)
				}
				if e["message"] == "" || e["code"] == "" {
					t.Errorf("error without code or message: %v", e)
				}
				if tc.code != "" && e["code"] != tc.code {
					t.Errorf("code = %v; want %s", e["code"], tc.code)
				}
				if tc.code == "bad_request" && code != 2 {
					t.Errorf("usage error exit %d; want 2", code)
				}
			})
		}
	}
}

// A failure of a command without --json, or of an unknown command, prints
// nothing on stdout; with --json even an unknown command answers in JSON.
func TestJSONUnknownCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"sesions", "list", "--json"}, strings.NewReader(""), &stdout, &stderr); code != 2 {
		t.Fatalf("exit %d", code)
	}
	var f failure
	if err := json.Unmarshal(stdout.Bytes(), &f); err != nil || f.OK || f.Error.Code != "bad_request" {
		t.Fatalf("stdout %q: %v", stdout.String(), err)
	}
	stdout.Reset()
	if code := run(context.Background(), []string{"sesions", "list"}, strings.NewReader(""), &stdout, &stderr); code != 2 || stdout.Len() != 0 {
		t.Fatalf("exit %d, stdout %q", code, stdout.String())
	}
}

// Interrupted: exit 130, and with --json the failure object says so.
func TestInterruptedExit(t *testing.T) {
	g, err := startFakeGateway()
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"--socket", g.socket, "status", "--json"}, strings.NewReader(""), &stdout, &stderr)
	if code != 130 {
		t.Fatalf("exit %d; want 130 (stderr %q)", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), `"code": "interrupted"`) || stderr.String() != "openclaw: interrupted\n" {
		t.Errorf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
}
