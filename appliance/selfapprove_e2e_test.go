//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/tool/exec/sandbox"
	"github.com/openclaw-edge/edge/models/openai/openaitest"
)

// orphanScript is what the approved command leaves behind: a process
// that keeps posting every decision for whatever approval id it finds in
// next-id, through every local path it has — curl --unix-socket and the
// real openclaw CLI (this test binary under that name) — and logs each
// answer. It tells its parent when it has done one round.
const orphanScript = `echo $$ > orphan.pid
n=0
while :; do
  id=$(cat next-id 2>/dev/null || echo none)
  for d in elevated allow-once allow-always; do
    out=$(curl -sS -m 5 --unix-socket "$SOCK" -X POST -H 'Content-Type: application/json' -d "{\"decision\":\"$d\"}" "http://gw/v1/approvals/$id" 2>&1)
    echo "curl $d $id: $out" | tr '\n' ' ' >> attempts.log; echo >> attempts.log
    flag=; case $d in elevated) flag=--elevated;; allow-always) flag=--always;; esac
    out=$(OPENCLAW_SOCKET="$SOCK" ./openclaw approvals approve "$id" $flag 2>&1)
    echo "cli $d $id: rc=$? $out" | tr '\n' ' ' >> attempts.log; echo >> attempts.log
  done
  n=$((n+1)); [ $n -eq 1 ] && : > round1
  sleep 0.05
done
`

// attackScript double-forks: setsid, background, then exits once the
// orphan has tried once, leaving it to be reparented.
const attackScript = `setsid sh ./orphan.sh </dev/null >/dev/null 2>&1 &
i=0
while [ ! -e round1 ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done
echo forked
`

// TestSelfApprovalDoubleFork is issue 22's attack, outside systemd, with
// the whole gateway in-process: an approved script double-forks; its
// orphan keeps trying to answer the next approvals through the control
// socket. Nothing it sends is accepted; the owner's answers are.
//   - sandboxed (allow-once): the orphan cannot even open a Unix socket,
//     and once its parent is gone the gateway, its subreaper, kills it;
//   - elevated (the owner let the script run outside the sandbox): the
//     orphan can dial, stays alive, adopted by the gateway, and is refused
//     by the socket's ancestry check, three approvals in a row.
func TestSelfApprovalDoubleFork(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	if ok, detail := sandbox.New(sandbox.Config{Helper: []string{"x"}}).Status(); !ok {
		t.Skipf("the kernel lacks Landlock: %s", detail)
	}
	for _, tool := range []string{"curl", "setsid"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is needed", tool)
		}
	}
	for _, tc := range []struct {
		name     string
		decision string // the owner's answer to the attack script
		rounds   int    // later approvals the orphan attacks
	}{
		{"sandboxed", api.DecisionAllowOnce, 1},
		{"elevated", api.DecisionElevated, 3},
	} {
		t.Run(tc.name, func(t *testing.T) { selfApproval(t, tc.decision, tc.rounds) })
	}
}

