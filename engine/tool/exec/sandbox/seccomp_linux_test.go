package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// probe runs inside the sandbox (see probeEnv).
func probe(mode string) int {
	res := func(err error) string {
		var errno syscall.Errno
		switch {
		case err == nil:
			return "ok"
		case errors.As(err, &errno):
			return unix.ErrnoName(errno)
		}
		return err.Error()
	}
	socket := func(domain, typ int) error {
		fd, err := syscall.Socket(domain, typ, 0)
		if err == nil {
			syscall.Close(fd)
		}
		return err
	}
	pair := func(typ int) error {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, typ, 0)
		if err == nil {
			syscall.Close(fds[0])
			syscall.Close(fds[1])
		}
		return err
	}
	switch mode {
	case "x32":
		// getpid through the x32 ABI: the filter kills the process.
		syscall.RawSyscall(0x40000000|syscall.SYS_GETPID, 0, 0, 0)
		fmt.Println("x32: survived")
		return 0
	case "ipc":
	default:
		return 2
	}
	fmt.Println("socket-unix:", res(socket(syscall.AF_UNIX, syscall.SOCK_STREAM)))
	fmt.Println("socket-unix-dgram:", res(socket(syscall.AF_UNIX, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC)))
	fmt.Println("socket-inet:", res(socket(syscall.AF_INET, syscall.SOCK_STREAM)))
	fmt.Println("socketpair-stream:", res(pair(syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC)))
	fmt.Println("socketpair-seqpacket:", res(pair(syscall.SOCK_SEQPACKET)))
	fmt.Println("socketpair-dgram:", res(pair(syscall.SOCK_DGRAM)))
	c, err := net.Dial("unix", os.Getenv("SOCK"))
	if err == nil {
		c.Close()
	}
	fmt.Println("dial:", res(err))
	var params [120]byte
	_, _, e := syscall.RawSyscall(unix.SYS_IO_URING_SETUP, 4, uintptr(unsafe.Pointer(&params)), 0)
	fmt.Println("io_uring_setup:", res(errnoOrNil(e)))
	return 0
}

