// Package bolt is the gateway's state database: one bbolt file holding
// session entries, transcripts and the inbound dedup set, and implementing
// session.Store. Other state (outbox, cooldowns, pairing) can live in the
// same file through Bolt().
//
// Layout (bucket names are the contract; values are JSON):
//
//	sessions/<agentId>          sessionKey → session.Entry
//	transcripts/<sessionId>     "header" → transcript.Header
//	                            8-byte big-endian sequence → transcript.Entry
//	                            "leaf" → id of the last appended entry
//	                            "ids"/  entry id → sequence (uniqueness, parents)
//	dedup                       dedup key → 8-byte big-endian Unix ms, then
//	                            session.DedupRecord as JSON (which turn the
//	                            message started, and how it ended)
//
// Every Commit is one bbolt read-write transaction (two fsyncs), whatever
// the number of entries: a transaction per entry costs far more on an SD card
// (docs/design.md §12).
//
// Choices made where the spec was silent: dedup keys older than 7 days are
// pruned at most once an hour, inside a Commit that writes anyway; old
// transcripts stay when a session key moves to a new session id (only
// DeleteSession, which drops a session and its current transcript, and
// DeleteTranscript, the scheduler's retention, delete any); a committed entry's explicit ParentID must name an entry of
// its transcript.
package bolt

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/session"
	"github.com/openclaw-edge/edge/engine/transcript"
)

var (
	_ session.Store            = (*DB)(nil)
	_ session.TranscriptViewer = (*DB)(nil)
	_ session.DedupStore       = (*DB)(nil)
)

// Bucket and key names.
var (
	bucketSessions    = []byte("sessions")
	bucketTranscripts = []byte("transcripts")
	bucketDedup       = []byte("dedup")
	keyHeader         = []byte("header")
	keyLeaf           = []byte("leaf")
	bucketIDs         = []byte("ids")
)

const (
	dedupTTL        = 7 * 24 * time.Hour
	dedupPruneEvery = time.Hour
)

// Options configures Open.
type Options struct {
	// Timeout is how long to wait for the file lock; 0 means 1 s.
	Timeout time.Duration
	// CacheBytes bounds the cache of decoded transcripts, counted in stored
	// bytes; 0 means 4 MiB, negative disables the cache.
	CacheBytes int
}

const defaultCacheBytes = 4 << 20

// DB is an open state database.
type DB struct {
	db   *bbolt.DB
	path string

	mu        sync.Mutex
	lastPrune time.Time
	now       func() time.Time

	cache *cache

	// degraded says why the database is open read-only ("" = writable).
	degraded string
}

// Open opens (creating if needed) the state database at path. The parent
// directory is created 0700 and the file 0600. A database held by another
// process is an error naming it.
//
// An existing database that cannot be opened for writing (a read-only file
// system or file) is opened read-only instead, so the gateway can still
// start, answer status and show history; Degraded says why, and every
// write fails. Opening writes nothing when the buckets exist already, so a
// full disk does not keep the database from opening either.
func Open(path string, opts Options) (*DB, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = time.Second
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("state database: %w", err)
	}
	degraded := ""
	bdb, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: opts.Timeout})
	if err != nil && !errors.Is(err, bolterrors.ErrTimeout) && readOnlyErr(err) {
		ro, roErr := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: opts.Timeout, ReadOnly: true})
		if roErr == nil {
			bdb, degraded = ro, fmt.Sprintf("the state database %s is read-only (%v): nothing can be recorded; make it writable and restart the gateway", path, err)
			err = nil
		}
	}
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("state database %s is in use by another process (is another gateway running?)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("open state database %s: %w", path, err)
	}
	if err := ensureBuckets(bdb); err != nil {
		bdb.Close()
		return nil, fmt.Errorf("open state database %s: %w", path, err)
	}
	if opts.CacheBytes == 0 {
		opts.CacheBytes = defaultCacheBytes
	}
	return &DB{db: bdb, path: path, now: time.Now, cache: newCache(opts.CacheBytes), degraded: degraded}, nil
}

