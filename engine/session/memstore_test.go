package session_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/session"
	"github.com/openclaw-edge/edge/engine/transcript"
)

// memStore is an in-memory session.Store for Manager unit tests. It keeps
// the Store contract (one atomic commit, ErrDuplicate writes nothing) and
// copies values through JSON so callers cannot alias its state.
type memStore struct {
	mu          sync.Mutex
	sessions    map[string]map[engine.SessionKey]session.Entry
	transcripts map[string]*memTranscript
	dedup       map[string]bool
}

type memTranscript struct {
	header  transcript.Header
	entries []transcript.Entry
}

var _ session.Store = (*memStore)(nil)

func newMemStore() *memStore {
	return &memStore{
		sessions:    map[string]map[engine.SessionKey]session.Entry{},
		transcripts: map[string]*memTranscript{},
		dedup:       map[string]bool{},
	}
}

func (s *memStore) Session(agentID string, key engine.SessionKey) (session.Entry, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.sessions[agentID][key]
	return e, ok, nil
}

func (s *memStore) Sessions(agentID string) ([]session.Keyed, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []session.Keyed
	for agent, m := range s.sessions {
		if agentID != "" && agent != agentID {
			continue
		}
		for k, e := range m {
			out = append(out, session.Keyed{AgentID: agent, Key: k, Entry: e})
		}
	}
	slices.SortStableFunc(out, func(a, b session.Keyed) int { return b.Entry.UpdatedAt.Compare(a.Entry.UpdatedAt) })
	return out, nil
}

func (s *memStore) Commit(agentID string, key engine.SessionKey, c session.Commit) (session.Entry, []transcript.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.DedupKey != "" && s.dedup[c.DedupKey] {
		return session.Entry{}, nil, session.ErrDuplicate
	}
	e := s.sessions[agentID][key]
	if c.Update != nil {
		if err := c.Update(&e); err != nil {
			return session.Entry{}, nil, err
		}
	}
	if e.SessionID == "" {
		return session.Entry{}, nil, errors.New("no session id")
	}
	t := s.transcripts[e.SessionID]
	if t == nil {
		h := c.Header
		h.Type, h.Version, h.ID = "session", transcript.Version, e.SessionID
		h.Timestamp = transcript.Timestamp(time.Now())
		t = &memTranscript{header: h}
	}
	seen := map[string]bool{}
	for _, te := range t.entries {
		seen[te.ID] = true
	}
	leaf := ""
	if n := len(t.entries); n > 0 {
		leaf = t.entries[n-1].ID
	}
	var stored []transcript.Entry
	for _, te := range c.Entries {
		te = clone(te)
		if te.ID == "" {
			te.ID = transcript.NewID()
		} else if seen[te.ID] {
			return session.Entry{}, nil, fmt.Errorf("entry %s: %w", te.ID, session.ErrIDInUse)
		}
		if te.ParentID == "" {
			te.ParentID = leaf
		}
		if err := transcript.CheckAppend(seen, te); err != nil {
			return session.Entry{}, nil, err
		}
		leaf = te.ID
		stored = append(stored, te)
	}
	// Everything checked: apply.
	if c.DedupKey != "" {
		s.dedup[c.DedupKey] = true
	}
	t.entries = append(t.entries, stored...)
	s.transcripts[e.SessionID] = t
	if s.sessions[agentID] == nil {
		s.sessions[agentID] = map[engine.SessionKey]session.Entry{}
	}
	s.sessions[agentID][key] = e
	return e, stored, nil
}

func (s *memStore) Transcript(sessionID string) (transcript.Header, []transcript.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.transcripts[sessionID]
	if t == nil {
		return transcript.Header{}, nil, session.ErrNotFound
	}
	out := make([]transcript.Entry, len(t.entries))
	for i, e := range t.entries {
		out[i] = clone(e)
	}
	return t.header, out, nil
}

func (s *memStore) ImportTranscript(agentID string, key engine.SessionKey, h transcript.Header, entries []transcript.Entry, e session.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.transcripts[h.ID] != nil {
		return fmt.Errorf("session id %s is already in use", h.ID)
	}
	if err := transcript.CheckAppend(map[string]bool{}, entries...); err != nil {
		return err
	}
	t := &memTranscript{header: h}
	for _, te := range entries {
		t.entries = append(t.entries, clone(te))
	}
	s.transcripts[h.ID] = t
	e.SessionID = h.ID
	if s.sessions[agentID] == nil {
		s.sessions[agentID] = map[engine.SessionKey]session.Entry{}
	}
	s.sessions[agentID][key] = e
	return nil
}

func (s *memStore) DeleteSession(agentID string, key engine.SessionKey) (session.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.sessions[agentID][key]
	if !ok {
		return session.Entry{}, session.ErrNotFound
	}
	delete(s.sessions[agentID], key)
	delete(s.transcripts, e.SessionID)
	return e, nil
}

// clone deep-copies an entry through its JSON form, as a real store would.
func clone(e transcript.Entry) transcript.Entry {
	b, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	var out transcript.Entry
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}
