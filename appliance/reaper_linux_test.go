package main

import (
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestReaperNeverStealsAndReapsOrphans: with the process a subreaper and
// its reaper busy (every exit below is a SIGCHLD), os/exec still gets the
// exit status of each of its own children, while the orphans that
// double-forked shells leave behind are reaped rather than left as
// zombies.
func TestReaperNeverStealsAndReapsOrphans(t *testing.T) {
	if err := becomeSubreaper(slog.New(slog.DiscardHandler)); err != nil {
		t.Skipf("no subreaper here: %v", err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				// Exits at once with a known code: a status the reaper
				// must never take.
				err := exec.Command("sh", "-c", "exit "+strconv.Itoa(i%3)).Run()
				if code := exitCodeOf(err); code != i%3 {
					errs <- err
				}
				// Leaves an orphan that exits a moment later.
				if err := exec.Command("sh", "-c", "setsid sh -c 'sleep 0.1' </dev/null >/dev/null 2>&1 &").Run(); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("an os/exec child lost its exit status: %v", err)
	}
	// Every orphan is gone: no child left that nobody waits for.
	deadline := time.Now().Add(60 * time.Second)
	for {
		held := pidfdPids()
		var left []string
		for pid := range childPids(os.Getpid()) {
			if !held[pid] {
				if f, ok := statFields(pid); ok {
					left = append(left, strconv.Itoa(pid)+":"+f[0])
				}
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("adopted children not reaped after 60 s: %s", strings.Join(left, " "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func exitCodeOf(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestPidfdPids(t *testing.T) {
	c := exec.Command("sleep", "30")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Wait()
	defer c.Process.Kill()
	if !pidfdPids()[c.Process.Pid] {
		t.Skip("os/exec holds no pidfd here (old kernel or Go): the gateway stays no subreaper")
	}
	if !childPids(os.Getpid())[c.Process.Pid] {
		t.Errorf("childPids misses %d", c.Process.Pid)
	}
}
