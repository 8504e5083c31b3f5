package main

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/tool/exec/sandbox"
)

func TestAllowedPeers(t *testing.T) {
	const self, group = 1000, 990
	for _, tc := range []struct {
		name  string
		p     peer
		group int
		want  bool
	}{
		{"the gateway's user", peer{uid: self, groups: []int{self}}, group, true},
		{"root", peer{uid: 0}, group, true},
		{"openclaw as primary group", peer{uid: 1001, groups: []int{group}}, group, true},
		{"openclaw as supplementary group", peer{uid: 1001, groups: []int{1001, 27, group}}, group, true},
		{"a stranger", peer{uid: 1001, groups: []int{1001, 27}}, group, false},
		{"no openclaw group on this box", peer{uid: 1001, groups: []int{1001, group}}, -1, false},
	} {
		if got := allowed(tc.p, self, tc.group); got != tc.want {
			t.Errorf("%s: allowed = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestStatusGroups(t *testing.T) {
	for _, tc := range []struct {
		status string
		want   []int
	}{
		{"Name:\tsh\nUid:\t1000\t1000\t1000\t1000\nGroups:\t4 27 990 \nNStgid:\t1\n", []int{4, 27, 990}},
		{"Name:\tsh\nGroups:\t\n", nil},
		{"Name:\tsh\n", nil},
		{"Groups:\t4 x -1 5\n", []int{4, 5}},
	} {
		if got := statusGroups(tc.status); !slicesEqual(got, tc.want) {
			t.Errorf("statusGroups(%q) = %v, want %v", tc.status, got, tc.want)
		}
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// socketDir is a short directory others may traverse (the tests dial as
// other uids).
func socketDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ocp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRestrictSocketMode(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("giving the socket to another group needs root here")
	}
	for _, tc := range []struct {
		name   string
		lookup func() (int, bool)
		mode   os.FileMode
		gid    int
	}{
		{"openclaw group exists", func() (int, bool) { return 4246, true }, 0o660, 4246},
		{"no openclaw group", func() (int, bool) { return 0, false }, 0o600, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sock := filepath.Join(socketDir(t), "gw.sock")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			if got := restrictSocket(sock, tc.lookup); got != tc.gid {
				t.Fatalf("restrictSocket = %d, want %d", got, tc.gid)
			}
			fi, err := os.Stat(sock)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != tc.mode {
				t.Errorf("mode %v, want %v", fi.Mode().Perm(), tc.mode)
			}
			if st := fi.Sys().(*syscall.Stat_t); tc.gid >= 0 && int(st.Gid) != tc.gid {
				t.Errorf("group %d, want %d", st.Gid, tc.gid)
			}
		})
	}
}

// dialAs connects to sock from a thread whose effective uid and gid are
// changed (raw syscalls change only the calling thread's credentials; the
// thread is locked and dies with its goroutine, so nothing else runs as
// that user). -1 keeps the current one.
func dialAs(sock string, uid, gid int) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		keep := ^uintptr(0)
		if gid >= 0 {
			if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESGID, keep, uintptr(gid), keep); e != 0 {
				ch <- result{nil, e}
				return
			}
		}
		if uid >= 0 {
			if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, keep, uintptr(uid), keep); e != 0 {
				ch <- result{nil, e}
				return
			}
		}
		c, err := net.Dial("unix", sock)
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// TestPeerCredentials runs the real listener: the kernel reports who
// connects, the listener serves the gateway's user, root and the openclaw
// group, and closes on anyone else.
func TestPeerCredentials(t *testing.T) {
	if runtime.GOOS != "linux" || os.Getuid() != 0 {
		t.Skip("dialing as other users needs root on Linux")
	}
	const group = 4246
	sock := filepath.Join(socketDir(t), "gw.sock")
	ln, err := listenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pl := ln.(*peerListener)
	pl.group = group // as if the openclaw group had gid 4246
	// Let the file mode through so that the peer check is what decides
	// (as when a directory or an ACL is too permissive).
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("ok"))
			c.Close()
		}
	}()
	for _, tc := range []struct {
		name     string
		uid, gid int
		served   bool
	}{
		{"root", -1, -1, true},
		{"a member of the openclaw group", 4243, group, true},
		{"a stranger", 4243, 4243, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := dialAs(sock, tc.uid, tc.gid)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer c.Close()
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			got, err := io.ReadAll(c)
			if err != nil && !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("read: %v", err)
			}
			if served := string(got) == "ok"; served != tc.served {
				t.Errorf("served = %v (read %q), want %v", served, got, tc.served)
			}
		})
	}
}