// ensureBuckets creates the store's buckets; it writes only when one is
// missing (a new file), so opening works on a full disk and read-only.
func ensureBuckets(bdb *bbolt.DB) error {
	names := [][]byte{bucketSessions, bucketTranscripts, bucketDedup}
	missing := false
	if err := bdb.View(func(tx *bbolt.Tx) error {
		for _, name := range names {
			if tx.Bucket(name) == nil {
				missing = true
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if !missing {
		return nil
	}
	return bdb.Update(func(tx *bbolt.Tx) error {
		for _, name := range names {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		return nil
	})
}

// readOnlyErr reports whether err means the file may be read but not
// written.
func readOnlyErr(err error) bool {
	return errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)
}

// Degraded says why the database is open read-only; "" when it is
// writable.
func (db *DB) Degraded() string { return db.degraded }

// Check runs bbolt's consistency check over the whole file and returns the
// problems it found (none for a sound file).
func (db *DB) Check() []error {
	var errs []error
	_ = db.db.View(func(tx *bbolt.Tx) error {
		for err := range tx.Check() {
			errs = append(errs, err)
		}
		return nil
	})
	return errs
}

// Close closes the database.
func (db *DB) Close() error {
	if err := db.db.Close(); err != nil {
		return fmt.Errorf("close state database %s: %w", db.path, err)
	}
	return nil
}

// Bolt returns the underlying bbolt database, for buckets of other packages.
func (db *DB) Bolt() *bbolt.DB { return db.db }

// Path returns the database file's path.
func (db *DB) Path() string { return db.path }

// Stats returns the number of session entries across agents.
func (db *DB) Stats() (sessions int, err error) {
	err = db.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketSessions).ForEachBucket(func(agent []byte) error {
			sessions += tx.Bucket(bucketSessions).Bucket(agent).Stats().KeyN
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("state database stats: %w", err)
	}
	return sessions, nil
}

// Session returns the entry at key.
func (db *DB) Session(agentID string, key engine.SessionKey) (session.Entry, bool, error) {
	var (
		e     session.Entry
		found bool
	)
	err := db.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketSessions).Bucket([]byte(agentID))
		if b == nil || agentID == "" || key == "" {
			return nil
		}
		v := b.Get([]byte(key))
		if v == nil {
			return nil
		}
		found = true
		return json.Unmarshal(v, &e)
	})
	if err != nil {
		return session.Entry{}, false, fmt.Errorf("read session %s/%s: %w", agentID, key, err)
	}
	return e, found, nil
}

// Sessions lists the entries of agentID ("" = every agent), most recently
// updated first.
func (db *DB) Sessions(agentID string) ([]session.Keyed, error) {
	var out []session.Keyed
	err := db.db.View(func(tx *bbolt.Tx) error {
		root := tx.Bucket(bucketSessions)
		each := func(agent []byte) error {
			return root.Bucket(agent).ForEach(func(k, v []byte) error {
				var e session.Entry
				if err := json.Unmarshal(v, &e); err != nil {
					return fmt.Errorf("session %s/%s: %w", agent, k, err)
				}
				out = append(out, session.Keyed{AgentID: string(agent), Key: engine.SessionKey(k), Entry: e})
				return nil
			})
		}
		if agentID != "" {
			if root.Bucket([]byte(agentID)) == nil {
				return nil
			}
			return each([]byte(agentID))
		}
		return root.ForEachBucket(each)
	})
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	slices.SortStableFunc(out, func(a, b session.Keyed) int {
		return b.Entry.UpdatedAt.Compare(a.Entry.UpdatedAt)
	})
	return out, nil
}

// Commit applies c to the entry at key in one transaction; see
// session.Store.
func (db *DB) Commit(agentID string, key engine.SessionKey, c session.Commit) (session.Entry, []transcript.Entry, error) {
	if agentID == "" || key == "" {
		return session.Entry{}, nil, errors.New("commit: empty agent id or session key")
	}
	now := db.now()
	prune := db.shouldPrune(now)
	var (
		saved  session.Entry
		stored []transcript.Entry
	)
	err := db.db.Update(func(tx *bbolt.Tx) error {
		d := tx.Bucket(bucketDedup)
		if c.DedupKey != "" && d.Get([]byte(c.DedupKey)) != nil {
			return session.ErrDuplicate
		}
		sb, err := tx.Bucket(bucketSessions).CreateBucketIfNotExists([]byte(agentID))
		if err != nil {
			return err
		}
		var e session.Entry
		if v := sb.Get([]byte(key)); v != nil {
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("read session entry: %w", err)
			}
		}
		openDedup := e.OpenTurnDedup // the record that learns c.Outcome
		if c.Update != nil {
			if err := c.Update(&e); err != nil {
				return err
			}
		}
		if e.SessionID == "" {
			return errors.New("session entry has no session id")
		}
		tb, err := openTranscript(tx, e.SessionID, c.Header, now)
		if err != nil {
			return err
		}
		stored, err = appendEntries(tb, c.Entries, false)
		if err != nil {
			return err
		}
		if c.DedupKey != "" {
			rec := session.DedupRecord{AgentID: agentID, Key: key, SessionID: e.SessionID}
			if len(stored) > 0 {
				rec.EntryID = stored[0].ID
			}
			if err := putDedup(d, c.DedupKey, now, rec); err != nil {
				return err
			}
		}
		if c.Outcome != "" && openDedup != "" {
			if err := resolveDedup(d, openDedup, c.Outcome, stored); err != nil {
				return err
			}
		}
		for _, r := range c.Records {
			if r.Value == nil {
				if err := (&Tx{tx}).Delete(r.Bucket, r.Key); err != nil {
					return err
				}
				continue
			}
			if err := putRecord(tx, r.Bucket, r.Key, r.Value); err != nil {
				return err
			}
		}
		v, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("encode session entry: %w", err)
		}
		if err := sb.Put([]byte(key), v); err != nil {
			return err
		}
		saved = e
		if prune {
			return pruneDedup(tx.Bucket(bucketDedup), now)
		}
		return nil
	})
	if err != nil {
		if prune {
			db.mu.Lock()
			db.lastPrune = time.Time{} // try again next time
			db.mu.Unlock()
		}
		return session.Entry{}, nil, fmt.Errorf("commit %s/%s: %w", agentID, key, err)
	}
	return saved, stored, nil
}

