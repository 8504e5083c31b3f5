// Package session keeps each conversation's state: the session entry a
// session key points to (current session id, toggles, overrides, token
// counters), the transcript behind it, the daily and idle resets that start a
// new session id, and the lanes that run one turn at a time per session.
//
// Storage is behind Store, implemented by engine/store/bolt. Every method of
// Manager that writes is one Store.Commit, i.e. one durable transaction: the
// inbound message of a turn is committed (with its dedup key) before the
// model is called, and the turn is marked open until EndTurn, so a crash
// leaves a visible open turn rather than a lost one (docs/design.md §4).
//
// Choices made where the spec was silent:
//   - A reset (daily, idle, /new, import) keeps the entry's toggles
//     (thinking, verbose, reasoning, elevated, send policy) and model/auth
//     overrides, as OpenClaw does, and resets counters, LastModel and
//     OpenTurn. The daily and idle checks compare against UpdatedAt.
//   - Non-empty Meta fields refresh an existing entry too (a group's subject
//     can change); empty ones never clear anything.
//   - Config.DailyResetHour nil means the default 04:00; 0 and 24 mean
//     midnight; a negative hour disables the daily reset. (It was an int
//     whose 0 meant "unset", so session.reset.atHour: 0 silently became
//     04:00.)
//   - Append, AppendEntries, EndTurn and CloseInterrupted on a key without
//     an entry fail with ErrNotFound; Update creates the entry (and its empty
//     transcript) so toggles can be set before the first message.
//   - A turn's end (EndTurn, CloseInterrupted) is recorded in the dedup
//     record of its inbound message in the same transaction as the answer,
//     so a client retrying with the same idempotency key learns durably
//     whether the turn was answered, failed or was cut by a crash
//     (Manager.Outcome).
//   - Token counters add Usage.Input and Usage.Output; TotalTokens adds
//     Usage.TotalTokens, or the sum of all four counts when it is zero.
//   - Delete removes the entry and its current transcript only: earlier
//     transcripts of the key are not linked to it (Store.DeleteSession).
//     The dedup records of its messages stay, so a retry is still not run
//     twice; Outcome then reports the turn's state without its answer.
package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/transcript"
)

// Entry is a session key's state: OpenClaw's SessionEntry plus what the
// gateway needs to recover from a crash.
type Entry struct {
	SessionID string    `json:"sessionId"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`

	ChatType    string `json:"chatType,omitempty"`
	Channel     string `json:"channel,omitempty"`
	DisplayName string `json:"displayName,omitempty"`
	Subject     string `json:"subject,omitempty"`
	Room        string `json:"room,omitempty"`

	ThinkingLevel  string `json:"thinkingLevel,omitempty"`
	VerboseLevel   string `json:"verboseLevel,omitempty"`
	ReasoningLevel string `json:"reasoningLevel,omitempty"`
	ElevatedLevel  string `json:"elevatedLevel,omitempty"`
	SendPolicy     string `json:"sendPolicy,omitempty"`

	ProviderOverride    string `json:"providerOverride,omitempty"`
	ModelOverride       string `json:"modelOverride,omitempty"`
	AuthProfileOverride string `json:"authProfileOverride,omitempty"`

	InputTokens     int `json:"inputTokens"`
	OutputTokens    int `json:"outputTokens"`
	TotalTokens     int `json:"totalTokens"`
	ContextTokens   int `json:"contextTokens"`
	CompactionCount int `json:"compactionCount"`

	MemoryFlushAt              time.Time `json:"memoryFlushAt,omitzero"`
	MemoryFlushCompactionCount int       `json:"memoryFlushCompactionCount,omitempty"`

	// LastModel is the "provider/model" that answered last.
	LastModel string `json:"lastModel,omitempty"`
	// Messages counts message entries in the current transcript.
	Messages int `json:"messages"`
	// OpenTurn is the id of the inbound entry whose turn has not finished
	// ("" = none).
	OpenTurn string `json:"openTurn,omitempty"`
	// OpenTurnDedup is the dedup key of the open turn's inbound message
	// ("" = none): the record that learns the turn's outcome.
	OpenTurnDedup string `json:"openTurnDedup,omitempty"`
}

