package bolt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"go.etcd.io/bbolt"

	"github.com/openclaw-edge/edge/engine"
)

// Small-record buckets: state of other packages kept as opaque JSON values,
// one key per record, read and written one transaction each. The store does
// not know their types, so it never imports their packages (models/failover
// adapts this to its Store with failover.JSONStore).
//
//	cooldowns                   failover key → failover.Cooldown (JSON)

// BucketCooldowns holds the model failover cooldowns (docs/design.md §4, §7).
const BucketCooldowns = "cooldowns"

// Limits of a small record: bbolt's own key limit, and a value bound that
// keeps these records small (they are read on every model call).
const (
	maxRecordKey   = bbolt.MaxKeySize
	maxRecordValue = 1 << 20
)

// ownBuckets are this package's structured buckets; their values are not
// opaque records and must not be overwritten through PutJSON.
var ownBuckets = []string{string(bucketSessions), string(bucketTranscripts), string(bucketDedup), string(bucketAllowlist), string(bucketImports)}

func checkRecord(bucket, key string) error {
	switch {
	case bucket == "":
		return errors.New("bucket name is empty")
	case slices.Contains(ownBuckets, bucket):
		return fmt.Errorf("bucket %q is the session store's own and holds no JSON records", bucket)
	case key == "":
		return errors.New("key is empty")
	case len(key) > maxRecordKey:
		return fmt.Errorf("key is longer than %d bytes", maxRecordKey)
	}
	return nil
}

// GetJSON decodes the record at bucket/key into v. It reports false, and
// leaves v alone, when there is no such record (or no such bucket).
func (db *DB) GetJSON(bucket, key string, v any) (bool, error) {
	if err := checkRecord(bucket, key); err != nil {
		return false, fmt.Errorf("read %s/%s: %w", bucket, key, err)
	}
	var found bool
	err := db.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		if b == nil {
			return nil
		}
		data := b.Get([]byte(key))
		if data == nil {
			return nil
		}
		found = true
		// data is only valid inside the transaction; Unmarshal copies.
		return json.Unmarshal(data, v)
	})
	if err != nil {
		return false, fmt.Errorf("read %s/%s: %w", bucket, key, err)
	}
	return found, nil
}

// PutJSON stores v as JSON at bucket/key, creating the bucket if needed, in
// one read-write transaction. A value that does not encode, or encodes to
// more than 1 MiB, is refused and nothing is written.
func (db *DB) PutJSON(bucket, key string, v any) error {
	if err := checkRecord(bucket, key); err != nil {
		return fmt.Errorf("write %s/%s: %w", bucket, key, err)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("write %s/%s: %w", bucket, key, err)
	}
	if len(data) > maxRecordValue {
		return fmt.Errorf("write %s/%s: record of %d bytes is larger than %d", bucket, key, len(data), maxRecordValue)
	}
	err = db.db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte(bucket))
		if err != nil {
			return err
		}
		return b.Put([]byte(key), data)
	})
	if err != nil {
		return fmt.Errorf("write %s/%s: %w", bucket, key, err)
	}
	return nil
}

// Update reads the record at bucket/key into v, calls fn (found says
// whether there was one; v is left alone when not) and, when fn reports
// true, stores v — all in one read-write transaction, so two concurrent
// read-modify-writes of one record cannot lose an update. An error from fn
// writes nothing.
func (db *DB) Update(bucket, key string, v any, fn func(found bool) (bool, error)) error {
	if err := checkRecord(bucket, key); err != nil {
		return fmt.Errorf("update %s/%s: %w", bucket, key, err)
	}
	err := db.db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte(bucket))
		if err != nil {
			return err
		}
		found := false
		if data := b.Get([]byte(key)); data != nil {
			found = true
			if err := json.Unmarshal(data, v); err != nil {
				return err
			}
		}
		write, err := fn(found)
		if err != nil || !write {
			return err
		}
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if len(data) > maxRecordValue {
			return fmt.Errorf("record of %d bytes is larger than %d", len(data), maxRecordValue)
		}
		return b.Put([]byte(key), data)
	})
	if err != nil {
		return fmt.Errorf("update %s/%s: %w", bucket, key, err)
	}
	return nil
}

