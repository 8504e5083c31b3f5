// Package fakeserver is what the providers' fake servers (anthropictest,
// openaitest, geminitest, ollamatest) share: the script of replies they
// answer with in order, the log of the requests they got, replies that
// stall until released, and the echo they answer with when the script has
// run out. What each API's wire format and validation says stays in its own
// package.
package fakeserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"unicode/utf8"
)

// Script is a fake server's scripted replies and the requests it got.
type Script[R any] struct {
	mu       sync.Mutex
	replies  []R
	requests []json.RawMessage
	closed   chan struct{}
	once     sync.Once
}

// NewScript returns a Script serving replies in order.
func NewScript[R any](replies ...R) *Script[R] {
	return &Script[R]{replies: replies, closed: make(chan struct{})}
}

// Push appends replies.
func (s *Script[R]) Push(replies ...R) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, replies...)
}

// Requests returns the raw bodies of the requests received so far.
func (s *Script[R]) Requests() []json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]json.RawMessage(nil), s.requests...)
}

// Release ends stalled replies.
func (s *Script[R]) Release() { s.once.Do(func() { close(s.closed) }) }

// Log records the body of a request.
func (s *Script[R]) Log(body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, json.RawMessage(body))
}

// Next takes the next scripted reply; ok is false when none is left (the
// server echoes).
func (s *Script[R]) Next() (rep R, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.replies) == 0 {
		return rep, false
	}
	rep = s.replies[0]
	s.replies = s.replies[1:]
	return rep, true
}

// Stall holds a reply half-way until the client goes away or the script is
// released.
func (s *Script[R]) Stall(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-s.closed:
	}
}

// Echo is the text of the reply to a request whose last user message is
// lastUser once the script has run out: "echo: " and what the user typed,
// without the metadata blocks the gateway puts before it ("Inbound metadata
// (trusted…" followed by fenced blocks).
func Echo(lastUser string) string {
	if strings.HasPrefix(lastUser, "Inbound metadata") {
		if i := strings.LastIndex(lastUser, "```\n\n"); i >= 0 {
			lastUser = lastUser[i+len("```\n\n"):]
		}
	}
	return "echo: " + lastUser
}

// Split cuts s into pieces of n runes.
func Split(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		i, k := 0, 0
		for i < len(s) && k < n {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			k++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}
