package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/transcript"
)

// Importer is an optional Store extension that imports a transcript of any
// size in bounded memory: entries are written in several transactions to a
// staging area that nothing reads, and one last transaction makes the
// transcript visible and points a key at it. engine/store/bolt implements
// it; a Store without it imports in one transaction, in memory.
type Importer interface {
	// BeginImport stages a transcript with header h under h.ID when no
	// transcript (staged or not) has that id, else under a fresh id.
	BeginImport(h transcript.Header) (Staged, error)
}

// Staged is a transcript being imported.
type Staged interface {
	// SessionID is the id the transcript is staged under.
	SessionID() string
	// Append stores entries in one transaction, keeping null parents null.
	Append(entries []transcript.Entry) error
	// Publish makes the transcript visible and points key at it, in one
	// transaction; fn makes the new entry from the key's old one (zero if
	// none). The returned entry has SessionID set.
	Publish(agentID string, key engine.SessionKey, fn func(old Entry) Entry) (Entry, error)
	// Discard deletes what was staged. It is safe after Publish (a no-op).
	Discard() error
}

// Import batch bounds: a transaction per batch keeps memory bounded while
// fsyncs stay few (every bbolt commit costs two; docs/design.md §12).
const (
	importBatchBytes   = 2 << 20
	importBatchEntries = 4096
)

// Import is a transcript import in progress: Manager.BeginImport reads the
// header, Load the entries, Publish binds the result to a session key.
// Discard (deferred by the caller) removes what a failed import staged.
type Import struct {
	m       *Manager
	d       *transcript.Decoder
	h       transcript.Header
	staged  Staged             // nil: the Store has no Importer
	mem     []transcript.Entry // the entries, when staged is nil
	n       int
	counts  Entry // Messages, token counters, LastModel
	renamed string
	done    bool
	updated time.Time // SetUpdatedAt's; zero: the time of Publish
}

// BeginImport reads the header of an OpenClaw transcript from r and stages
// the import under the header's session id, or under a fresh one when that
// id is already in the store (RenamedFrom says so). Errors reading the
// transcript are *transcript.LineError.
func (m *Manager) BeginImport(r io.Reader) (*Import, error) {
	d := transcript.NewDecoder(r)
	h, err := d.Header()
	if err != nil {
		return nil, err
	}
	imp := &Import{m: m, d: d, h: h}
	if st, ok := m.st.(Importer); ok {
		s, err := st.BeginImport(h)
		if err != nil {
			return nil, fmt.Errorf("stage the import of %s: %w", h.ID, err)
		}
		imp.staged = s
		if id := s.SessionID(); id != h.ID {
			imp.renamed, imp.h.ID = h.ID, id
		}
		return imp, nil
	}
	for {
		_, _, err := m.st.Transcript(imp.h.ID)
		if errors.Is(err, ErrNotFound) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("check session id %s: %w", imp.h.ID, err)
		}
		imp.renamed, imp.h.ID = h.ID, transcript.NewSessionID()
	}
	return imp, nil
}

// SessionID is the id the transcript will have.
func (imp *Import) SessionID() string { return imp.h.ID }

// Header is the transcript's header, with SessionID as its id. Its fields
// come from the file: outside input.
func (imp *Import) Header() transcript.Header { return imp.h }

// RenamedFrom is the header's session id when it was already in use and
// the transcript got SessionID instead; "" otherwise.
func (imp *Import) RenamedFrom() string { return imp.renamed }

// Existing reports whether a transcript with the header's session id is
// in the store already (the import is then staged under a fresh id).
func (imp *Import) Existing() bool { return imp.renamed != "" }

// Match says how a transcript being imported compares with the stored
// transcript of the same session id.
type Match int

const (
	// MatchDiffers: some entry differs, or the upload has entries the
	// stored transcript lacks (it went on elsewhere after the last import).
	MatchDiffers Match = iota
	// MatchSame: the same entries, value for value.
	MatchSame
	// MatchPrefix: the upload is a prefix of the stored transcript (the
	// conversation went on here after the import).
	MatchPrefix
)

// Match reads the rest of the transcript, checking it as Load does but
// storing nothing, and compares it with the stored transcript of the
// header's session id (see Existing) entry by entry, as JSON values. It
// returns how they compare and the number of entries read.
func (imp *Import) Match() (Match, int, error) {
	id := imp.renamed
	if id == "" {
		id = imp.h.ID
	}
	_, stored, err := imp.m.st.Transcript(id)
	if errors.Is(err, ErrNotFound) {
		// The id is taken by an import still staged, not by a transcript.
		return MatchDiffers, 0, fmt.Errorf("session %s is being imported by another request; try again when it is done", id)
	}
	if err != nil {
		return MatchDiffers, 0, fmt.Errorf("read the stored transcript %s: %w", id, err)
	}
	n, differs := 0, false
	for {
		e, err := imp.d.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return MatchDiffers, n, err
		}
		if !differs && (n >= len(stored) || !sameEntry(&e, &stored[n])) {
			differs = true
		}
		n++
	}
	switch {
	case differs:
		return MatchDiffers, n, nil
	case n == len(stored):
		return MatchSame, n, nil
	}
	return MatchPrefix, n, nil
}

