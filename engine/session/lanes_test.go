package session_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/openclaw-edge/edge/engine/session"
)

// waitFor yields until cond holds. It synchronizes with goroutines that
// have no other signal (a queued Acquire); it asserts nothing about time.
func waitFor(cond func() bool) {
	for !cond() {
		runtime.Gosched()
	}
}

// Waiters are served in the order they called Acquire.
func TestLanesFIFO(t *testing.T) {
	l := session.NewLanes()
	release, waited, err := l.Acquire(context.Background(), "k")
	if err != nil || waited {
		t.Fatalf("first Acquire: waited=%v err=%v", waited, err)
	}
	const n = 50
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rel, waited, err := l.Acquire(context.Background(), "k")
			if err != nil || !waited {
				t.Errorf("waiter %d: waited=%v err=%v", i, waited, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			rel()
		}()
		// Queue waiter i before starting i+1, so the call order is known.
		waitFor(func() bool { return l.Waiting("k") == i+1 })
	}
	release()
	wg.Wait()
	for i, got := range order {
		if got != i {
			t.Fatalf("served order %v, want 0..%d", order, n-1)
		}
	}
	if l.Busy("k") {
		t.Error("key still busy after every holder released")
	}
}

// Many goroutines on a few keys: never two holders of one key at a time,
// different keys overlap freely.
func TestLanesExclusive(t *testing.T) {
	l := session.NewLanes()
	const keys, perKey = 8, 40
	var holders [keys]atomic.Int32
	var done [keys]int // guarded by the lane itself
	var wg sync.WaitGroup
	for k := range keys {
		for range perKey {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rel, _, err := l.Acquire(context.Background(), fmt.Sprint("key", k))
				if err != nil {
					t.Error(err)
					return
				}
				if h := holders[k].Add(1); h != 1 {
					t.Errorf("key%d has %d holders", k, h)
				}
				done[k]++ // a data race here would fail -race
				runtime.Gosched()
				holders[k].Add(-1)
				rel()
			}()
		}
	}
	wg.Wait()
	for k := range keys {
		if done[k] != perKey {
			t.Errorf("key%d ran %d times, want %d", k, done[k], perKey)
		}
	}
}

// A waiter whose context ends leaves the queue without taking the key; the
// next waiter still gets it.
func TestLanesCancel(t *testing.T) {
	l := session.NewLanes()
	release, _, _ := l.Acquire(context.Background(), "k")

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		rel, _, err := l.Acquire(ctx, "k")
		if rel != nil {
			rel()
		}
		errc <- err
	}()
	waitFor(func() bool { return l.Waiting("k") == 1 })
	got := make(chan struct{})
	go func() {
		rel, waited, err := l.Acquire(context.Background(), "k")
		if err != nil || !waited {
			t.Errorf("second waiter: %v %v", waited, err)
		}
		close(got)
		rel()
	}()
	waitFor(func() bool { return l.Waiting("k") == 2 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Acquire err = %v", err)
	}
	if w := l.Waiting("k"); w != 1 {
		t.Errorf("Waiting = %d after cancel, want 1", w)
	}
	release()
	<-got
	waitFor(func() bool { return !l.Busy("k") })

	// An already-cancelled context on a busy key fails at once.
	release, _, _ = l.Acquire(context.Background(), "k")
	if _, _, err := l.Acquire(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: %v", err)
	}
	release()
	release() // a second release does nothing
	if l.Busy("k") {
		t.Error("busy after release")
	}
}

// Cancelling while the key is being handed over never loses the key.
func TestLanesCancelRace(t *testing.T) {
	l := session.NewLanes()
	for range 200 {
		release, _, _ := l.Acquire(context.Background(), "k")
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			if rel, _, err := l.Acquire(ctx, "k"); err == nil {
				rel()
			}
		}()
		waitFor(func() bool { return l.Waiting("k") == 1 })
		go cancel()
		release()
		<-done
		waitFor(func() bool { return !l.Busy("k") })
	}
}

func TestLanesBusy(t *testing.T) {
	l := session.NewLanes()
	if l.Busy("a") {
		t.Error("fresh key busy")
	}
	ra, _, _ := l.Acquire(context.Background(), "a")
	rb, waited, _ := l.Acquire(context.Background(), "b")
	if !l.Busy("a") || !l.Busy("b") || waited {
		t.Error("keys should be held in parallel")
	}
	ra()
	if l.Busy("a") || !l.Busy("b") {
		t.Error("release freed the wrong key")
	}
	rb()
}
