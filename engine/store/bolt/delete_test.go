package bolt

import (
	"errors"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/session"
	"github.com/openclaw-edge/edge/engine/transcript"
)

// txID is the id of the last committed write transaction.
func txID(t *testing.T, db *DB) int {
	t.Helper()
	var id int
	if err := db.db.View(func(tx *bbolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		t.Fatal(err)
	}
	return id
}

// DeleteSession removes the entry and its current transcript in one write
// transaction, drops the cached transcript, and leaves every other session,
// transcript and agent alone.
func TestDeleteSession(t *testing.T) {
	db, _ := openTemp(t)
	other := engine.SessionKey("agent:main:other")
	work := engine.SessionKey("agent:work:main")
	for _, c := range []struct {
		agent string
		key   engine.SessionKey
		id    string
	}{{agent, key, "s1"}, {agent, other, "s2"}, {"work", work, "w1"}} {
		if _, _, err := db.Commit(c.agent, c.key, session.Commit{Update: setSession(c.id), Entries: []transcript.Entry{userEntry("a"), userEntry("b")}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := db.Transcript("s1"); err != nil { // cached now
		t.Fatal(err)
	}

	before := txID(t, db)
	e, err := db.DeleteSession(agent, key)
	if err != nil {
		t.Fatal(err)
	}
	if got := txID(t, db) - before; got != 1 {
		t.Errorf("delete took %d write transactions; want 1", got)
	}
	if e.SessionID != "s1" {
		t.Errorf("returned entry = %+v; want the one deleted (s1)", e)
	}
	if _, ok, err := db.Session(agent, key); ok || err != nil {
		t.Errorf("entry still there: %v %v", ok, err)
	}
	if _, _, err := db.Transcript("s1"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("transcript s1 after delete: %v", err)
	}
	db.cache.mu.Lock()
	_, cached := db.cache.items["s1"]
	db.cache.mu.Unlock()
	if cached {
		t.Error("the deleted transcript is still cached")
	}
	for _, c := range []struct {
		agent string
		key   engine.SessionKey
		id    string
	}{{agent, other, "s2"}, {"work", work, "w1"}} {
		if e, ok, err := db.Session(c.agent, c.key); !ok || err != nil || e.SessionID != c.id {
			t.Errorf("%s: %+v %v %v", c.key, e, ok, err)
		}
		if _, entries, err := db.Transcript(c.id); err != nil || len(entries) != 2 {
			t.Errorf("transcript %s: %d entries, %v", c.id, len(entries), err)
		}
	}
	if n, err := db.Stats(); err != nil || n != 2 {
		t.Errorf("Stats = %d, %v; want 2 sessions", n, err)
	}

	// The key is free again: a new session starts under it.
	if _, _, err := db.Commit(agent, key, session.Commit{Update: setSession("s3"), Entries: []transcript.Entry{userEntry("again")}}); err != nil {
		t.Fatal(err)
	}
	if _, entries, err := db.Transcript("s3"); err != nil || len(entries) != 1 || entries[0].ParentID != "" {
		t.Errorf("new session after delete: %+v %v", entries, err)
	}
}

func TestDeleteSessionNotFound(t *testing.T) {
	db, _ := openTemp(t)
	if _, _, err := db.Commit(agent, key, session.Commit{Update: setSession("s1")}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		agent string
		key   engine.SessionKey
	}{
		{"unknown key", agent, "agent:main:nope"},
		{"unknown agent", "ghost", key},
		{"another agent's key", "work", key},
		{"empty agent", "", key},
		{"empty key", agent, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := txID(t, db)
			if _, err := db.DeleteSession(tt.agent, tt.key); !errors.Is(err, session.ErrNotFound) {
				t.Errorf("err = %v; want ErrNotFound", err)
			}
			if txID(t, db) != before {
				t.Error("a failed delete committed")
			}
		})
	}
	if _, ok, _ := db.Session(agent, key); !ok {
		t.Error("a failed delete removed the session")
	}
	if _, err := db.DeleteSession(agent, key); err != nil {
		t.Fatal(err)
	}
	if _, err := db.DeleteSession(agent, key); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
}

// Transcripts the key pointed at before (a reset replaced them) are not
// linked to it and stay; an entry whose transcript is gone already is
// deleted all the same.
func TestDeleteSessionLeavesEarlierTranscripts(t *testing.T) {
	db, _ := openTemp(t)
	if _, _, err := db.Commit(agent, key, session.Commit{Update: setSession("old"), Entries: []transcript.Entry{userEntry("a")}}); err != nil {
		t.Fatal(err)
	}
	reset := func(e *session.Entry) error { e.SessionID = "new"; return nil }
	if _, _, err := db.Commit(agent, key, session.Commit{Update: reset}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.DeleteSession(agent, key); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.Transcript("new"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("current transcript: %v", err)
	}
	if _, entries, err := db.Transcript("old"); err != nil || len(entries) != 1 {
		t.Errorf("earlier transcript: %d entries, %v", len(entries), err)
	}

	if _, _, err := db.Commit(agent, key, session.Commit{Update: setSession("gone")}); err != nil {
		t.Fatal(err)
	}
	if err := db.db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketTranscripts).DeleteBucket([]byte("gone")) }); err != nil {
		t.Fatal(err)
	}
	if e, err := db.DeleteSession(agent, key); err != nil || e.SessionID != "gone" {
		t.Errorf("entry without its transcript: %+v %v", e, err)
	}
	if _, ok, _ := db.Session(agent, key); ok {
		t.Error("entry still there")
	}
}