// Keyed is an entry with the agent and session key it is stored under.
type Keyed struct {
	AgentID string
	Key     engine.SessionKey
	Entry   Entry
}

// Meta describes where a conversation happens. It fills a new entry;
// Workspace becomes the new transcript header's cwd.
type Meta struct {
	ChatType, Channel, DisplayName, Subject, Room, Workspace string
}

// Errors.
var (
	// ErrDuplicate means the dedup key of a commit was seen before; nothing
	// was written.
	ErrDuplicate = errors.New("duplicate message")
	// ErrNotFound means there is no such session or transcript.
	ErrNotFound = errors.New("session not found")
	// ErrIDInUse means a committed entry carried an id that its transcript
	// already holds; nothing was written.
	ErrIDInUse = errors.New("entry id already in use in the transcript")
)

// Store persists session entries and transcripts. engine/store/bolt
// implements it.
type Store interface {
	// Session returns the entry at key.
	Session(agentID string, key engine.SessionKey) (Entry, bool, error)
	// Sessions lists an agent's entries ("" = every agent), most recently
	// updated first.
	Sessions(agentID string) ([]Keyed, error)
	// Commit runs in one transaction: if c.DedupKey != "" and was seen →
	// ErrDuplicate (nothing written), else it is marked seen; the entry is
	// loaded (zero if missing) and passed to c.Update, which may change
	// anything including SessionID (an error aborts everything); if the
	// transcript of the resulting SessionID does not exist its header is
	// written (id = SessionID, cwd = c.Header.Cwd, timestamp now); c.Entries
	// are appended, an empty ID filled with a fresh id unique in the
	// transcript and an empty ParentID with the current leaf (the first
	// entry gets null); the entry is saved. It returns the entry and the
	// entries as stored. An entry whose given id the transcript already
	// holds fails with an error wrapping ErrIDInUse; one whose ParentID names
	// no entry of the transcript fails too.
	Commit(agentID string, key engine.SessionKey, c Commit) (Entry, []transcript.Entry, error)
	// Transcript returns a whole transcript, ErrNotFound if there is none.
	Transcript(sessionID string) (transcript.Header, []transcript.Entry, error)
	// ImportTranscript stores a whole transcript under the new session id
	// h.ID (an error if it is in use) and points key at it with entry e.
	ImportTranscript(agentID string, key engine.SessionKey, h transcript.Header, entries []transcript.Entry, e Entry) error
	// DeleteSession removes the entry at key and the transcript of its
	// SessionID in one transaction and returns the entry as it was; an
	// error wrapping ErrNotFound when there is no entry. Transcripts the
	// key pointed at before (replaced by a reset or an import) may stay.
	DeleteSession(agentID string, key engine.SessionKey) (Entry, error)
}

// DedupStore is an optional Store extension that remembers, per dedup key,
// which turn the message started and how that turn ended, so a retried
// message is answered from the store instead of starting a second turn.
// engine/store/bolt implements it: the record is written by the Commit that
// carries DedupKey and completed by the Commit that carries Outcome.
type DedupStore interface {
	// Dedup returns the record of key; false when the key was never seen
	// (or has been pruned).
	Dedup(key string) (DedupRecord, bool, error)
}

// DedupRecord is what a store keeps about a deduplicated inbound message.
type DedupRecord struct {
	AgentID   string            `json:"agentId,omitempty"`
	Key       engine.SessionKey `json:"key,omitempty"`
	SessionID string            `json:"sessionId,omitempty"`
	// EntryID is the transcript id of the inbound message (the first entry
	// of the commit).
	EntryID string `json:"entryId,omitempty"`
	// Outcome is "" while the turn is open, else OutcomeReply,
	// OutcomeFailed or OutcomeInterrupted.
	Outcome string `json:"outcome,omitempty"`
	// AnswerID is the transcript id of the entry that ended the turn (the
	// reply, the error entry or the interrupted-turn note).
	AnswerID string `json:"answerId,omitempty"`
}