// shouldPrune reports whether this commit should prune the dedup bucket,
// and if so records that it did.
func (db *DB) shouldPrune(now time.Time) bool {
	db.mu.Lock()
	defer db.mu.Unlock()
	if now.Sub(db.lastPrune) < dedupPruneEvery {
		return false
	}
	db.lastPrune = now
	return true
}

// pruneDedup deletes dedup keys older than dedupTTL.
func pruneDedup(b *bbolt.Bucket, now time.Time) error {
	cutoff := uint64(now.Add(-dedupTTL).UnixMilli())
	var old [][]byte
	err := b.ForEach(func(k, v []byte) error {
		if len(v) >= 8 && binary.BigEndian.Uint64(v[:8]) < cutoff {
			old = append(old, slices.Clone(k))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range old {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// putDedup writes the dedup record of key: the time it was seen, then rec.
func putDedup(d *bbolt.Bucket, key string, seen time.Time, rec session.DedupRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode dedup record: %w", err)
	}
	return d.Put([]byte(key), append(u64(uint64(seen.UnixMilli())), data...))
}

// resolveDedup records a turn's outcome in the dedup record of key, naming
// the last of stored as the answer. A record that is gone (pruned) is left
// gone: the turn itself is in the transcript either way.
func resolveDedup(d *bbolt.Bucket, key, outcome string, stored []transcript.Entry) error {
	v := d.Get([]byte(key))
	if len(v) < 8 {
		return nil
	}
	seen := time.UnixMilli(int64(binary.BigEndian.Uint64(v[:8])))
	var rec session.DedupRecord
	if len(v) > 8 {
		if err := json.Unmarshal(v[8:], &rec); err != nil {
			return fmt.Errorf("dedup record %s: %w", key, err)
		}
	}
	rec.Outcome = outcome
	if n := len(stored); n > 0 {
		rec.AnswerID = stored[n-1].ID
	}
	return putDedup(d, key, seen, rec)
}

// Dedup returns the dedup record of key (session.DedupStore). A key from
// before records were kept reports found with an empty record.
func (db *DB) Dedup(key string) (session.DedupRecord, bool, error) {
	var (
		rec   session.DedupRecord
		found bool
	)
	err := db.db.View(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketDedup).Get([]byte(key))
		if v == nil {
			return nil
		}
		found = true
		if len(v) > 8 {
			return json.Unmarshal(v[8:], &rec)
		}
		return nil
	})
	if err != nil {
		return session.DedupRecord{}, false, fmt.Errorf("read dedup record %s: %w", key, err)
	}
	return rec, found, nil
}

// openTranscript returns the bucket of sessionID, creating it with a header
// if it does not exist.
func openTranscript(tx *bbolt.Tx, sessionID string, h transcript.Header, now time.Time) (*bbolt.Bucket, error) {
	root := tx.Bucket(bucketTranscripts)
	if b := root.Bucket([]byte(sessionID)); b != nil {
		return b, nil
	}
	b, err := root.CreateBucket([]byte(sessionID))
	if err != nil {
		return nil, fmt.Errorf("create transcript %s: %w", sessionID, err)
	}
	h.Type = "session"
	h.ID = sessionID
	if h.Version == 0 {
		h.Version = transcript.Version
	}
	if h.Timestamp == "" {
		h.Timestamp = transcript.Timestamp(now)
	}
	if err := putHeader(b, h); err != nil {
		return nil, err
	}
	if _, err := b.CreateBucket(bucketIDs); err != nil {
		return nil, err
	}
	return b, nil
}

func putHeader(b *bbolt.Bucket, h transcript.Header) error {
	v, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("encode transcript header: %w", err)
	}
	return b.Put(keyHeader, v)
}

// appendEntries appends entries to the transcript bucket b, filling empty
// ids and (unless keepRoots) empty parent ids, and returns them as stored.
func appendEntries(b *bbolt.Bucket, entries []transcript.Entry, keepRoots bool) ([]transcript.Entry, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	ids := b.Bucket(bucketIDs)
	if ids == nil {
		return nil, errors.New("transcript has no id index")
	}
	leaf := string(b.Get(keyLeaf))
	batch := map[string]bool{}
	has := func(id string) bool { return batch[id] || ids.Get([]byte(id)) != nil }
	out := make([]transcript.Entry, len(entries))
	for i, e := range entries {
		if e.ID == "" {
			for e.ID = transcript.NewID(); has(e.ID); e.ID = transcript.NewID() {
			}
		} else if has(e.ID) {
			return nil, fmt.Errorf("entry %s: %w", e.ID, session.ErrIDInUse)
		}
		if e.ParentID == "" {
			if !keepRoots {
				e.ParentID = leaf
			}
		} else if !has(e.ParentID) {
			return nil, fmt.Errorf("entry %s: parentId %q names no entry of the transcript", e.ID, e.ParentID)
		}
		if err := e.Check(); err != nil {
			return nil, fmt.Errorf("entry %s: %w", e.ID, err)
		}
		v, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("encode entry %s: %w", e.ID, err)
		}
		seq, err := b.NextSequence()
		if err != nil {
			return nil, err
		}
		if err := b.Put(u64(seq), v); err != nil {
			return nil, err
		}
		if err := ids.Put([]byte(e.ID), u64(seq)); err != nil {
			return nil, err
		}
		batch[e.ID] = true
		leaf = e.ID
		out[i] = e
	}
	if err := b.Put(keyLeaf, []byte(leaf)); err != nil {
		return nil, err
	}
	return out, nil
}

