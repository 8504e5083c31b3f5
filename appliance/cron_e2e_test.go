//go:build !noimessage

package main

import (
	"bytes"
	"context"
	"encoding/json"

	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/cli/command"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/channel/imessage/imsgtest"
)

// The scheduler's "Done means", end to end with the real parts: the
// gateway is this test binary run as openclaw-gateway in its own process
// (SIGKILL is real), iMessage is imsgtest's fake `imsg rpc`, the model is
// the chat-template test model in a real openclaw-runner with the shipped
// defaults (tools on, the real system prompt), its replies scripted
// through $OPENCLAW_RUNNER_SCRIPT (the runner forces the script's tokens
// through the model instead of sampling: models/llamacpp/runner/
// script_on.go), and the CLI is the real openclaw.

// The test binary, run as the gateway, honours OPENCLAW_TEST_CLOCK_OFFSET.
func init() {
	testClockHook = func() func() time.Time {
		off, err := time.ParseDuration(os.Getenv(testClockEnv))
		if err != nil {
			return nil
		}
		return func() time.Time { return time.Now().Add(off) }
	}
}

// procGW is a gateway process of this test binary.
type procGW struct {
	t      *testing.T
	link   string // openclaw-gateway → this test binary
	dir    string
	socket string
	env    []string
	cmd    *exec.Cmd
	exited chan struct{}
	logMu  sync.Mutex
	log    bytes.Buffer
}

