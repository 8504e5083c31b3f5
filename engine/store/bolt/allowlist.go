package bolt

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"go.etcd.io/bbolt"
)

// The exec allowlist (docs/design.md §3.7): the commands the owner approved for
// good, per agent.
//
//	allowlist/<agentId>         sha256(match key) → AllowEntry (JSON)
//
// The bucket is created by the first Add, not by Open, so an old database
// needs no migration. Keys are a hash of the entry's match fields because a
// command can be longer than a bbolt key; the stored entry is compared in
// full on every lookup all the same.
var bucketAllowlist = []byte("allowlist")

// AllowEntry is one allowlisted command. It matches exactly — the store
// knows no patterns: Path and the whole Argv when Argv is set (the command
// was one simple command), else the exact Command text. It mirrors
// tool.AllowEntry, which the store may not import (docs/design.md §2); the
// appliance converts.
type AllowEntry struct {
	Path    string    `json:"path,omitempty"`
	Argv    []string  `json:"argv,omitempty"`
	Command string    `json:"command,omitempty"`
	AddedAt time.Time `json:"addedAt"`
}

// same reports whether e and o match the same commands (AddedAt aside).
func (e AllowEntry) same(o AllowEntry) bool {
	if len(e.Argv) > 0 {
		return e.Path == o.Path && slices.Equal(e.Argv, o.Argv)
	}
	return len(o.Argv) == 0 && e.Command == o.Command
}

// key is the bucket key of e: a hash of its match fields only, so adding
// the same command twice finds the first entry.
func (e AllowEntry) key() []byte {
	var m any
	if len(e.Argv) > 0 {
		m = struct {
			Path string   `json:"p"`
			Argv []string `json:"a"`
		}{e.Path, e.Argv}
	} else {
		m = struct {
			Command string `json:"c"`
		}{e.Command}
	}
	data, _ := json.Marshal(m) // strings only
	sum := sha256.Sum256(data)
	return sum[:]
}

func checkAllowEntry(agentID string, e AllowEntry) error {
	switch {
	case agentID == "":
		return errors.New("agent id is empty")
	case len(e.Argv) == 0 && e.Command == "":
		return errors.New("the entry has neither argv nor a command")
	case len(e.Argv) > 0 && e.Argv[0] == "":
		return errors.New("argv[0] is empty")
	case e.Path != "" && !filepath.IsAbs(e.Path):
		return fmt.Errorf("path %q is not absolute", e.Path)
	case len(e.Argv) == 0 && e.Path != "":
		return errors.New("a path needs the argv it was resolved from")
	}
	return nil
}

// AllowlistHas reports whether agentID's allowlist holds an entry matching
// e exactly.
func (db *DB) AllowlistHas(agentID string, e AllowEntry) (bool, error) {
	if err := checkAllowEntry(agentID, e); err != nil {
		return false, fmt.Errorf("check allowlist of %s: %w", agentID, err)
	}
	var found bool
	err := db.db.View(func(tx *bbolt.Tx) error {
		b := allowBucket(tx, agentID)
		if b == nil {
			return nil
		}
		v := b.Get(e.key())
		if v == nil {
			return nil
		}
		var stored AllowEntry
		if err := json.Unmarshal(v, &stored); err != nil {
			return err
		}
		found = stored.same(e)
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("check allowlist of %s: %w", agentID, err)
	}
	return found, nil
}

// AllowlistAdd adds e to agentID's allowlist. Adding an entry that is
// already there keeps the first one (and its AddedAt). A zero AddedAt is
// set to now.
func (db *DB) AllowlistAdd(agentID string, e AllowEntry) error {
	if err := checkAllowEntry(agentID, e); err != nil {
		return fmt.Errorf("add to allowlist of %s: %w", agentID, err)
	}
	if e.AddedAt.IsZero() {
		e.AddedAt = db.now().UTC()
	}
	if len(e.Argv) > 0 {
		e.Command = "" // the argv is the match key; a stale text would only mislead
	}
	data, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("add to allowlist of %s: %w", agentID, err)
	}
	err = db.db.Update(func(tx *bbolt.Tx) error {
		root, err := tx.CreateBucketIfNotExists(bucketAllowlist)
		if err != nil {
			return err
		}
		b, err := root.CreateBucketIfNotExists([]byte(agentID))
		if err != nil {
			return err
		}
		k := e.key()
		if b.Get(k) != nil {
			return nil
		}
		return b.Put(k, data)
	})
	if err != nil {
		return fmt.Errorf("add to allowlist of %s: %w", agentID, err)
	}
	return nil
}

// AllowlistRemove removes the entry matching e exactly from agentID's
// allowlist and returns it; false when there was none.
func (db *DB) AllowlistRemove(agentID string, e AllowEntry) (AllowEntry, bool, error) {
	if err := checkAllowEntry(agentID, e); err != nil {
		return AllowEntry{}, false, fmt.Errorf("remove from allowlist of %s: %w", agentID, err)
	}
	var (
		removed AllowEntry
		found   bool
	)
	err := db.db.Update(func(tx *bbolt.Tx) error {
		b := allowBucket(tx, agentID)
		if b == nil {
			return nil
		}
		k := e.key()
		v := b.Get(k)
		if v == nil {
			return nil
		}
		if err := json.Unmarshal(v, &removed); err != nil {
			return err
		}
		if !removed.same(e) {
			return nil
		}
		found = true
		return b.Delete(k)
	})
	if err != nil {
		return AllowEntry{}, false, fmt.Errorf("remove from allowlist of %s: %w", agentID, err)
	}
	if !found {
		return AllowEntry{}, false, nil
	}
	return removed, true, nil
}

// AllowlistList returns agentID's allowlist, oldest first.
func (db *DB) AllowlistList(agentID string) ([]AllowEntry, error) {
	if agentID == "" {
		return nil, errors.New("list allowlist: agent id is empty")
	}
	var list []AllowEntry
	err := db.db.View(func(tx *bbolt.Tx) error {
		b := allowBucket(tx, agentID)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var e AllowEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("entry %x: %w", k, err)
			}
			list = append(list, e)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list allowlist of %s: %w", agentID, err)
	}
	// Keys are hashes: sort by age so the list reads in the order the owner
	// built it; ties (same instant) by key, which is stable.
	slices.SortStableFunc(list, func(x, y AllowEntry) int {
		if c := x.AddedAt.Compare(y.AddedAt); c != 0 {
			return c
		}
		return bytes.Compare(x.key(), y.key())
	})
	return list, nil
}

func allowBucket(tx *bbolt.Tx, agentID string) *bbolt.Bucket {
	root := tx.Bucket(bucketAllowlist)
	if root == nil {
		return nil
	}
	return root.Bucket([]byte(agentID))
}