// Transcript returns the transcript of sessionID in append order. Decoded
// entries are cached, so a transcript that grew since the last read only
// decodes its new entries; the caller gets its own copy of every message.
func (db *DB) Transcript(sessionID string) (transcript.Header, []transcript.Entry, error) {
	h, entries, shared, err := db.snapshot(sessionID)
	if err != nil {
		return transcript.Header{}, nil, err
	}
	if shared {
		entries = copyEntries(entries)
	}
	return h, entries, nil
}

// ViewTranscript calls fn with the transcript of sessionID without copying
// it (session.TranscriptViewer): fn must neither modify nor retain entries.
// fn runs outside the database transaction.
func (db *DB) ViewTranscript(sessionID string, fn func(transcript.Header, []transcript.Entry) error) error {
	h, entries, _, err := db.snapshot(sessionID)
	if err != nil {
		return err
	}
	return fn(h, entries)
}

// snapshot reads the header and the (cached, possibly shared) entries of
// sessionID.
func (db *DB) snapshot(sessionID string) (h transcript.Header, entries []transcript.Entry, shared bool, err error) {
	err = db.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketTranscripts).Bucket([]byte(sessionID))
		if b == nil || sessionID == "" {
			return session.ErrNotFound
		}
		if err := json.Unmarshal(b.Get(keyHeader), &h); err != nil {
			return fmt.Errorf("header: %w", err)
		}
		var err error
		entries, shared, err = db.cache.snapshot(sessionID, b)
		return err
	})
	if err != nil {
		return transcript.Header{}, nil, false, fmt.Errorf("transcript %s: %w", sessionID, err)
	}
	return h, entries, shared, nil
}

// decodeAfter decodes the entries of b with a sequence above after, and
// returns them with the bytes they took in the store.
func decodeAfter(b *bbolt.Bucket, after uint64) ([]transcript.Entry, int, error) {
	var (
		out  []transcript.Entry
		size int
	)
	c := b.Cursor()
	for k, v := c.Seek(u64(after + 1)); k != nil; k, v = c.Next() {
		if len(k) != 8 || v == nil {
			continue // "header", "leaf", the ids bucket
		}
		var e transcript.Entry
		if err := json.Unmarshal(v, &e); err != nil {
			return nil, 0, fmt.Errorf("entry %d: %w", binary.BigEndian.Uint64(k), err)
		}
		out = append(out, e)
		size += len(v)
	}
	return out, size, nil
}