// Outcomes of a turn, as kept in its DedupRecord.
const (
	OutcomeReply       = "reply"       // the model answered
	OutcomeFailed      = "failed"      // the turn failed (model error, stopped) with a visible error entry
	OutcomeInterrupted = "interrupted" // a crash cut it; closed at the next start
	// OutcomeOpen is reported by Manager.Outcome for a turn that is still
	// open in the store: running, or cut by a crash and not closed yet.
	OutcomeOpen = "open"
	// OutcomeUnknown is reported for a record that names no outcome and no
	// open turn (written before outcomes were recorded).
	OutcomeUnknown = "unknown"
)

// TranscriptViewer is an optional Store extension that lends a transcript
// without copying it; Manager uses it to rebuild the context of a turn
// (copying a long transcript on every message is most of that cost). fn
// must neither modify nor retain entries.
type TranscriptViewer interface {
	ViewTranscript(sessionID string, fn func(transcript.Header, []transcript.Entry) error) error
}

// Commit is one atomic change to a session: see Store.Commit.
type Commit struct {
	DedupKey string
	Header   transcript.Header
	Update   func(*Entry) error
	Entries  []transcript.Entry
	// Outcome, when set, is written (with the id of the last committed
	// entry as AnswerID) into the dedup record named by the entry's
	// OpenTurnDedup as loaded before Update, in the same transaction. A
	// store that does not implement DedupStore may ignore it.
	Outcome string
	// Records are small records of other packages (the outbox) written in
	// the same transaction: what must never exist without this commit, or
	// the commit without it.
	Records []Record
}

// Record is one small JSON record written with a Commit; a nil Value
// deletes the key.
type Record struct {
	Bucket, Key string
	Value       []byte
}

