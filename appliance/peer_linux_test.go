package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/tool/exec/sandbox"
)

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

// TestChildRefused: a process the gateway started (an exec child runs as the
// gateway's uid, and Landlock before ABI 9 cannot stop it connecting) is
// refused, so an approved command cannot answer its own approvals; a process
// the gateway did not start, with the same uid, is served.
func TestChildRefused(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 dials the socket from a child process")
	}
	sock := filepath.Join(socketDir(t), "gw.sock")
	ln, err := listenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
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
	dial := `import socket,sys
s=socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])
try: sys.stdout.write(s.recv(10).decode())
except OSError: pass`
	out, err := exec.Command("python3", "-c", dial, sock).Output()
	if err != nil {
		t.Fatalf("child dial: %v", err)
	}
	if string(out) == "ok" {
		t.Fatal("a child of the gateway was served")
	}
	// The same uid, not started by us: this test process itself.
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, _ := io.ReadAll(c); string(got) != "ok" {
		t.Fatalf("the gateway's own process was refused: %q", got)
	}
}

func TestStartedByGateway(t *testing.T) {
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	grand := exec.Command("sh", "-c", "sleep 30 & echo $!; wait")
	stdout, _ := grand.StdoutPipe()
	if err := grand.Start(); err != nil {
		t.Fatal(err)
	}
	defer grand.Process.Kill()
	var gpid int
	if _, err := fmt.Fscan(stdout, &gpid); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(gpid, syscall.SIGKILL)
	// A double fork: setsid, background, the parent exits. With the test
	// process a subreaper the orphan is adopted, not lost to PID 1.
	orphan := -1
	if err := becomeSubreaper(slog.New(slog.DiscardHandler)); err == nil {
		out, err := exec.Command("sh", "-c", `setsid sleep 30 </dev/null >/dev/null 2>&1 & echo $!`).Output()
		if err != nil {
			t.Fatal(err)
		}
		if orphan, err = strconv.Atoi(strings.TrimSpace(string(out))); err != nil {
			t.Fatal(err)
		}
		defer syscall.Kill(orphan, syscall.SIGKILL)
	}
	self := os.Getpid()
	for _, tc := range []struct {
		name    string
		pid     int
		service bool
		want    bool
	}{
		{"own child", child.Process.Pid, false, true},
		{"grandchild", gpid, false, true},
		{"own process", self, false, false},
		{"parent, outside systemd", os.Getppid(), false, false},
		{"gone", 1 << 30, false, true},
		{"double-forked orphan", orphan, false, true},
	} {
		if tc.pid < 0 {
			continue // no subreaper here
		}
		if got := startedByGateway(tc.pid, self, tc.service); got != tc.want {
			t.Errorf("%s: startedByGateway = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// FuzzParseStat: whatever name a process gives itself, its parent and
// start time are read right (the walk must never be steered by a name
// such as ") S 1 ").
func FuzzParseStat(f *testing.F) {
	for _, comm := range []string{"sh", ") S 1 ", "a) R 4242 1 (", "))", "x y z", ")\n", ""} {
		f.Add(comm, 4242, uint64(123456))
	}
	f.Fuzz(func(t *testing.T, comm string, ppid int, start uint64) {
		if len(comm) > 15 || strings.ContainsRune(comm, 0) || ppid < 0 {
			t.Skip() // the kernel allows neither
		}
		rest := []string{"S", strconv.Itoa(ppid)}
		for i := 3; i <= 21; i++ {
			rest = append(rest, strconv.Itoa(i))
		}
		rest[19] = strconv.FormatUint(start, 10)
		line := "77 (" + comm + ") " + strings.Join(rest, " ") + " 0 0\n"
		fields, ok := parseStat(line)
		if !ok || fields[1] != strconv.Itoa(ppid) || fields[19] != strconv.FormatUint(start, 10) {
			t.Fatalf("parseStat(%q) = %q, %v", line, fields, ok)
		}
	})
}

func TestParseStatShort(t *testing.T) {
	for _, s := range []string{"", "1 (sh", "1 (sh) S 0", "garbage"} {
		if _, ok := parseStat(s); ok {
			t.Errorf("parseStat(%q) ok, want refused", s)
		}
	}
}
