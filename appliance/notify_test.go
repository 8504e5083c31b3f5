package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/openclaw-edge/edge/engine/api/client"
)

var (
	notifyGatewayOnce sync.Once
	notifyGatewayBin  string
	notifyGatewayErr  string
)

// builtGateway builds the real, pure openclaw-gateway once per test binary
// (CGO_ENABLED=0, the tags this package's tests run with, so the packages
// come from the build cache) and returns its path.
func builtGateway(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the gateway binary")
	}
	notifyGatewayOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ocbin")
		if err != nil {
			notifyGatewayErr = err.Error()
			return
		}
		// Left for the OS: other tests of this binary may still run it.
		notifyGatewayBin = filepath.Join(dir, "openclaw-gateway")
		build := exec.Command("go", "build", "-tags", "nollamacpp,nowhatsapp", "-o", notifyGatewayBin, ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			notifyGatewayErr = "build the gateway: " + err.Error() + "\n" + string(out)
		}
	})
	if notifyGatewayErr != "" {
		t.Fatal(notifyGatewayErr)
	}
	return notifyGatewayBin
}

// notification is one datagram the gateway sent to $NOTIFY_SOCKET.
type notification struct {
	msg string
	at  time.Time
}

// TestSdNotifyProcess runs the real openclaw-gateway binary the way systemd
// runs the unit (Type=notify, WatchdogSec=): NOTIFY_SOCKET is a unixgram
// socket this test owns, WATCHDOG_USEC asks for pings every 200 ms
// (WATCHDOG_PID unset: the child's pid is unknown before it starts, and
// go-systemd checks it only when set). It checks that READY=1 comes first
// and only once the control socket answers, that WATCHDOG=1 pings follow at
// about half the interval, and that SIGTERM brings STOPPING=1 and a clean
// exit.
func TestSdNotifyProcess(t *testing.T) {
	bin := builtGateway(t)
	dir := socketDir(t) // short: a Unix socket path has ~107 bytes
	notify := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notify, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msgs := make(chan notification, 64)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- notification{string(buf[:n]), time.Now()}
		}
	}()

	const watchdogUsec = 400000
	sock := filepath.Join(dir, "gw.sock")
	logFile := filepath.Join(dir, "gateway.log")
	log, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(bin, "run", "--state-dir", filepath.Join(dir, "state"), "--socket", sock)
	cmd.Env = append(cleanEnv(), "HOME="+dir, "NOTIFY_SOCKET="+notify, "WATCHDOG_USEC="+strconv.Itoa(watchdogUsec))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	showLog := func() string { out, _ := os.ReadFile(logFile); return string(out) }
	next := func(what string) notification {
		t.Helper()
		select {
		case n, ok := <-msgs:
			if !ok {
				t.Fatalf("notify socket closed while waiting for %s", what)
			}
			return n
		case err := <-exited:
			// The last datagram (STOPPING=1) may still be in the socket
			// when the process is already gone: give the reader a moment.
			exited <- err // for whoever waits on the exit next
			select {
			case n, ok := <-msgs:
				if ok {
					return n
				}
			case <-time.After(time.Second):
			}
			t.Fatalf("gateway exited (%v) while waiting for %s; log:\n%s", err, what, showLog())
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s after 30 s; log:\n%s", what, showLog())
		}
		return notification{}
	}

	ready := next("READY=1")
	if ready.msg != "READY=1" {
		t.Fatalf("first notification %q, want READY=1 before anything else", ready.msg)
	}
	// READY=1 promises a control socket that answers: ask it right away,
	// without the retries a client would need before READY.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	st, err := client.New(sock).Status(ctx)
	cancel()
	if err != nil {
		t.Fatalf("READY=1 came but the control socket does not answer: %v", err)
	}
	if st.PID != cmd.Process.Pid {
		t.Errorf("status pid %d, want the gateway's %d", st.PID, cmd.Process.Pid)
	}

	// Pings at half the interval (200 ms from READY on, on a fixed
	// schedule): the third at about 600 ms. A late tick may be followed
	// closely by the next, so only the sum has a lower bound: no flood.
	prev := ready.at
	for i := range 3 {
		n := next("WATCHDOG=1")
		if n.msg != "WATCHDOG=1" {
			t.Fatalf("notification %q after READY, want WATCHDOG=1", n.msg)
		}
		// Generous: systemd's limit here is 400 ms, but a loaded 2-core
		// box may delay a tick.
		if gap := n.at.Sub(prev); gap > 2*time.Second {
			t.Errorf("ping %d came %v after the previous message; want about 200 ms", i+1, gap)
		}
		prev = n.at
	}
	// Only a flood is caught: the reader stamps each message when it reads
	// it, so a stalled reader squeezes the gaps it sees.
	if span := prev.Sub(ready.at); span < 200*time.Millisecond {
		t.Errorf("three pings within %v of READY; want one per 200 ms", span)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for {
		n := next("STOPPING=1")
		if n.msg == "WATCHDOG=1" {
			continue // a ping already on its way
		}
		if n.msg != "STOPPING=1" {
			t.Fatalf("notification %q after SIGTERM, want STOPPING=1", n.msg)
		}
		break
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("gateway exit after SIGTERM: %v; log:\n%s", err, showLog())
		}
	case <-time.After(15 * time.Second): // the unit's TimeoutStopSec
		t.Fatalf("gateway still running 15 s after SIGTERM; log:\n%s", showLog())
	}
	// Nothing after STOPPING=1 but pings that were already sent.
	for {
		select {
		case n, ok := <-msgs:
			if ok && n.msg != "WATCHDOG=1" {
				t.Errorf("notification %q after STOPPING=1", n.msg)
			}
			if ok {
				continue
			}
		case <-time.After(100 * time.Millisecond):
		}
		break
	}
}

// cleanEnv is the test's environment without the variables that would
// point the gateway elsewhere or confuse sd_notify.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID",
			"OPENCLAW_STATE_DIR", "OPENCLAW_CONFIG_PATH", "OPENCLAW_SOCKET", "RUNTIME_DIRECTORY", "STATE_DIRECTORY", "HOME":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// TestLivenessProbe: the watchdog's probe fails when the control API's
// serve loop has ended and when the store cannot begin a read (closed), so
// watchdogLoop stops pinging and systemd restarts the gateway.
func TestLivenessProbe(t *testing.T) {
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "state.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	var serving atomic.Bool
	serving.Store(true)
	probe := liveness(&serving, db)
	if err := probe(); err != nil {
		t.Fatalf("healthy gateway: %v", err)
	}
	serving.Store(false)
	if err := probe(); err == nil || !strings.Contains(err.Error(), "control API stopped") {
		t.Fatalf("serve loop ended: %v, want an error", err)
	}
	serving.Store(true)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := probe(); err == nil || !strings.Contains(err.Error(), "state database") {
		t.Fatalf("store closed: %v, want an error", err)
	}
}