func TestWatchdogPingsOnlyWhileAlive(t *testing.T) {
	stuck := errors.New("stuck")
	probes := []error{nil, nil, stuck, stuck, stuck, nil}
	tick := make(chan time.Time) // unbuffered: a send returns once the loop took the tick
	done := make(chan struct{})
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	i := -1
	var pinged []int // the probe each ping followed
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		watchdogLoop(log, tick, done,
			func() error { i++; return probes[i] },
			func() error { pinged = append(pinged, i); return nil })
	}()
	for range probes {
		tick <- time.Now()
	}
	close(done) // the last tick is handled before the loop sees done
	<-exited
	if want := []int{0, 1, 5}; !slicesEqual(pinged, want) {
		t.Errorf("pinged after probes %v, want %v (never while stuck)", pinged, want)
	}
	if strings.Count(logs.String(), "not responding") != 1 || !strings.Contains(logs.String(), "pings resume") {
		t.Errorf("want one error when it gets stuck and one line when it recovers; logs:\n%s", logs.String())
	}
}

// TestWatchdogNotify runs watchdog() against a real notify socket, as
// systemd would with WatchdogSec=.
func TestWatchdogNotify(t *testing.T) {
	dir := socketDir(t)
	addr := &net.UnixAddr{Name: filepath.Join(dir, "notify"), Net: "unixgram"}
	conn, err := net.ListenUnixgram("unixgram", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	t.Setenv("NOTIFY_SOCKET", addr.Name)
	t.Setenv("WATCHDOG_USEC", "40000") // pings every 20 ms
	t.Setenv("WATCHDOG_PID", "")
	var dead atomic.Bool
	stop := watchdog(slog.New(slog.NewTextHandler(io.Discard, nil)), func() error {
		if dead.Load() {
			return errors.New("stuck")
		}
		return nil
	})
	defer stop()
	buf := make([]byte, 64)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := conn.Read(buf)
	if err != nil || string(buf[:n]) != "WATCHDOG=1" {
		t.Fatalf("read %q, %v; want a WATCHDOG=1 ping", buf[:n], err)
	}
	dead.Store(true)
	time.Sleep(50 * time.Millisecond) // a ping already on its way may still come
	for {
		conn.SetReadDeadline(time.Now().Add(time.Millisecond))
		if _, err := conn.Read(buf); err != nil {
			break
		}
	}
	conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, err := conn.Read(buf); err == nil {
		t.Fatalf("got %q while the main loop was dead", buf[:n])
	}
}

// TestSandboxSubcommand runs `openclaw-gateway sandbox … -- sh -c …` as a
// process (this test binary doubles as the gateway, see TestMain).
func TestSandboxSubcommand(t *testing.T) {
	if ok, detail := sandbox.New(sandbox.Config{Helper: []string{"x"}}).Status(); !ok {
		t.Skipf("the kernel lacks Landlock: %s", detail)
	}
	state := t.TempDir()
	ws := filepath.Join(state, "workspace")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "state.db"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "sandbox", "--workspace", ws, "--tmp", filepath.Join(state, "tmp"), "--",
		"sh", "-c", `echo hi > f && cat f && ! cat ../state.db 2>/dev/null && echo denied`)
	cmd.Dir = ws
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "hi\ndenied\n" {
		t.Fatalf("sandbox subcommand: %v\n%s", err, out)
	}
}
