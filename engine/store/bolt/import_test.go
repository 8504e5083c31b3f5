package bolt

import (
	"testing"

	"go.etcd.io/bbolt"

	"github.com/openclaw-edge/edge/engine/session"
	"github.com/openclaw-edge/edge/engine/transcript"
)

func stagedCount(t *testing.T, db *DB) int {
	t.Helper()
	n := 0
	_ = db.db.View(func(tx *bbolt.Tx) error {
		if root := tx.Bucket(bucketImports); root != nil {
			return root.ForEachBucket(func([]byte) error { n++; return nil })
		}
		return nil
	})
	return n
}

func TestStagedImport(t *testing.T) {
	db, _ := openTemp(t)
	const agent, key = "main", "agent:main:imp"
	h := transcript.Header{Type: "session", Version: 3, ID: "imp-1"}
	a := userEntry("a")
	a.ID = "a"
	b := userEntry("b")
	b.ID, b.ParentID = "b", "a"

	// A failed import leaves nothing behind, and nothing is visible while
	// it runs.
	s, err := db.BeginImport(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append([]transcript.Entry{a}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.Transcript("imp-1"); err == nil {
		t.Error("staged transcript visible before Publish")
	}
	orphan := userEntry("c")
	orphan.ID, orphan.ParentID = "c", "nope"
	if err := s.Append([]transcript.Entry{orphan}); err == nil {
		t.Error("entry with an unknown parent staged")
	}
	if err := s.Discard(); err != nil {
		t.Fatal(err)
	}
	if n := stagedCount(t, db); n != 0 {
		t.Errorf("%d staged imports after Discard", n)
	}

	// A good import, in two transactions.
	s, err = db.BeginImport(h)
	if err != nil || s.SessionID() != "imp-1" {
		t.Fatalf("BeginImport = %v, %v", s, err)
	}
	for _, e := range []transcript.Entry{a, b} {
		if err := s.Append([]transcript.Entry{e}); err != nil {
			t.Fatal(err)
		}
	}
	e, err := s.Publish(agent, key, func(old session.Entry) session.Entry { old.Messages = 2; return old })
	if err != nil || e.SessionID != "imp-1" {
		t.Fatalf("Publish = %+v, %v", e, err)
	}
	if err := s.Discard(); err != nil {
		t.Errorf("Discard after Publish: %v", err)
	}
	got, entries, err := db.Transcript("imp-1")
	if err != nil || got.ID != "imp-1" || len(entries) != 2 || entries[0].ParentID != "" || entries[1].ParentID != "a" {
		t.Fatalf("Transcript = %+v, %+v, %v", got, entries, err)
	}
	if se, ok, _ := db.Session(agent, key); !ok || se.SessionID != "imp-1" || se.Messages != 2 {
		t.Errorf("session entry = %+v", se)
	}
	// The transcript keeps growing normally.
	if _, _, err := db.Commit(agent, key, session.Commit{Entries: []transcript.Entry{userEntry("more")}}); err != nil {
		t.Fatal(err)
	}
	if _, entries, _ := db.Transcript("imp-1"); len(entries) != 3 || entries[2].ParentID != "b" {
		t.Errorf("after a commit: %+v", entries)
	}

	// The same id again: a fresh one.
	s2, err := db.BeginImport(h)
	if err != nil || s2.SessionID() == "imp-1" || transcript.ValidSessionID(s2.SessionID()) != nil {
		t.Fatalf("second BeginImport = %v, %v", s2.SessionID(), err)
	}
	// A staged id is taken too.
	s3, err := db.BeginImport(transcript.Header{Version: 3, ID: s2.SessionID()})
	if err != nil || s3.SessionID() == s2.SessionID() {
		t.Fatalf("third BeginImport = %v, %v", s3.SessionID(), err)
	}

	// Imports staged by a process that is gone are swept.
	_ = db.db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketImports).Bucket([]byte(s2.SessionID())).Put(keyImportOwner, []byte("dead"))
	})
	if _, err := db.BeginImport(transcript.Header{Version: 3, ID: "other"}); err != nil {
		t.Fatal(err)
	}
	if n := stagedCount(t, db); n != 2 { // s3 and "other"
		t.Errorf("%d staged imports after the sweep, want 2", n)
	}
	if _, err := db.BeginImport(transcript.Header{ID: "bad/id"}); err == nil {
		t.Error("invalid session id staged")
	}
}
