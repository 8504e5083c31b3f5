//go:build loadtest || importrss

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/api/client"
)

// procGateway is a real, pure-Go gateway binary running as its own
// process, for measurements that must not share a process with the test.
type procGateway struct {
	cmd    *exec.Cmd
	client *client.Client
	dir    string
}

// startPureGateway builds the pure gateway (CGO_ENABLED=0, -tags
// nollamacpp), starts it with config (JSON5) in a fresh state directory,
// and waits until it answers.
func startPureGateway(t testing.TB, config string) *procGateway {
	t.Helper()
	dir, err := os.MkdirTemp("", "ocgw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "openclaw-gateway")
	build := exec.Command("go", "build", "-tags", "nollamacpp", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the pure gateway: %v\n%s", err, out)
	}
	cfg := filepath.Join(dir, "openclaw.json")
	config = strings.ReplaceAll(config, "$DIR", dir)
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "gw.sock")
	log, err := os.Create(filepath.Join(dir, "gateway.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--config", cfg, "--state-dir", filepath.Join(dir, "state"), "--socket", sock)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g := &procGateway{cmd: cmd, client: client.New(sock), dir: dir}
	t.Cleanup(g.stop)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := g.client.Status(context.Background()); err == nil {
			break
		} else if time.Now().After(deadline) {
			out, _ := os.ReadFile(log.Name())
			t.Fatalf("gateway did not start: %v\n%s", err, out)
		}
	}
	return g
}

func (g *procGateway) stop() {
	if g.cmd.ProcessState != nil {
		return
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { g.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		g.cmd.Process.Kill()
		<-done
	}
}

// procStatus reads a "Vm…:  N kB" field of the gateway's /proc status in
// bytes: VmHWM is the peak resident set size, VmRSS the current one.
func (g *procGateway) procStatus(t testing.TB, field string) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", g.cmd.Process.Pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(rest)
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc status", field)
	return 0
}
