package main

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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
	sawDead := make(chan struct{}, 1)
	stop := watchdog(slog.New(slog.NewTextHandler(io.Discard, nil)), func() error {
		if dead.Load() {
			select {
			case sawDead <- struct{}{}:
			default:
			}
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
	// Probes and pings run one after the other on one goroutine: once a
	// probe has seen the loop dead, every ping sent before it is already in
	// the socket (a sleep here was not enough on a loaded CI machine).
	select {
	case <-sawDead:
	case <-time.After(5 * time.Second):
		t.Fatal("the watchdog never probed again")
	}
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
