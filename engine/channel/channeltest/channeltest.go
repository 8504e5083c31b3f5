// Package channeltest has test doubles of the gateway's side of the channel
// contract (channel.Inbox, channel.Store), for adapter tests.
package channeltest

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/openclaw-edge/edge/engine"
)

// Store is an in-memory channel.Store; values go through JSON as they do
// in bbolt.
type Store struct {
	mu sync.Mutex
	m  map[string][]byte
}

// NewStore returns an empty Store.
func NewStore() *Store { return &Store{m: map[string][]byte{}} }

// Get implements channel.Store.
func (s *Store) Get(key string, v any) (bool, error) {
	s.mu.Lock()
	b, ok := s.m[key]
	s.mu.Unlock()
	if !ok {
		return false, nil
	}
	return true, json.Unmarshal(b, v)
}

// Put implements channel.Store.
func (s *Store) Put(key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.m[key] = b
	s.mu.Unlock()
	return nil
}

// Inbox records delivered messages; Err, if set, is returned by Deliver
// (and nothing is recorded).
type Inbox struct {
	mu   sync.Mutex
	msgs []engine.Inbound
	Err  error
	ch   chan engine.Inbound
}

// NewInbox returns an empty Inbox.
func NewInbox() *Inbox { return &Inbox{ch: make(chan engine.Inbound, 1024)} }

// Deliver implements channel.Inbox.
func (in *Inbox) Deliver(ctx context.Context, m engine.Inbound) error {
	in.mu.Lock()
	err := in.Err
	if err == nil {
		in.msgs = append(in.msgs, m)
	}
	in.mu.Unlock()
	if err != nil {
		return err
	}
	select {
	case in.ch <- m:
	default:
	}
	return nil
}

// Messages returns what was delivered so far.
func (in *Inbox) Messages() []engine.Inbound {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]engine.Inbound(nil), in.msgs...)
}

// Next waits up to d for the next delivered message.
func (in *Inbox) Next(d time.Duration) (engine.Inbound, bool) {
	select {
	case m := <-in.ch:
		return m, true
	case <-time.After(d):
		return engine.Inbound{}, false
	}
}
