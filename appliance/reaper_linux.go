package main

// The gateway as a child subreaper (see peer_linux.go for why): orphans of
// its descendants are reparented to it instead of PID 1, so they stay in
// its process tree, and the control socket's ancestry check sees them.
//
// Adopted orphans become the gateway's children without anyone in it
// waiting for them, so the gateway must reap them itself — without ever
// stealing the exit status of a child that os/exec started and will Wait
// for. How the two are told apart: since Go 1.23, os/exec on Linux holds a
// pidfd for every child it starts, from clone(CLONE_PIDFD) until its Wait
// has reaped the child (or Release). A child for which this process holds
// no pidfd is one nobody here will wait for: an adopted orphan. The pidfds
// are read from /proc/self/fdinfo ("Pid:" lines). The kernel installs the
// pidfd a moment after the child becomes visible, so a child is acted on
// only when it was seen without a pidfd twice, settleTime apart, with the
// same start time (the same process, not a reused pid). If this Go or
// kernel does not give os/exec pidfds, the gateway does not become a
// subreaper at all (it could not tell the children apart) and says so.
//
// What happens to an adopted orphan: a zombie is reaped; a live one that
// carries more seccomp filters than the gateway is a leftover of a
// sandboxed exec command (the sandbox helper adds one filter, which no
// descendant can remove) that escaped its process group — it is killed,
// so a double fork cannot outlive its command. Other live orphans (an
// elevated command's daemon, a runner's helper) are left alone until they
// exit; they stay refused at the control socket either way.

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// settleTime is how long a child must stay without a pidfd before the
// reaper acts on it (see above; far longer than clone's window).
const settleTime = 200 * time.Millisecond

var (
	subreaperOnce sync.Once
	subreaperErr  error
)

// becomeSubreaper makes this process a child subreaper and starts its
// reaper, once per process. It returns why not when it cannot.
func becomeSubreaper(log *slog.Logger) error {
	subreaperOnce.Do(func() {
		if err := osExecHoldsPidfds(); err != nil {
			subreaperErr = fmt.Errorf("os/exec keeps no pidfds here (%w), so adopted orphans could not be told from its children", err)
			return
		}
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			subreaperErr = fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
			return
		}
		r := &reaper{log: log, seen: map[int]sighting{}, self: os.Getpid(), filters: seccompFilters(os.Getpid())}
		go r.run()
	})
	return subreaperErr
}

// osExecHoldsPidfds starts a short child and checks that this process
// holds a pidfd for it while it runs, which is what the reaper relies on.
func osExecHoldsPidfds() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// `true` when there is one: any child will do, and this one costs
	// nothing (the gateway itself would run its package inits, 20+ ms of
	// CPU beside the gateway's own start). `<gateway> sandbox` without a
	// command only prints its usage (the test binary runs the same).
	// Exited or not, os/exec keeps its pidfd until Wait, which is left to
	// a goroutine: the start need not wait for the child.
	c := exec.Command(self, "sandbox")
	if t, err := exec.LookPath("true"); err == nil {
		c = exec.Command(t)
	}
	if err := c.Start(); err != nil {
		return err
	}
	held := pidfdPids()[c.Process.Pid]
	go func() { _ = c.Wait() }() // its exit status does not matter
	if !held {
		return errors.New("no pidfd for a child it started")
	}
	return nil
}

// sighting is when a child without a pidfd was first seen.
type sighting struct {
	start string // field 22 of /proc/<pid>/stat: the start time
	at    time.Time
}

type reaper struct {
	log     *slog.Logger
	self    int
	filters int // the gateway's own seccomp filter count
	seen    map[int]sighting
}

func (r *reaper) run() {
	sig := make(chan os.Signal, 16)
	signal.Notify(sig, syscall.SIGCHLD)
	tick := time.NewTicker(5 * time.Second) // a backstop: signals coalesce
	defer tick.Stop()
	var again <-chan time.Time
	for {
		select {
		case <-sig:
		case <-tick.C:
		case <-again:
		}
		again = nil
		if r.scan(time.Now()) {
			again = time.After(settleTime)
		}
	}
}

// scan looks at every child once; it reports whether one is waiting for
// its second sighting.
func (r *reaper) scan(now time.Time) (pending bool) {
	kids := childPids(r.self)
	held := pidfdPids()
	for pid := range r.seen {
		if !kids[pid] || held[pid] {
			delete(r.seen, pid)
		}
	}
	for pid := range kids {
		if held[pid] {
			continue
		}
		state, start, ok := procState(pid)
		if !ok {
			delete(r.seen, pid)
			continue
		}
		s, known := r.seen[pid]
		if !known || s.start != start {
			r.seen[pid] = sighting{start: start, at: now}
			pending = true
			continue
		}
		if now.Sub(s.at) < settleTime {
			pending = true
			continue
		}
		switch {
		case state == "Z":
			var info unix.Siginfo
			if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG, nil); err == nil {
				delete(r.seen, pid)
			}
		case seccompFilters(pid) > r.filters:
			r.log.Warn("killed a process a sandboxed exec command left running outside its process group", "pid", pid)
			_ = unix.Kill(pid, unix.SIGKILL) // our child: the pid cannot be reused before we reap it
			pending = true                   // reap it on the next pass
		}
	}
	return pending
}

// childPids lists the children of process self, from each of its
// threads' children file (children are per thread; an adopted orphan is
// attached to one of them).
func childPids(self int) map[int]bool {
	out := map[int]bool{}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", self))
	for _, t := range tasks {
		data, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that just ended
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out[pid] = true
			}
		}
	}
	return out
}

// pidfdPids returns the pids this process holds a pidfd for.
func pidfdPids() map[int]bool {
	out := map[int]bool{}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return out
	}
	for _, fd := range fds {
		target, err := os.Readlink("/proc/self/fd/" + fd.Name())
		if err != nil || !strings.Contains(target, "pidfd") {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + fd.Name())
		if err != nil {
			continue
		}
		for line := range bytes.Lines(info) {
			if rest, ok := bytes.CutPrefix(line, []byte("Pid:")); ok {
				if pid, err := strconv.Atoi(string(bytes.TrimSpace(rest))); err == nil && pid > 0 {
					out[pid] = true
				}
			}
		}
	}
	return out
}

// procState returns the state letter and the start time of pid.
func procState(pid int) (state, start string, ok bool) {
	f, ok := statFields(pid)
	if !ok || len(f) < 20 {
		return "", "", false
	}
	return f[0], f[19], true // fields 3 and 22 of stat(5)
}

// seccompFilters returns the Seccomp_filters count of pid (0 when unknown).
func seccompFilters(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "Seccomp_filters:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(rest))
			return n
		}
	}
	return 0
}
