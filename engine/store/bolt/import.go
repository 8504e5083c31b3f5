package bolt

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/session"
	"github.com/openclaw-edge/edge/engine/transcript"
)

// Streaming import (session.Importer). A transcript being imported is
// staged in imports/<sessionId>, a bucket laid out like a transcript's,
// across as many transactions as its size needs; the last transaction moves
// it to transcripts/<sessionId> and points the session key at it, so a
// reader never sees half an import. A staged bucket carries the token of the
// process that staged it: the file lock means one process at a time, so a
// bucket with another token was left by a gateway that died mid-import and
// is swept by the next BeginImport.

var (
	_ session.Importer = (*DB)(nil)

	bucketImports  = []byte("imports")
	keyImportOwner = []byte("importOwner")
)

// processToken identifies this process's staged imports.
var processToken = func() []byte {
	var b [8]byte
	rand.Read(b[:])
	return []byte(hex.EncodeToString(b[:]))
}()

// BeginImport stages a transcript with header h under h.ID, or under a
// fresh session id when a transcript (staged or not) already has h.ID.
func (db *DB) BeginImport(h transcript.Header) (session.Staged, error) {
	if err := transcript.ValidSessionID(h.ID); err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	now := db.now()
	id := h.ID
	err := db.db.Update(func(tx *bbolt.Tx) error {
		root, err := tx.CreateBucketIfNotExists(bucketImports)
		if err != nil {
			return err
		}
		if err := sweepImports(root); err != nil {
			return fmt.Errorf("sweep imports left by an earlier run: %w", err)
		}
		transcripts := tx.Bucket(bucketTranscripts)
		for transcripts.Bucket([]byte(id)) != nil || root.Bucket([]byte(id)) != nil {
			id = transcript.NewSessionID()
		}
		b, err := root.CreateBucket([]byte(id))
		if err != nil {
			return fmt.Errorf("create staging bucket %s: %w", id, err)
		}
		h.Type, h.ID = "session", id
		if h.Timestamp == "" {
			h.Timestamp = transcript.Timestamp(now)
		}
		if err := putHeader(b, h); err != nil {
			return err
		}
		if _, err := b.CreateBucket(bucketIDs); err != nil {
			return err
		}
		return b.Put(keyImportOwner, processToken)
	})
	if err != nil {
		return nil, fmt.Errorf("begin import of %s: %w", h.ID, err)
	}
	return &staged{db: db, id: id}, nil
}

// sweepImports deletes the staged imports of processes that are gone.
func sweepImports(root *bbolt.Bucket) error {
	var stale [][]byte
	err := root.ForEachBucket(func(k []byte) error {
		if string(root.Bucket(k).Get(keyImportOwner)) != string(processToken) {
			stale = append(stale, append([]byte(nil), k...))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range stale {
		if err := root.DeleteBucket(k); err != nil {
			return err
		}
	}
	return nil
}

// staged is one import in progress (session.Staged).
type staged struct {
	db *DB
	id string
}

func (s *staged) SessionID() string { return s.id }

// bucket returns the staging bucket, an error if it is gone.
func (s *staged) bucket(tx *bbolt.Tx) (*bbolt.Bucket, error) {
	root := tx.Bucket(bucketImports)
	if root == nil || root.Bucket([]byte(s.id)) == nil {
		return nil, fmt.Errorf("staged import %s is gone", s.id)
	}
	return root.Bucket([]byte(s.id)), nil
}

// Append stores entries in one transaction; null parents stay null.
func (s *staged) Append(entries []transcript.Entry) error {
	err := s.db.db.Update(func(tx *bbolt.Tx) error {
		b, err := s.bucket(tx)
		if err != nil {
			return err
		}
		_, err = appendEntries(b, entries, true)
		return err
	})
	if err != nil {
		return fmt.Errorf("stage entries of %s: %w", s.id, err)
	}
	return nil
}

// Publish moves the staged transcript into place and points key at it with
// the entry fn makes from the old one, in one transaction.
func (s *staged) Publish(agentID string, key engine.SessionKey, fn func(old session.Entry) session.Entry) (session.Entry, error) {
	if agentID == "" || key == "" {
		return session.Entry{}, errors.New("import: empty agent id or session key")
	}
	var saved session.Entry
	err := s.db.db.Update(func(tx *bbolt.Tx) error {
		b, err := s.bucket(tx)
		if err != nil {
			return err
		}
		if err := b.Delete(keyImportOwner); err != nil {
			return err
		}
		if err := tx.MoveBucket([]byte(s.id), tx.Bucket(bucketImports), tx.Bucket(bucketTranscripts)); err != nil {
			if errors.Is(err, bolterrors.ErrBucketExists) {
				return fmt.Errorf("session id %s was taken while importing; import again", s.id)
			}
			return fmt.Errorf("publish transcript %s: %w", s.id, err)
		}
		sb, err := tx.Bucket(bucketSessions).CreateBucketIfNotExists([]byte(agentID))
		if err != nil {
			return err
		}
		var old session.Entry
		if v := sb.Get([]byte(key)); v != nil {
			if err := json.Unmarshal(v, &old); err != nil {
				return fmt.Errorf("read session entry: %w", err)
			}
		}
		e := fn(old)
		e.SessionID = s.id
		v, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("encode session entry: %w", err)
		}
		if err := sb.Put([]byte(key), v); err != nil {
			return err
		}
		saved = e
		return nil
	})
	if err != nil {
		return session.Entry{}, fmt.Errorf("import transcript into %s/%s: %w", agentID, key, err)
	}
	s.db.cache.drop(s.id)
	return saved, nil
}

// Discard deletes the staged transcript, if it is still staged.
func (s *staged) Discard() error {
	err := s.db.db.Update(func(tx *bbolt.Tx) error {
		root := tx.Bucket(bucketImports)
		if root == nil {
			return nil
		}
		err := root.DeleteBucket([]byte(s.id))
		if errors.Is(err, bolterrors.ErrBucketNotFound) {
			return nil // published, or never there
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("discard staged import %s: %w", s.id, err)
	}
	return nil
}
