package session

import (
	"context"
	"sync"
)

// Lanes serializes work per key: one holder of a key at a time, waiters
// served in the order they called Acquire, different keys in parallel. It is
// the "sequential" queue mode of docs/design.md §3.4. The zero value is not
// usable; call NewLanes.
type Lanes struct {
	mu    sync.Mutex
	lanes map[string]*lane
}

// lane is one key's holder flag and its FIFO of waiters. A lane exists only
// while it is held, so idle keys cost nothing.
type lane struct {
	waiters []chan struct{}
}

// NewLanes returns an empty set of lanes.
func NewLanes() *Lanes {
	return &Lanes{lanes: map[string]*lane{}}
}

// Acquire waits until key is free and takes it. waited reports whether it
// had to queue behind another holder. If ctx ends first it returns ctx.Err()
// and the key is not taken. Call release exactly once when done (further
// calls do nothing); it hands the key to the next waiter.
func (l *Lanes) Acquire(ctx context.Context, key string) (release func(), waited bool, err error) {
	l.mu.Lock()
	ln, held := l.lanes[key]
	if !held {
		l.lanes[key] = &lane{}
		l.mu.Unlock()
		return l.releaser(key), false, nil
	}
	if err := ctx.Err(); err != nil {
		l.mu.Unlock()
		return nil, false, err
	}
	ch := make(chan struct{})
	ln.waiters = append(ln.waiters, ch)
	l.mu.Unlock()

	select {
	case <-ch:
		return l.releaser(key), true, nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	for i, w := range ln.waiters {
		if w == ch {
			ln.waiters = append(ln.waiters[:i], ln.waiters[i+1:]...)
			l.mu.Unlock()
			return nil, true, ctx.Err()
		}
	}
	l.mu.Unlock()
	// The key was handed to us as ctx ended: pass it on.
	l.release(key)
	return nil, true, ctx.Err()
}

func (l *Lanes) releaser(key string) func() {
	var once sync.Once
	return func() { once.Do(func() { l.release(key) }) }
}

// release hands key to its first waiter, or frees it.
func (l *Lanes) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ln := l.lanes[key]
	if ln == nil {
		return
	}
	if len(ln.waiters) == 0 {
		delete(l.lanes, key)
		return
	}
	next := ln.waiters[0]
	ln.waiters = ln.waiters[1:]
	close(next)
}

// Busy reports whether key is held.
func (l *Lanes) Busy(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.lanes[key]
	return ok
}

// Waiting returns how many Acquire calls are queued on key.
func (l *Lanes) Waiting(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ln := l.lanes[key]; ln != nil {
		return len(ln.waiters)
	}
	return 0
}