// sameEntry compares two entries as the JSON they are written as.
func sameEntry(a, b *transcript.Entry) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// Load reads and stores every entry, in batches, and returns how many
// there were. Errors in the transcript are *transcript.LineError.
func (imp *Import) Load() (int, error) {
	var (
		batch []transcript.Entry
		from  = imp.d.BytesRead()
	)
	flush := func() error {
		if len(batch) == 0 || imp.staged == nil {
			return nil
		}
		if err := imp.staged.Append(batch); err != nil {
			return fmt.Errorf("store entries up to line %d: %w", imp.d.Line(), err)
		}
		clear(batch) // let the entries go before the next batch is read
		batch = batch[:0]
		from = imp.d.BytesRead()
		return nil
	}
	for {
		e, err := imp.d.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return imp.n, err
		}
		imp.count(&e)
		imp.n++
		if imp.staged == nil {
			imp.mem = append(imp.mem, e)
			continue
		}
		batch = append(batch, e)
		if len(batch) >= importBatchEntries || imp.d.BytesRead()-from >= importBatchBytes {
			if err := flush(); err != nil {
				return imp.n, err
			}
		}
	}
	return imp.n, flush()
}

// count adds what e contributes to the session entry's counters.
func (imp *Import) count(te *transcript.Entry) {
	if te.Type != transcript.EntryMessage || te.Message == nil {
		return
	}
	c := &imp.counts
	c.Messages++
	msg := te.Message
	if msg.Role != engine.RoleAssistant {
		return
	}
	if u := msg.Usage; u != nil {
		c.InputTokens += u.Input
		c.OutputTokens += u.Output
		c.TotalTokens += u.TotalTokens
	}
	if msg.Provider != "" && msg.Model != "" {
		c.LastModel = msg.Provider + "/" + msg.Model
	}
}

// SetUpdatedAt makes t the published entry's updatedAt (the session's last
// activity, as the store it comes from says), so that an imported session
// keeps its age: the idle and daily resets and the session lists see when
// it was last used, not when it was imported. A time after Publish's is
// taken as Publish's.
func (imp *Import) SetUpdatedAt(t time.Time) { imp.updated = t }

// Publish makes the loaded transcript key's current session, keeping the
// old entry's toggles and overrides, in one transaction.
func (imp *Import) Publish(agentID string, key engine.SessionKey) (Entry, error) {
	if err := checkKey(agentID, key); err != nil {
		return Entry{}, err
	}
	now := imp.m.cfg.Now()
	fn := func(old Entry) Entry {
		e := old
		renew(&e, now)
		e.SessionID = imp.h.ID
		if t, err := time.Parse(time.RFC3339Nano, imp.h.Timestamp); err == nil {
			e.CreatedAt = t
		}
		e.Messages = imp.counts.Messages
		e.InputTokens = imp.counts.InputTokens
		e.OutputTokens = imp.counts.OutputTokens
		e.TotalTokens = imp.counts.TotalTokens
		e.LastModel = imp.counts.LastModel
		if !imp.updated.IsZero() && imp.updated.Before(now) {
			e.UpdatedAt = imp.updated
		}
		return e
	}
	var (
		e   Entry
		err error
	)
	if imp.staged != nil {
		e, err = imp.staged.Publish(agentID, key, fn)
	} else {
		var old Entry
		if old, _, err = imp.m.st.Session(agentID, key); err == nil {
			e = fn(old)
			err = imp.m.st.ImportTranscript(agentID, key, imp.h, imp.mem, e)
		}
	}
	if err != nil {
		return Entry{}, fmt.Errorf("import into %s: %w", key, err)
	}
	imp.done = true
	imp.mem = nil
	return e, nil
}

// Discard removes what an unfinished import staged; after Publish it does
// nothing.
func (imp *Import) Discard() error {
	if imp.done || imp.staged == nil {
		return nil
	}
	imp.done = true
	if err := imp.staged.Discard(); err != nil {
		return fmt.Errorf("discard the partial import of %s: %w", imp.h.ID, err)
	}
	return nil
}

// Import reads an OpenClaw transcript and makes it key's current session,
// keeping the old entry's toggles and overrides. A session id already in
// the store is replaced by a fresh one. It returns the new entry and the
// number of transcript entries. Bad input stores nothing.
func (m *Manager) Import(agentID string, key engine.SessionKey, r io.Reader) (Entry, int, error) {
	if err := checkKey(agentID, key); err != nil {
		return Entry{}, 0, err
	}
	imp, err := m.BeginImport(r)
	if err != nil {
		return Entry{}, 0, fmt.Errorf("import into %s: %w", key, err)
	}
	defer imp.Discard() // a failure below is reported; leftovers are swept at the next start
	n, err := imp.Load()
	if err != nil {
		return Entry{}, 0, fmt.Errorf("import into %s: %w", key, err)
	}
	e, err := imp.Publish(agentID, key)
	if err != nil {
		return Entry{}, 0, err
	}
	return e, n, nil
}