// Config configures a Manager.
type Config struct {
	// DailyResetHour is the local hour at which sessions expire daily:
	// nil means the default 4, 0 and 24 mean midnight, negative disables.
	// A pointer because 0 (midnight) is a real setting.
	DailyResetHour *int
	// IdleMinutes expires a session idle for longer; 0 disables.
	IdleMinutes int
	// Location is the time zone of DailyResetHour; nil means time.Local.
	Location *time.Location
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Manager runs the session lifecycle over a Store.
type Manager struct {
	st    Store
	cfg   Config
	daily int // the resolved DailyResetHour
}

// NewManager returns a Manager over st.
func NewManager(st Store, cfg Config) *Manager {
	daily := 4
	if cfg.DailyResetHour != nil {
		daily = *cfg.DailyResetHour
	}
	if cfg.Location == nil {
		cfg.Location = time.Local
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Manager{st: st, cfg: cfg, daily: daily}
}

// Turn is what BeginTurn committed.
type Turn struct {
	Entry      Entry
	SessionID  string
	NewSession bool
	// InboundID is the transcript id of the user message.
	InboundID string
	// History is the model context (transcript.Context) of the whole
	// transcript, ending with the new user message.
	History []engine.Message
}

// Expired reports whether an entry last updated at updated has expired at
// now: the daily reset boundary (the latest DailyResetHour:00 at or before
// now) is after updated, or it has been idle longer than IdleMinutes.
func (m *Manager) Expired(updated, now time.Time) bool {
	if h := m.daily; h >= 0 {
		local := now.In(m.cfg.Location)
		y, mo, d := local.Date()
		boundary := time.Date(y, mo, d, h, 0, 0, 0, m.cfg.Location)
		if boundary.After(now) {
			boundary = time.Date(y, mo, d-1, h, 0, 0, 0, m.cfg.Location)
		}
		if boundary.After(updated) {
			return true
		}
	}
	if m.cfg.IdleMinutes > 0 && now.Sub(updated) > time.Duration(m.cfg.IdleMinutes)*time.Minute {
		return true
	}
	return false
}

// BeginTurn commits an inbound user message as one transaction: dedup
// (ErrDuplicate, nothing written), a new session id if the entry is missing
// or expired, the message appended and the turn marked open.
func (m *Manager) BeginTurn(agentID string, key engine.SessionKey, meta Meta, dedupKey string, user engine.Message) (Turn, error) {
	if err := checkKey(agentID, key); err != nil {
		return Turn{}, err
	}
	if user.Role == "" {
		user.Role = engine.RoleUser
	}
	for try := 0; ; try++ {
		t, err := m.beginTurn(agentID, key, meta, dedupKey, user)
		if errors.Is(err, ErrIDInUse) && try < 3 {
			continue // the pre-chosen entry id collided: pick another
		}
		if err != nil {
			return Turn{}, fmt.Errorf("begin turn in %s: %w", key, err)
		}
		return t, nil
	}
}

func (m *Manager) beginTurn(agentID string, key engine.SessionKey, meta Meta, dedupKey string, user engine.Message) (Turn, error) {
	now := m.cfg.Now()
	// The entry id is chosen here, not by the store, because OpenTurn must
	// name it in the same transaction.
	inbound := messageEntry(user, now)
	inbound.ID = transcript.NewID()
	var isNew bool
	e, _, err := m.st.Commit(agentID, key, Commit{
		DedupKey: dedupKey,
		Header:   transcript.Header{Cwd: meta.Workspace},
		Entries:  []transcript.Entry{inbound},
		Update: func(e *Entry) error {
			if e.SessionID == "" || m.Expired(e.UpdatedAt, now) {
				renew(e, now)
				isNew = true
			}
			applyMeta(e, meta)
			e.OpenTurn = inbound.ID
			e.OpenTurnDedup = dedupKey
			e.Messages++
			e.UpdatedAt = now
			return nil
		},
	})
	if err != nil {
		return Turn{}, err
	}
	history, err := m.context(e.SessionID)
	if err != nil {
		return Turn{}, err
	}
	return Turn{
		Entry:      e,
		SessionID:  e.SessionID,
		NewSession: isNew,
		InboundID:  inbound.ID,
		History:    history,
	}, nil
}

// context rebuilds the model context of a transcript.
func (m *Manager) context(sessionID string) ([]engine.Message, error) {
	var msgs []engine.Message
	build := func(_ transcript.Header, entries []transcript.Entry) error {
		msgs = transcript.Context(entries) // shares nothing with entries
		return nil
	}
	var err error
	if v, ok := m.st.(TranscriptViewer); ok {
		err = v.ViewTranscript(sessionID, build)
	} else {
		var (
			h       transcript.Header
			entries []transcript.Entry
		)
		h, entries, err = m.st.Transcript(sessionID)
		if err == nil {
			err = build(h, entries)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read transcript: %w", err)
	}
	return msgs, nil
}

// renew starts a new session id in e, keeping toggles and overrides.
func renew(e *Entry, now time.Time) {
	*e = Entry{
		SessionID: transcript.NewSessionID(),
		CreatedAt: now,
		UpdatedAt: now,

		ChatType:    e.ChatType,
		Channel:     e.Channel,
		DisplayName: e.DisplayName,
		Subject:     e.Subject,
		Room:        e.Room,

		ThinkingLevel:  e.ThinkingLevel,
		VerboseLevel:   e.VerboseLevel,
		ReasoningLevel: e.ReasoningLevel,
		ElevatedLevel:  e.ElevatedLevel,
		SendPolicy:     e.SendPolicy,

		ProviderOverride:    e.ProviderOverride,
		ModelOverride:       e.ModelOverride,
		AuthProfileOverride: e.AuthProfileOverride,
	}
}

func applyMeta(e *Entry, meta Meta) {
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&e.ChatType, meta.ChatType)
	set(&e.Channel, meta.Channel)
	set(&e.DisplayName, meta.DisplayName)
	set(&e.Subject, meta.Subject)
	set(&e.Room, meta.Room)
}

func messageEntry(msg engine.Message, now time.Time) transcript.Entry {
	e := transcript.MessageEntry(msg)
	e.Timestamp = transcript.Timestamp(now)
	return e
}

// Append appends messages to the current transcript in one transaction.
func (m *Manager) Append(agentID string, key engine.SessionKey, msgs ...engine.Message) ([]transcript.Entry, error) {
	now := m.cfg.Now()
	entries := make([]transcript.Entry, len(msgs))
	for i, msg := range msgs {
		entries[i] = messageEntry(msg, now)
	}
	return m.AppendEntries(agentID, key, entries...)
}

// AppendEntries appends entries of any type (compaction, custom …) to the
// current transcript in one transaction. Message entries count in
// Entry.Messages.
func (m *Manager) AppendEntries(agentID string, key engine.SessionKey, entries ...transcript.Entry) ([]transcript.Entry, error) {
	if err := checkKey(agentID, key); err != nil {
		return nil, err
	}
	now := m.cfg.Now()
	_, stored, err := m.st.Commit(agentID, key, Commit{
		Entries: entries,
		Update: func(e *Entry) error {
			if e.SessionID == "" {
				return ErrNotFound
			}
			e.Messages += countMessages(entries)
			e.UpdatedAt = now
			return nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("append to %s: %w", key, err)
	}
	return stored, nil
}

func countMessages(entries []transcript.Entry) int {
	n := 0
	for _, e := range entries {
		if e.Type == transcript.EntryMessage {
			n++
		}
	}
	return n
}

// EndTurn finishes the open turn in one transaction: it appends msgs (the
// turn's final reply, or its error entry), clears OpenTurn, adds usage to
// the counters, records the context size and the model that answered, and
// records the outcome in the inbound message's dedup record. Writing the
// reply here rather than on its own is what makes "a reply without its end
// marker" impossible after a crash (docs/design.md §4). The outcome is
// OutcomeFailed when the last message stopped on an error or an abort,
// else OutcomeReply.
func (m *Manager) EndTurn(agentID string, key engine.SessionKey, usage engine.Usage, contextTokens int, model string, msgs ...engine.Message) error {
	return m.EndTurnWith(agentID, key, usage, contextTokens, model, nil, msgs...)
}

// EndTurnWith is EndTurn that also writes records (the reply's outbox
// items) in the same transaction: a reply is never committed without its
// delivery queued, nor queued without being committed.
func (m *Manager) EndTurnWith(agentID string, key engine.SessionKey, usage engine.Usage, contextTokens int, model string, records []Record, msgs ...engine.Message) error {
	if err := checkKey(agentID, key); err != nil {
		return err
	}
	now := m.cfg.Now()
	entries := make([]transcript.Entry, len(msgs))
	for i, msg := range msgs {
		entries[i] = messageEntry(msg, now)
	}
	outcome := OutcomeReply
	if n := len(msgs); n > 0 && (msgs[n-1].StopReason == engine.StopError || msgs[n-1].StopReason == engine.StopAborted) {
		outcome = OutcomeFailed
	}
	_, _, err := m.st.Commit(agentID, key, Commit{
		Entries: entries,
		Outcome: outcome,
		Records: records,
		Update: func(e *Entry) error {
			if e.SessionID == "" {
				return ErrNotFound
			}
			e.OpenTurn, e.OpenTurnDedup = "", ""
			e.InputTokens += usage.Input
			e.OutputTokens += usage.Output
			total := usage.TotalTokens
			if total == 0 {
				total = usage.Input + usage.Output + usage.CacheRead + usage.CacheWrite
			}
			e.TotalTokens += total
			e.ContextTokens = contextTokens
			if model != "" {
				e.LastModel = model
			}
			e.Messages += len(msgs)
			e.UpdatedAt = now
			return nil
		},
	})
	if err != nil {
		return fmt.Errorf("end turn in %s: %w", key, err)
	}
	return nil
}

// Reset starts a new session id for key now (its transcript header
// written), keeping toggles and overrides.
func (m *Manager) Reset(agentID string, key engine.SessionKey, meta Meta) (Entry, error) {
	if err := checkKey(agentID, key); err != nil {
		return Entry{}, err
	}
	now := m.cfg.Now()
	e, _, err := m.st.Commit(agentID, key, Commit{
		Header: transcript.Header{Cwd: meta.Workspace},
		Update: func(e *Entry) error {
			renew(e, now)
			// The user's explicit fresh start also drops the session's
			// /model and /think choices (daily and idle resets keep them).
			e.ModelOverride, e.ProviderOverride, e.AuthProfileOverride, e.ThinkingLevel = "", "", "", ""
			applyMeta(e, meta)
			return nil
		},
	})
	if err != nil {
		return Entry{}, fmt.Errorf("reset %s: %w", key, err)
	}
	return e, nil
}

// Update changes the entry at key with fn in one transaction, creating the
// entry (and an empty transcript) if there is none. UpdatedAt is left as fn
// leaves it, so toggling /think does not postpone a reset.
func (m *Manager) Update(agentID string, key engine.SessionKey, fn func(*Entry) error) (Entry, error) {
	if err := checkKey(agentID, key); err != nil {
		return Entry{}, err
	}
	now := m.cfg.Now()
	e, _, err := m.st.Commit(agentID, key, Commit{
		Update: func(e *Entry) error {
			if e.SessionID == "" {
				renew(e, now)
			}
			return fn(e)
		},
	})
	if err != nil {
		return Entry{}, fmt.Errorf("update %s: %w", key, err)
	}
	return e, nil
}

// Delete removes the session at key, its entry and its current
// transcript, in one transaction, and returns the entry as it was: an
// error wrapping ErrNotFound when there is none. The caller keeps turns of
// key from running meanwhile (the gateway holds the session's lane).
func (m *Manager) Delete(agentID string, key engine.SessionKey) (Entry, error) {
	if err := checkKey(agentID, key); err != nil {
		return Entry{}, err
	}
	e, err := m.st.DeleteSession(agentID, key)
	if err != nil {
		return Entry{}, fmt.Errorf("delete %s: %w", key, err)
	}
	return e, nil
}

// Get returns the entry at key.
func (m *Manager) Get(agentID string, key engine.SessionKey) (Entry, bool, error) {
	return m.st.Session(agentID, key)
}

// List returns an agent's entries ("" = every agent), most recent first.
func (m *Manager) List(agentID string) ([]Keyed, error) {
	return m.st.Sessions(agentID)
}

// History returns the current transcript of key.
func (m *Manager) History(agentID string, key engine.SessionKey) (transcript.Header, []transcript.Entry, error) {
	e, ok, err := m.st.Session(agentID, key)
	if err != nil {
		return transcript.Header{}, nil, err
	}
	if !ok {
		return transcript.Header{}, nil, fmt.Errorf("history of %s: %w", key, ErrNotFound)
	}
	return m.st.Transcript(e.SessionID)
}

// Interrupted returns every entry whose turn is still open: after a crash,
// the turns to resume or close.
func (m *Manager) Interrupted() ([]Keyed, error) {
	all, err := m.st.Sessions("")
	if err != nil {
		return nil, err
	}
	var open []Keyed
	for _, k := range all {
		if k.Entry.OpenTurn != "" {
			open = append(open, k)
		}
	}
	return open, nil
}

// errNoOpenTurn aborts a commit that has nothing to do.
var errNoOpenTurn = errors.New("no open turn")

// CloseInterrupted closes an open turn with a visible error: an assistant
// message whose stop reason is error and whose text is note. A key without
// an open turn is left alone.
func (m *Manager) CloseInterrupted(agentID string, key engine.SessionKey, note string) error {
	if err := checkKey(agentID, key); err != nil {
		return err
	}
	now := m.cfg.Now()
	msg := engine.Message{
		Role:         engine.RoleAssistant,
		Content:      []engine.Block{engine.TextBlock(note)},
		StopReason:   engine.StopError,
		ErrorMessage: note,
		Timestamp:    now.UnixMilli(),
	}
	_, _, err := m.st.Commit(agentID, key, Commit{
		Entries: []transcript.Entry{messageEntry(msg, now)},
		Outcome: OutcomeInterrupted,
		Update: func(e *Entry) error {
			if e.SessionID == "" {
				return ErrNotFound
			}
			if e.OpenTurn == "" {
				return errNoOpenTurn
			}
			e.OpenTurn, e.OpenTurnDedup = "", ""
			e.Messages++
			e.UpdatedAt = now
			return nil
		},
	})
	if errors.Is(err, errNoOpenTurn) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("close interrupted turn in %s: %w", key, err)
	}
	return nil
}

// ErrNoDedupStore is returned by Outcome over a store that keeps no dedup
// records.
var ErrNoDedupStore = errors.New("the session store keeps no dedup records")

// TurnOutcome is what became of the turn a dedup key started.
type TurnOutcome struct {
	AgentID   string
	Key       engine.SessionKey
	SessionID string
	InboundID string
	// State is OutcomeOpen, OutcomeReply, OutcomeFailed,
	// OutcomeInterrupted or OutcomeUnknown.
	State string
	// Answer is the entry that ended the turn (reply, error entry or
	// interrupted-turn note); nil while open or when unknown.
	Answer *engine.Message
}

// Outcome looks up the turn that dedupKey started, durably: the dedup
// record names the session, the inbound entry and (once the turn ended) the
// answering entry, which is read from the transcript. It reports false when
// the key was never committed.
func (m *Manager) Outcome(dedupKey string) (TurnOutcome, bool, error) {
	ds, ok := m.st.(DedupStore)
	if !ok {
		return TurnOutcome{}, false, ErrNoDedupStore
	}
	rec, found, err := ds.Dedup(dedupKey)
	if err != nil || !found {
		return TurnOutcome{}, found, err
	}
	out := TurnOutcome{AgentID: rec.AgentID, Key: rec.Key, SessionID: rec.SessionID, InboundID: rec.EntryID, State: rec.Outcome}
	if rec.Outcome == "" {
		out.State = OutcomeUnknown
		if rec.AgentID != "" && rec.Key != "" {
			e, ok, err := m.st.Session(rec.AgentID, rec.Key)
			if err != nil {
				return TurnOutcome{}, false, fmt.Errorf("outcome of %s: %w", dedupKey, err)
			}
			if ok && e.SessionID == rec.SessionID && e.OpenTurn == rec.EntryID {
				out.State = OutcomeOpen
			}
		}
		return out, true, nil
	}
	if rec.AnswerID == "" {
		return out, true, nil
	}
	var answer *engine.Message
	find := func(_ transcript.Header, entries []transcript.Entry) error {
		// The answer is recent: search from the end.
		for i := len(entries) - 1; i >= 0; i-- {
			if entries[i].ID == rec.AnswerID {
				if msg := entries[i].Message; msg != nil {
					c := *msg
					c.Content = append([]engine.Block(nil), msg.Content...)
					answer = &c
				}
				return nil
			}
		}
		return nil
	}
	if v, ok := m.st.(TranscriptViewer); ok {
		err = v.ViewTranscript(rec.SessionID, find)
	} else {
		var (
			h       transcript.Header
			entries []transcript.Entry
		)
		if h, entries, err = m.st.Transcript(rec.SessionID); err == nil {
			err = find(h, entries)
		}
	}
	if errors.Is(err, ErrNotFound) {
		// The session was deleted since: its state is known, its answer
		// is gone.
		err = nil
	}
	if err != nil {
		return TurnOutcome{}, false, fmt.Errorf("outcome of %s: %w", dedupKey, err)
	}
	out.Answer = answer
	return out, true, nil
}

func checkKey(agentID string, key engine.SessionKey) error {
	if agentID == "" {
		return errors.New("session: empty agent id")
	}
	return key.Valid()
}

// Transcript returns the stored transcript with session id id, whether a
// key points at it or not (one that /new or an import replaced):
// ErrNotFound when there is none.
func (m *Manager) Transcript(id string) (transcript.Header, []transcript.Entry, error) {
	h, entries, err := m.st.Transcript(id)
	if err != nil {
		return h, nil, fmt.Errorf("transcript %s: %w", id, err)
	}
	return h, entries, nil
}

// ContextItems returns the model context of key's current session with the
// transcript entry id of each message (compaction names its first kept
// entry by it). Empty for a key without a session.
func (m *Manager) ContextItems(agentID string, key engine.SessionKey) ([]transcript.ContextItem, error) {
	e, ok, err := m.Get(agentID, key)
	if err != nil || !ok {
		return nil, err
	}
	var items []transcript.ContextItem
	build := func(_ transcript.Header, entries []transcript.Entry) error {
		items = transcript.ContextItems(entries)
		return nil
	}
	if v, ok := m.st.(TranscriptViewer); ok {
		err = v.ViewTranscript(e.SessionID, build)
	} else {
		var (
			h       transcript.Header
			entries []transcript.Entry
		)
		if h, entries, err = m.st.Transcript(e.SessionID); err == nil {
			err = build(h, entries)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read transcript of %s: %w", key, err)
	}
	return items, nil
}

// Compacted records a compaction in one transaction: the compaction entry
// (summary, firstKeptEntryId, tokensBefore, with details such as the
// trigger in data) is appended to the current transcript and the entry's
// CompactionCount is raised; ContextTokens becomes tokensAfter. The next
// context is the summary plus the entries from firstKeptID on
// (transcript.Context).
func (m *Manager) Compacted(agentID string, key engine.SessionKey, summary, firstKeptID string, tokensBefore, tokensAfter int, details json.RawMessage) (transcript.Entry, error) {
	if err := checkKey(agentID, key); err != nil {
		return transcript.Entry{}, err
	}
	now := m.cfg.Now()
	entry := transcript.Entry{Type: transcript.EntryCompaction, Timestamp: transcript.Timestamp(now), Summary: summary, FirstKeptEntryID: firstKeptID, TokensBefore: tokensBefore, Details: details}
	_, stored, err := m.st.Commit(agentID, key, Commit{
		Entries: []transcript.Entry{entry},
		Update: func(e *Entry) error {
			if e.SessionID == "" {
				return ErrNotFound
			}
			e.CompactionCount++
			e.ContextTokens = tokensAfter
			e.UpdatedAt = now
			return nil
		},
	})
	if err != nil {
		return transcript.Entry{}, fmt.Errorf("record compaction of %s: %w", key, err)
	}
	return stored[0], nil
}

// MemoryFlushed records that the pre-compaction memory flush ran in the
// current compaction cycle (memoryFlushAt, memoryFlushCompactionCount), and
// appends entries (the flush's own record, a custom entry outside the
// model context) in the same transaction.
func (m *Manager) MemoryFlushed(agentID string, key engine.SessionKey, entries ...transcript.Entry) error {
	if err := checkKey(agentID, key); err != nil {
		return err
	}
	now := m.cfg.Now()
	_, _, err := m.st.Commit(agentID, key, Commit{
		Entries: entries,
		Update: func(e *Entry) error {
			if e.SessionID == "" {
				return ErrNotFound
			}
			e.MemoryFlushAt = now
			e.MemoryFlushCompactionCount = e.CompactionCount
			e.UpdatedAt = now
			return nil
		},
	})
	if err != nil {
		return fmt.Errorf("record memory flush of %s: %w", key, err)
	}
	return nil
}