func errnoOrNil(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// inSandbox copies the test binary into the workspace (the sandbox can run
// nothing from the build's temp dir) and runs it there as a probe.
func inSandbox(t *testing.T, sb *Landlock, l layout, mode string, env ...string) (string, error) {
	t.Helper()
	self, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer self.Close()
	bin := filepath.Join(l.ws, "probe")
	if _, err := os.Stat(bin); err != nil {
		f, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o700)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, self); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	argv, err := sb.Wrap([]string{bin}, l.ws, l.tmp)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = l.ws
	cmd.Env = append(append(os.Environ(), helperEnv+"=1", probeEnv+"="+mode), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestSeccompLocalIPC: a sandboxed command can make no Unix socket (so it
// cannot dial the control socket or D-Bus), only connected pairs for its
// own processes; io_uring is refused; the network is not.
func TestSeccompLocalIPC(t *testing.T) {
	if filterArch() == 0 {
		t.Skipf("no seccomp filter on %s", runtime.GOARCH)
	}
	l := newLayout(t)
	sb := activeSandbox(t, l)
	// A listening socket the command would like to reach, inside its own
	// workspace so that only the filter stands in the way.
	sock := filepath.Join(l.ws, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	out, err := inSandbox(t, sb, l, "ipc", "SOCK="+sock)
	if err != nil {
		t.Fatalf("probe: %v\n%s", err, out)
	}
	want := "socket-unix: EACCES\nsocket-unix-dgram: EACCES\nsocket-inet: ok\nsocketpair-stream: ok\nsocketpair-seqpacket: ok\n" +
		"socketpair-dgram: EACCES\ndial: EACCES\nio_uring_setup: EPERM\n"
	if out != want {
		t.Fatalf("probe said:\n%s\nwant:\n%s", out, want)
	}
	// The test process itself, unconfined, still can.
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatalf("unconfined dial: %v", err)
	}
	c.Close()
}

func TestSeccompKillsX32(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("x32 exists on amd64 only")
	}
	l := newLayout(t)
	sb := activeSandbox(t, l)
	out, err := inSandbox(t, sb, l, "x32")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != -1 || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGSYS {
		t.Fatalf("x32 syscall: %v, output %q; want death by SIGSYS", err, out)
	}
}

// runBPF interprets the few classic BPF instructions buildFilter emits,
// over a struct seccomp_data, so both arches' programs are checked here,
// whichever machine runs the tests.
func runBPF(t *testing.T, prog []unix.SockFilter, nr, arch uint32, args ...uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data[0:], nr)
	binary.LittleEndian.PutUint32(data[4:], arch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(data[16+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
			acc &= in.K
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			hit := acc == in.K
			if in.Code&0xf0 == unix.BPF_JGE {
				hit = acc >= in.K
			}
			if hit {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("unexpected instruction %#x at %d", in.Code, pc)
		}
	}
	t.Fatal("the program fell off its end")
	return 0
}

func TestBuildFilter(t *testing.T) {
	const (
		allow  = unix.SECCOMP_RET_ALLOW
		kill   = unix.SECCOMP_RET_KILL_PROCESS
		eacces = unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)
		eperm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	)
	// Syscall numbers of each arch (asm/unistd.h), not this build's.
	type nrs struct{ socket, socketpair, uringSetup, uringEnter, uringRegister, getpid uint32 }
	for _, a := range []struct {
		name string
		arch uint32
		nr   nrs
	}{
		{"amd64", unix.AUDIT_ARCH_X86_64, nrs{41, 53, 425, 426, 427, 39}},
		{"arm64", unix.AUDIT_ARCH_AARCH64, nrs{198, 199, 425, 426, 427, 172}},
	} {
		t.Run(a.name, func(t *testing.T) {
			if filterArch() != a.arch {
				t.Skipf("the filter uses this build's syscall numbers; this is %s", filterArch2Name())
			}
			prog, err := buildFilter(a.arch)
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				name string
				nr   uint32
				arch uint32
				args []uint64
				want uint32
			}{
				{"getpid", a.nr.getpid, a.arch, nil, allow},
				{"socket(AF_UNIX, SOCK_STREAM)", a.nr.socket, a.arch, []uint64{unix.AF_UNIX, unix.SOCK_STREAM}, eacces},
				{"socket(AF_UNIX) with junk in the high bits", a.nr.socket, a.arch, []uint64{1<<32 | unix.AF_UNIX, unix.SOCK_DGRAM}, eacces},
				{"socket(AF_INET)", a.nr.socket, a.arch, []uint64{unix.AF_INET, unix.SOCK_STREAM}, allow},
				{"socket(AF_INET6)", a.nr.socket, a.arch, []uint64{unix.AF_INET6, unix.SOCK_DGRAM}, allow},
				{"socketpair(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC)", a.nr.socketpair, a.arch, []uint64{unix.AF_UNIX, unix.SOCK_STREAM | unix.SOCK_CLOEXEC}, allow},
				{"socketpair(AF_UNIX, SOCK_SEQPACKET)", a.nr.socketpair, a.arch, []uint64{unix.AF_UNIX, unix.SOCK_SEQPACKET}, allow},
				{"socketpair(AF_UNIX, SOCK_DGRAM|SOCK_NONBLOCK)", a.nr.socketpair, a.arch, []uint64{unix.AF_UNIX, unix.SOCK_DGRAM | unix.SOCK_NONBLOCK}, eacces},
				{"io_uring_setup", a.nr.uringSetup, a.arch, nil, eperm},
				{"io_uring_enter", a.nr.uringEnter, a.arch, nil, eperm},
				{"io_uring_register", a.nr.uringRegister, a.arch, nil, eperm},
				{"a foreign arch", a.nr.getpid, unix.AUDIT_ARCH_I386, nil, kill},
			} {
				if got := runBPF(t, prog, tc.nr, tc.arch, tc.args...); got != tc.want {
					t.Errorf("%s: %#x, want %#x", tc.name, got, tc.want)
				}
			}
			if a.arch == unix.AUDIT_ARCH_X86_64 {
				if got := runBPF(t, prog, 0x40000000|a.nr.getpid, a.arch); got != kill {
					t.Errorf("x32 getpid: %#x, want kill", got)
				}
			}
		})
	}
}

func filterArch2Name() string {
	switch filterArch() {
	case unix.AUDIT_ARCH_X86_64:
		return "amd64"
	case unix.AUDIT_ARCH_AARCH64:
		return "arm64"
	}
	return "another arch"
}