func selfApproval(t *testing.T, decision string, rounds int) {
	model := openaitest.NewServer()
	defer model.Close()
	m := startMain(t, `{
  models: { providers: { fake: { api: 'openai-completions', baseUrl: '`+model.URL+`', models: [{ id: 'echo' }] } } },
  agents: { defaults: { model: 'fake/echo' } },
  tools: { exec: { ask: 'always', approvalTimeoutSeconds: 300 } },
}`)
	ws := filepath.Join(m.StateDir, "workspace")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(ws, name), []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("orphan.sh", "SOCK="+m.Socket+"\n"+orphanScript, 0o600)
	write("attack.sh", attackScript, 0o600)
	copyFile(t, os.Args[0], filepath.Join(ws, "openclaw")) // the real CLI, runnable in the sandbox
	t.Cleanup(func() {
		if pid := readPid(ws); pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	c := client.New(m.Socket)

	// turn runs the exec command through the model and returns the
	// approval id, and a channel with the turn's result.
	turn := func(command string) (string, <-chan string) {
		t.Helper()
		args, _ := json.Marshal(map[string]string{"command": command})
		model.Push(
			openaitest.Reply{ToolCalls: []engine.ToolCall{{Name: "exec", Arguments: args}}},
			openaitest.Reply{Text: "done: " + command},
		)
		ids := make(chan string, 1)
		done := make(chan string, 1)
		go func() {
			var out strings.Builder
			_, err := c.Send(context.Background(), api.SendRequest{Text: "run " + command}, func(ev api.Event) {
				if ev.Type == api.EventApproval && ev.Approval != nil {
					ids <- ev.Approval.ID
				}
				if ev.Type == api.EventToolResult {
					fmt.Fprintf(&out, "%+v\n", ev)
				}
			})
			done <- fmt.Sprint(out.String(), err)
		}()
		select {
		case id := <-ids:
			return id, done
		case <-time.After(60 * time.Second):
			t.Fatalf("no approval asked for %q", command)
		}
		return "", nil
	}
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("waited 60 s for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// The owner approves the script: the owner's answer over the socket
	// is taken, elevated included.
	id, done := turn("sh attack.sh")
	if _, err := c.Decide(context.Background(), id, decision); err != nil {
		t.Fatalf("the owner's %s: %v", decision, err)
	}
	<-done
	pid := readPid(ws)
	if pid <= 0 {
		t.Fatalf("the orphan did not start; attempts:\n%s", readLog(ws))
	}

	if decision == api.DecisionElevated {
		// Adopted by the gateway (this process), not PID 1.
		wait("the orphan to be adopted by the gateway", func() bool {
			f, ok := statFields(pid)
			return ok && f[1] == strconv.Itoa(os.Getpid())
		})
	} else {
		wait("the sandboxed orphan to be killed", func() bool {
			f, ok := statFields(pid)
			return !ok || f[0] == "Z"
		})
	}

	for r := range rounds {
		command := fmt.Sprintf("touch pwned-%d.txt", r)
		id, done := turn(command)
		write("next-id", id, 0o600)
		if decision == api.DecisionElevated {
			// Three more full rounds of attempts on this id.
			wait("the orphan's attempts on "+id, func() bool { return strings.Count(readLog(ws), " "+id+": ") >= 18 })
		}
		aps, err := c.Approvals(context.Background())
		if err != nil || len(aps) != 1 || aps[0].ID != id {
			t.Fatalf("round %d: pending approvals %+v, %v; want %s still pending\nattempts:\n%s", r, aps, err, id, readLog(ws))
		}
		if _, err := c.Decide(context.Background(), id, api.DecisionDeny); err != nil {
			t.Fatalf("round %d: the owner's deny: %v\nattempts:\n%s", r, err, readLog(ws))
		}
		<-done
		if _, err := os.Stat(filepath.Join(ws, fmt.Sprintf("pwned-%d.txt", r))); err == nil {
			t.Fatalf("round %d: the command ran", r)
		}
	}

	log := readLog(ws)
	lines := strings.Split(strings.TrimSpace(log), "\n")
	if len(lines) < 6 {
		t.Fatalf("the orphan made %d attempts, want at least one round of 6:\n%s", len(lines), log)
	}
	for _, l := range lines {
		if strings.Contains(l, `"approval"`) || strings.Contains(l, "Approved") || strings.Contains(l, "rc=0") {
			t.Errorf("an attempt was accepted: %s", l)
		}
	}
	t.Logf("%d attempts, all refused; e.g.\n%s\n%s", len(lines), lines[0], lines[1])
}

func readPid(ws string) int {
	data, _ := os.ReadFile(filepath.Join(ws, "orphan.pid"))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid
}

func readLog(ws string) string {
	data, _ := os.ReadFile(filepath.Join(ws, "attempts.log"))
	return string(data)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
