package sandbox

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp filter the helper installs after Landlock, before execve
// (package doc, "Local IPC"). It is a classic BPF program over struct
// seccomp_data {int nr; u32 arch; u64 ip; u64 args[6]}.
const (
	offNr    = 0
	offArch  = 4
	offArg0  = 16 // low 32 bits of args[0] on a little-endian machine
	offArg1  = 24 // low 32 bits of args[1]
	x32Bit   = 0x40000000
	typeMask = 0xf // SOCK_TYPE_MASK: the flags SOCK_CLOEXEC|SOCK_NONBLOCK sit above it
)

// filterArch is the audit arch of the syscalls this binary makes; 0 where
// no filter is built (the sandbox is then Landlock only and says so).
// Only little-endian arches are listed: the argument offsets assume it.
func filterArch() uint32 {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64
	}
	return 0
}

// bpfProg is a tiny assembler: conditional jumps name labels, resolved
// when the program is done, so the offsets cannot be miscounted.
type bpfProg struct {
	ins    []unix.SockFilter
	labels map[string]int
	fixups []fixup
}

type fixup struct {
	at     int
	jt, jf string
}

func (p *bpfProg) load(off uint32) {
	p.ins = append(p.ins, unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off})
}

func (p *bpfProg) and(k uint32) {
	p.ins = append(p.ins, unix.SockFilter{Code: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, K: k})
}

func (p *bpfProg) ret(k uint32) {
	p.ins = append(p.ins, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k})
}

// jump compares the accumulator with k (op: BPF_JEQ or BPF_JGE) and goes
// to label jt when true, jf when false ("" falls through).
func (p *bpfProg) jump(op uint16, k uint32, jt, jf string) {
	p.fixups = append(p.fixups, fixup{len(p.ins), jt, jf})
	p.ins = append(p.ins, unix.SockFilter{Code: unix.BPF_JMP | op | unix.BPF_K, K: k})
}

func (p *bpfProg) label(name string) { p.labels[name] = len(p.ins) }

func (p *bpfProg) done() ([]unix.SockFilter, error) {
	for _, f := range p.fixups {
		for _, j := range []struct {
			name string
			dst  *uint8
		}{{f.jt, &p.ins[f.at].Jt}, {f.jf, &p.ins[f.at].Jf}} {
			if j.name == "" {
				continue
			}
			to, ok := p.labels[j.name]
			off := to - f.at - 1
			if !ok || off < 0 || off > 255 {
				return nil, fmt.Errorf("seccomp filter: bad jump to %q", j.name)
			}
			*j.dst = uint8(off)
		}
	}
	return p.ins, nil
}

// buildFilter returns the program for arch (an AUDIT_ARCH_* value):
//   - a syscall of another arch (i386 through int 0x80 on x86-64, whose
//     socketcall(2) hides its arguments), or an x32 one: the process is
//     killed, since the rules below name only native numbers;
//   - socket(AF_UNIX, …): EACCES, so a command can reach no Unix socket:
//     not the gateway's control socket, not D-Bus (systemd-run, a user
//     manager), not any other local daemon that could start a process on
//     its behalf outside the sandbox;
//   - socketpair(AF_UNIX, …): allowed for SOCK_STREAM and SOCK_SEQPACKET
//     (pipes between a command's own processes; they are connected and
//     cannot be reconnected), EACCES for SOCK_DGRAM, which could be
//     re-pointed at any datagram socket with connect or sendto;
//   - io_uring_setup, io_uring_enter, io_uring_register: EPERM, as when
//     io_uring is disabled by sysctl (callers fall back to plain calls): an
//     IORING_OP_SOCKET would make a socket this filter never sees;
//   - everything else: allowed (Landlock decides about files).
func buildFilter(arch uint32) ([]unix.SockFilter, error) {
	p := &bpfProg{labels: map[string]int{}}
	p.load(offArch)
	p.jump(unix.BPF_JEQ, arch, "", "kill")
	p.load(offNr)
	if arch == unix.AUDIT_ARCH_X86_64 {
		p.jump(unix.BPF_JGE, x32Bit, "kill", "")
	}
	p.jump(unix.BPF_JEQ, unix.SYS_SOCKET, "socket", "")
	p.jump(unix.BPF_JEQ, unix.SYS_SOCKETPAIR, "socketpair", "")
	p.jump(unix.BPF_JEQ, unix.SYS_IO_URING_SETUP, "eperm", "")
	p.jump(unix.BPF_JEQ, unix.SYS_IO_URING_ENTER, "eperm", "")
	p.jump(unix.BPF_JEQ, unix.SYS_IO_URING_REGISTER, "eperm", "")
	p.ret(unix.SECCOMP_RET_ALLOW)

	p.label("socket")
	p.load(offArg0)
	p.jump(unix.BPF_JEQ, unix.AF_UNIX, "eacces", "allow")

	p.label("socketpair")
	p.load(offArg0)
	p.jump(unix.BPF_JEQ, unix.AF_UNIX, "", "allow")
	p.load(offArg1)
	p.and(typeMask)
	p.jump(unix.BPF_JEQ, unix.SOCK_STREAM, "allow", "")
	p.jump(unix.BPF_JEQ, unix.SOCK_SEQPACKET, "allow", "eacces")

	p.label("eacces")
	p.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES))
	p.label("eperm")
	p.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	p.label("kill")
	p.ret(unix.SECCOMP_RET_KILL_PROCESS)
	p.label("allow")
	p.ret(unix.SECCOMP_RET_ALLOW)
	return p.done()
}

// errNoFilter: no filter is built for this arch (see filterArch).
var errNoFilter = errors.New("no seccomp filter for " + runtime.GOARCH)

// installFilter installs the filter on the calling thread, which must be
// locked (runtime.LockOSThread) and must be the one that calls execve:
// the filter passes to the new program from that thread. It uses
// prctl(PR_SET_SECCOMP), not seccomp(2), because systemd's
// @system-service allows prctl but not seccomp. no_new_privs is already
// set (Landlock set it on every thread).
func installFilter() error {
	arch := filterArch()
	if arch == 0 {
		return errNoFilter
	}
	ins, err := buildFilter(arch)
	if err != nil {
		return err
	}
	prog := unix.SockFprog{Len: uint16(len(ins)), Filter: &ins[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
		return fmt.Errorf("install the seccomp filter (prctl PR_SET_SECCOMP): %w", err)
	}
	runtime.KeepAlive(ins)
	return nil
}