// ImportTranscript stores a whole transcript under the new session id h.ID
// and points key at it with e (its SessionID set to h.ID), in one
// transaction.
func (db *DB) ImportTranscript(agentID string, key engine.SessionKey, h transcript.Header, entries []transcript.Entry, e session.Entry) error {
	if agentID == "" || key == "" {
		return errors.New("import: empty agent id or session key")
	}
	if h.ID == "" {
		return errors.New("import: transcript header has no session id")
	}
	if err := transcript.CheckAppend(map[string]bool{}, entries...); err != nil {
		return fmt.Errorf("import %s: %w", h.ID, err)
	}
	now := db.now()
	err := db.db.Update(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketTranscripts).Bucket([]byte(h.ID)) != nil {
			return fmt.Errorf("session id %s is already in use", h.ID)
		}
		if h.Type == "" {
			h.Type = "session"
		}
		tb, err := openTranscript(tx, h.ID, h, now)
		if err != nil {
			return err
		}
		// Keep the imported tree as it is: a null parent stays null.
		if _, err := appendEntries(tb, entries, true); err != nil {
			return err
		}
		sb, err := tx.Bucket(bucketSessions).CreateBucketIfNotExists([]byte(agentID))
		if err != nil {
			return err
		}
		e.SessionID = h.ID
		v, err := json.Marshal(e)
		if err != nil {
			return err
		}
		return sb.Put([]byte(key), v)
	})
	if err != nil {
		return fmt.Errorf("import transcript into %s/%s: %w", agentID, key, err)
	}
	db.cache.drop(h.ID)
	return nil
}

func u64(n uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, n)
	return b
}

// DeleteSession removes the session at key of agentID and its current
// transcript in one transaction, and returns the entry as it was:
// session.ErrNotFound when there is none. A current transcript that is
// missing already (a damaged store) does not keep the entry.
//
// Earlier transcripts of the key (those /new, a daily or idle reset or an
// import replaced) stay: nothing links a transcript to a key but the
// entry's current SessionID (their headers name no key), so finding them
// would mean decoding every transcript in the store. The dedup records
// of the session's messages stay too: a retried message is still
// recognised and not run again (session.Manager.Outcome answers it
// without its transcript).
func (db *DB) DeleteSession(agentID string, key engine.SessionKey) (session.Entry, error) {
	var e session.Entry
	err := db.db.Update(func(tx *bbolt.Tx) error {
		sb := tx.Bucket(bucketSessions).Bucket([]byte(agentID))
		var raw []byte
		if sb != nil && agentID != "" && key != "" {
			raw = sb.Get([]byte(key))
		}
		if raw == nil {
			return session.ErrNotFound
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			return fmt.Errorf("read session entry: %w", err)
		}
		if err := sb.Delete([]byte(key)); err != nil {
			return err
		}
		tb := tx.Bucket(bucketTranscripts)
		if e.SessionID == "" || tb.Bucket([]byte(e.SessionID)) == nil {
			return nil
		}
		return tb.DeleteBucket([]byte(e.SessionID))
	})
	if err != nil {
		return session.Entry{}, fmt.Errorf("delete session %s/%s: %w", agentID, key, err)
	}
	db.cache.drop(e.SessionID)
	return e, nil
}

// DeleteTranscript removes the stored transcript sessionID, unless a
// session of agentID under key points at it now (the session's own
// history is never deleted this way). A missing transcript is no error.
// It exists for the scheduler's retention of isolated runs' transcripts
// (cron.sessionRetention): each run resets its session, leaving the last
// run's transcript behind.
func (db *DB) DeleteTranscript(agentID string, key engine.SessionKey, sessionID string) error {
	err := db.db.Update(func(tx *bbolt.Tx) error {
		var raw []byte
		if b := tx.Bucket(bucketSessions).Bucket([]byte(agentID)); b != nil {
			raw = b.Get([]byte(key))
		}
		if raw != nil {
			var e session.Entry
			if err := json.Unmarshal(raw, &e); err != nil {
				return fmt.Errorf("session %s: %w", key, err)
			}
			if e.SessionID == sessionID {
				return fmt.Errorf("transcript %s is the current one of %s", sessionID, key)
			}
		}
		tb := tx.Bucket(bucketTranscripts)
		if tb.Bucket([]byte(sessionID)) == nil {
			return nil
		}
		return tb.DeleteBucket([]byte(sessionID))
	})
	if err != nil {
		return fmt.Errorf("delete transcript %s: %w", sessionID, err)
	}
	db.cache.drop(sessionID)
	return nil
}