func newProcGW(t *testing.T, config string, env ...string) *procGW {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	link := filepath.Join(dir, "openclaw-gateway")
	if err := os.Symlink(exe, link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "openclaw.json"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	sockDir, err := os.MkdirTemp("", "occ")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	g := &procGW{t: t, link: link, dir: dir, socket: filepath.Join(sockDir, "gw.sock"), env: env}
	t.Cleanup(func() {
		if g.cmd != nil && g.cmd.ProcessState == nil {
			g.kill()
		}
		if t.Failed() {
			t.Logf("gateway log:\n%s", g.logs())
		}
	})
	return g
}

func (g *procGW) Write(p []byte) (int, error) {
	g.logMu.Lock()
	defer g.logMu.Unlock()
	return g.log.Write(p)
}

func (g *procGW) logs() string {
	g.logMu.Lock()
	defer g.logMu.Unlock()
	return g.log.String()
}

// start runs the gateway with extra environment and waits until it answers.
func (g *procGW) start(extra ...string) {
	g.t.Helper()
	os.Remove(g.socket)
	cmd := exec.Command(g.link, "run", "--config", filepath.Join(g.dir, "openclaw.json"), "--state-dir", filepath.Join(g.dir, "state"), "--socket", g.socket)
	cmd.Env = append(append(append(os.Environ(), "HOME="+g.dir, "GORACE=atexit_sleep_ms=0"), g.env...), extra...)
	cmd.Stdout, cmd.Stderr = g, g
	if err := cmd.Start(); err != nil {
		g.t.Fatal(err)
	}
	g.cmd = cmd
	g.exited = make(chan struct{})
	go func() { _ = cmd.Wait(); close(g.exited) }()
	cl := client.New(g.socket)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := cl.Status(context.Background()); err == nil {
			return
		}
		select {
		case <-g.exited:
			g.t.Fatalf("the gateway exited at start:\n%s", g.logs())
		default:
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("the gateway did not answer:\n%s", g.logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitLinked waits until the iMessage channel is linked: its first link
// starts reading after the newest message, so one added before is never
// read.
func (g *procGW) waitLinked() {
	g.t.Helper()
	cl := client.New(g.socket)
	deadline := time.Now().Add(60 * time.Second)
	for {
		list, err := cl.Channels(context.Background())
		if err == nil && len(list) == 1 && list[0].State == "linked" {
			return
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("imessage not linked: %+v %v\n%s", list, err, g.logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (g *procGW) kill() {
	_ = g.cmd.Process.Signal(syscall.SIGKILL)
	<-g.exited
}

// cli runs the real openclaw CLI against the gateway.
func (g *procGW) cli(args ...string) string {
	g.t.Helper()
	var stdout, stderr bytes.Buffer
	root := command.New(strings.NewReader(""), &stdout, &stderr)
	root.SetArgs(append([]string{"--socket", g.socket}, args...))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := root.ExecuteContext(ctx); err != nil {
		g.t.Fatalf("openclaw %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// TestReminderSurvivesRestart is issue 25's first "Done means": the owner
// asks on iMessage for a reminder in two minutes; the local model's tool
// call makes the job; the gateway is SIGKILLed and started again (its
// clock shifted to just before the reminder is due: the test clock); the
// reminder arrives in the owner's chat once, on time, and `openclaw cron
// runs` shows the run.
func TestReminderSurvivesRestart(t *testing.T) {
	model := scriptableModel(t)
	f := imsgtest.New(t, imsgtest.Config{})
	// The model's replies, one per completion: the tool call in the
	// runner's three phases (free text up to the call's opener, the
	// call's JSON, what follows it), the answer after the tool result,
	// then the reminder's own turn.
	script := []string{
		"<tool_call>",
		`{"name": "cron", "arguments": {"action": "add", "in": "2m", "message": "Remind the user to water the plants"}}`,
		"",
		"Okay, I will remind you in 2 minutes.",
		"Time to water the plants!",
	}
	scriptPath := writeScript(t, script)
	// The shipped defaults (no model config: the catalog's default
	// qwen3-1.7b, imported below from the test model; tools on), an
	// owner and the iMessage channel.
	cfg := `{
  commands: { ownerAllowFrom: ['imessage:` + imOwner + `'] },
  channels: { imessage: { cliPath: '` + f.Path + `', dbPath: '/Users/me/Library/Messages/chat.db' } },
}`
	g := newProcGW(t, cfg, "OPENCLAW_RUNNER="+runnerPath(), "OPENCLAW_RUNNER_SCRIPT="+scriptPath)
	g.start()
	g.cli("models", "import", model, "--name", "qwen3-1.7b")
	g.waitLinked()

	f.Add(imsgtest.DM(1, imOwnerChat, imOwner, "remind me in 2 minutes to water the plants"))
	sends := waitSends(t, f, imOwnerChat, 1, 120*time.Second, g)
	if sends[0]["text"] != "Okay, I will remind you in 2 minutes." {
		t.Fatalf("answer = %v", sends[0])
	}
	var jobs []api.CronJob
	if err := json.Unmarshal([]byte(g.cli("cron", "list", "--json")), &jobs); err != nil || len(jobs) != 1 {
		t.Fatalf("cron list: %v %+v", err, jobs)
	}
	job := jobs[0]
	due := time.UnixMilli(job.State.NextRunAtMs)
	if d := time.Until(due); d < 100*time.Second || d > 2*time.Minute {
		t.Fatalf("the job is due in %s, want about 2m: %+v", d, job)
	}
	if job.Schedule.Kind != api.ScheduleAt || job.SessionKey != "agent:main:main" || job.Delivery.Channel != api.DeliveryLast || !strings.HasPrefix(job.CreatedBy, "agent:") {
		t.Errorf("job %+v", job)
	}

	g.kill()
	// Restarted with its clock shifted so the reminder is due 8 s after
	// the start: the test clock. Nothing may be sent before.
	offset := time.Until(due) - 8*time.Second
	g.start(testClockEnv + "=" + offset.String())
	restarted := time.Now()
	sends = waitSends(t, f, imOwnerChat, 2, 120*time.Second, g)
	arrived := time.Now().Add(offset)
	if sends[1]["text"] != "Time to water the plants!" {
		t.Fatalf("reminder = %v", sends[1])
	}
	if arrived.Before(due) {
		t.Fatalf("the reminder arrived at %s (test clock), before it was due at %s", arrived, due)
	}
	if late := arrived.Sub(due); late > 45*time.Second {
		t.Errorf("the reminder arrived %s after it was due (restarted %s before)", late, time.Since(restarted))
	}
	var runs []api.CronRun
	if err := json.Unmarshal([]byte(g.cli("cron", "runs", "--id", job.ID, "--json")), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("cron runs: %v %+v", err, runs)
	}
	if r := runs[0]; r.Status != api.RunOK || r.Late || r.ScheduledMs != job.State.NextRunAtMs || !strings.HasPrefix(r.Delivered, "imessage:") || r.StartedMs < r.ScheduledMs {
		t.Errorf("run %+v", r)
	}
	if out := g.cli("cron", "list", "--all", "--json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("the one-shot job is still listed: %s", out)
	}
	// Once: a while later there is still one reminder.
	time.Sleep(2 * time.Second)
	if n := len(imSendsTo(f, imOwnerChat)); n != 2 {
		t.Errorf("%d sends to the owner's chat, want 2: %v", n, f.Sends())
	}
	g.kill()
}

// scriptableModel skips t without a real runner or the chat-template test
// model, and returns the model's path.
func scriptableModel(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end")
	}
	if why := buildRunner(); why != "" {
		t.Skip(why)
	}
	model, err := filepath.Abs("../../shared/models/llama-2-tiny-random-chatml-tools.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(model); err != nil {
		t.Skip("no chat-template test model: ", err)
	}
	return model
}

// writeScript writes the runner's scripted replies ($OPENCLAW_RUNNER_SCRIPT)
// and returns the file's path.
func writeScript(t *testing.T, script []string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "script.json")
	data, _ := json.Marshal(script)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func imSendsTo(f *imsgtest.Fake, chat int64) []map[string]any {
	var out []map[string]any
	for _, s := range f.Sends() {
		if s["chat_id"] == float64(chat) {
			out = append(out, s)
		}
	}
	return out
}

func waitSends(t *testing.T, f *imsgtest.Fake, chat int64, n int, timeout time.Duration, g *procGW) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if s := imSendsTo(f, chat); len(s) >= n {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sends to chat %d after %s, want %d: %v\n%s", len(imSendsTo(f, chat)), chat, timeout, n, f.Sends(), g.logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHeartbeatLocalModel is issue 25's heartbeat "Done means" on the
// local test model (scripted runner) in a real gateway process: a beat
// answered HEARTBEAT_OK sends nothing and leaves no trace in the main
// session's history; one with something to say reaches the owner's chat
// once; outside active hours the timer's beat is skipped without calling
// the model.
func TestHeartbeatLocalModel(t *testing.T) {
	model := scriptableModel(t)
	f := imsgtest.New(t, imsgtest.Config{})
	const sentinel = "THE MODEL WAS CALLED IN QUIET HOURS"
	script := []string{"Hello!", "HEARTBEAT_OK", "The plumber comes at 3 today.", sentinel}
	scriptPath := writeScript(t, script)
	cfg := `{
  commands: { ownerAllowFrom: ['imessage:` + imOwner + `'] },
  channels: { imessage: { cliPath: '` + f.Path + `', dbPath: '/Users/me/Library/Messages/chat.db' } },
  agents: { defaults: { heartbeat: { every: '30m', target: 'last', activeHours: { start: '08:00', end: '22:00', timezone: 'UTC' } } } },
}`
	g := newProcGW(t, cfg, "OPENCLAW_RUNNER="+runnerPath(), "OPENCLAW_RUNNER_SCRIPT="+scriptPath)
	// The gateway's clock reads noon UTC (inside the active hours), then,
	// after a restart, 23:00 (outside).
	now := time.Now().UTC()
	noon := time.Date(now.Year(), now.Month(), now.Day(), 12, 0, 0, 0, time.UTC)
	if noon.Before(now) {
		noon = noon.Add(24 * time.Hour)
	}
	g.start(testClockEnv + "=" + time.Until(noon).String())
	g.cli("models", "import", model, "--name", "qwen3-1.7b")
	ws := filepath.Join(g.dir, "state", "workspace")
	if err := os.WriteFile(filepath.Join(ws, "HEARTBEAT.md"), []byte("# Heartbeat\n- Tell the user when the plumber comes.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g.waitLinked()
	f.Add(imsgtest.DM(1, imOwnerChat, imOwner, "hi"))
	waitSends(t, f, imOwnerChat, 1, 60*time.Second, g)

	var st api.HeartbeatStatus
	if err := json.Unmarshal([]byte(g.cli("system", "heartbeat", "run", "--json")), &st); err != nil || st.Last == nil || st.Last.Status != "ok" {
		t.Fatalf("HEARTBEAT_OK beat: %v %+v", err, st.Last)
	}
	if hist := g.cli("sessions", "history", "agent:main:main", "--json"); strings.Contains(hist, "HEARTBEAT_OK") || strings.Contains(hist, "Read HEARTBEAT.md") {
		t.Errorf("the HEARTBEAT_OK beat left a trace in the main session's history:\n%s", hist)
	}
	if err := json.Unmarshal([]byte(g.cli("system", "heartbeat", "run", "--json")), &st); err != nil || st.Last == nil || st.Last.Status != "sent" {
		t.Fatalf("beat with news: %v %+v", err, st.Last)
	}
	sends := waitSends(t, f, imOwnerChat, 2, 60*time.Second, g)
	if sends[1]["text"] != "The plumber comes at 3 today." {
		t.Fatalf("sent %v", sends[1])
	}

	// 23:00, past the last beat's interval: the loop beats at once, and
	// skips it (quiet hours) without a model call.
	g.kill()
	eleven := noon.Add(11 * time.Hour)
	g.start(testClockEnv + "=" + time.Until(eleven).String())
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := json.Unmarshal([]byte(g.cli("system", "heartbeat", "last", "--json")), &st); err != nil {
			t.Fatal(err)
		}
		if st.Last != nil && st.Last.Status == "skipped" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no skipped beat in quiet hours: %+v", st.Last)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st.Last.Reason != "quiet-hours" {
		t.Errorf("skip reason %q, want quiet-hours", st.Last.Reason)
	}
	if left, _ := os.ReadFile(scriptPath); !strings.Contains(string(left), sentinel) {
		t.Errorf("the model was called in quiet hours (script left: %s)", left)
	}
	time.Sleep(time.Second)
	if n := len(imSendsTo(f, imOwnerChat)); n != 2 {
		t.Errorf("%d sends to the owner's chat, want 2: %v", n, f.Sends())
	}
	g.kill()
}