// DeleteJSON removes the record at bucket/key; a missing one is no error.
func (db *DB) DeleteJSON(bucket, key string) error {
	if err := checkRecord(bucket, key); err != nil {
		return fmt.Errorf("delete %s/%s: %w", bucket, key, err)
	}
	err := db.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		if b == nil {
			return nil
		}
		return b.Delete([]byte(key))
	})
	if err != nil {
		return fmt.Errorf("delete %s/%s: %w", bucket, key, err)
	}
	return nil
}

// Tx (an engine.RecordTx) is a transaction over small-record buckets, for read-modify-writes
// that span several records (pairing: count the pending codes, then add
// one; the outbox: claim an item). Its methods are only valid inside the
// function given to UpdateRecords or ViewRecords.
type Tx struct {
	tx *bbolt.Tx
}

// UpdateRecords runs fn in one read-write transaction; an error from fn
// writes nothing.
func (db *DB) UpdateRecords(fn func(engine.RecordTx) error) error {
	return db.db.Update(func(tx *bbolt.Tx) error { return fn(&Tx{tx}) })
}

// ViewRecords runs fn in one read-only transaction.
func (db *DB) ViewRecords(fn func(engine.RecordTx) error) error {
	return db.db.View(func(tx *bbolt.Tx) error { return fn(&Tx{tx}) })
}

// Get decodes bucket/key into v; false when there is none.
func (t *Tx) Get(bucket, key string, v any) (bool, error) {
	if err := checkRecord(bucket, key); err != nil {
		return false, fmt.Errorf("read %s/%s: %w", bucket, key, err)
	}
	b := t.tx.Bucket([]byte(bucket))
	if b == nil {
		return false, nil
	}
	data := b.Get([]byte(key))
	if data == nil {
		return false, nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return true, fmt.Errorf("read %s/%s: %w", bucket, key, err)
	}
	return true, nil
}

// Put stores v as JSON at bucket/key (≤ 1 MiB), creating the bucket.
func (t *Tx) Put(bucket, key string, v any) error {
	if err := checkRecord(bucket, key); err != nil {
		return fmt.Errorf("write %s/%s: %w", bucket, key, err)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("write %s/%s: %w", bucket, key, err)
	}
	return putRecord(t.tx, bucket, key, data)
}

func putRecord(tx *bbolt.Tx, bucket, key string, data []byte) error {
	if err := checkRecord(bucket, key); err != nil {
		return fmt.Errorf("write %s/%s: %w", bucket, key, err)
	}
	if len(data) > maxRecordValue {
		return fmt.Errorf("write %s/%s: record of %d bytes is larger than %d", bucket, key, len(data), maxRecordValue)
	}
	b, err := tx.CreateBucketIfNotExists([]byte(bucket))
	if err != nil {
		return fmt.Errorf("write %s/%s: %w", bucket, key, err)
	}
	return b.Put([]byte(key), data)
}

// Delete removes bucket/key; a missing one is no error.
func (t *Tx) Delete(bucket, key string) error {
	if err := checkRecord(bucket, key); err != nil {
		return fmt.Errorf("delete %s/%s: %w", bucket, key, err)
	}
	b := t.tx.Bucket([]byte(bucket))
	if b == nil {
		return nil
	}
	return b.Delete([]byte(key))
}

// ForEach calls fn for every record of bucket whose key starts with
// prefix, in key order; fn must not keep raw. Writing to the bucket from
// fn is not allowed (bbolt's cursor rule): collect keys, then write.
func (t *Tx) ForEach(bucket, prefix string, fn func(key string, raw []byte) error) error {
	if bucket == "" || slices.Contains(ownBuckets, bucket) {
		return fmt.Errorf("list %s: not a record bucket", bucket)
	}
	b := t.tx.Bucket([]byte(bucket))
	if b == nil {
		return nil
	}
	c := b.Cursor()
	p := []byte(prefix)
	for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
		if err := fn(string(k), v); err != nil {
			return err
		}
	}
	return nil
}
