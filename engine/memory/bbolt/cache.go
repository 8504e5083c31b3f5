// Package bbolt is the memory index's embedding cache in a bbolt file
// (docs/design.md §6): vectors keyed by (provider, model, chunk hash), so a
// reindex — after the index directory was deleted, a fingerprint change
// back to a model used before, or an edit that leaves most chunks as they
// were — embeds only the text it has not seen. It lives outside the index
// directory on purpose: deleting the index must not throw the embeddings
// away.
//
// Choices: one bucket per provider/model; a value is the time it was last
// written (8 bytes, Unix seconds) followed by the float32 vector; when the
// number of entries passes MaxEntries (OpenClaw's default 50,000) the
// oldest tenth is deleted in the same transaction. Writes are batched by
// the caller (every bbolt commit costs two fdatasyncs).
package bbolt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// DefaultMaxEntries is OpenClaw's memorySearch.cache.maxEntries default.
const DefaultMaxEntries = 50000

// Cache is an open embedding cache.
type Cache struct {
	db         *bolt.DB
	maxEntries int
	now        func() time.Time
}

// Open opens (creating) the cache file. A file that is not a bbolt
// database is moved aside (path + ".corrupt") and a new one is made: the
// cache only saves work.
func Open(path string, maxEntries int) (*Cache, error) {
	if maxEntries <= 0 {
		maxEntries = DefaultMaxEntries
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("embedding cache: %w", err)
	}
	opts := &bolt.Options{Timeout: 2 * time.Second}
	db, err := bolt.Open(path, 0o600, opts)
	if err != nil && !os.IsPermission(err) && err != bolt.ErrTimeout {
		_ = os.Rename(path, path+".corrupt")
		db, err = bolt.Open(path, 0o600, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("embedding cache %s: %w", path, err)
	}
	return &Cache{db: db, maxEntries: maxEntries, now: time.Now}, nil
}

// Close closes the file.
func (c *Cache) Close() error { return c.db.Close() }

func bucketName(provider, model string) []byte {
	return []byte(provider + "\x00" + model)
}

// Get returns the cached vectors of the hashes it has.
func (c *Cache) Get(provider, model string, hashes []string) (map[string][]float32, error) {
	out := make(map[string][]float32)
	err := c.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketName(provider, model))
		if b == nil {
			return nil
		}
		for _, h := range hashes {
			if v := b.Get([]byte(h)); len(v) > 8 && (len(v)-8)%4 == 0 {
				out[h] = decode(v[8:])
			}
		}
		return nil
	})
	return out, err
}

// Put stores vectors in one transaction and trims the oldest entries when
// the cache is over its size.
func (c *Cache) Put(provider, model string, vecs map[string][]float32) error {
	if len(vecs) == 0 {
		return nil
	}
	now := uint64(c.now().Unix())
	return c.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketName(provider, model))
		if err != nil {
			return err
		}
		keys := make([]string, 0, len(vecs))
		for k := range vecs {
			keys = append(keys, k)
		}
		slices.Sort(keys) // sequential inserts split fewer pages
		for _, h := range keys {
			v := make([]byte, 8+4*len(vecs[h]))
			binary.LittleEndian.PutUint64(v, now)
			encode(v[8:], vecs[h])
			if err := b.Put([]byte(h), v); err != nil {
				return err
			}
		}
		return c.trim(tx)
	})
}

// Len is the number of cached vectors, all models together.
func (c *Cache) Len() (int, error) {
	n := 0
	err := c.db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(_ []byte, b *bolt.Bucket) error {
			n += b.Stats().KeyN
			return nil
		})
	})
	return n, err
}

// trim deletes the oldest tenth (at least the excess) when over maxEntries.
func (c *Cache) trim(tx *bolt.Tx) error {
	type entry struct {
		bucket, key []byte
		at          uint64
	}
	n := 0
	_ = tx.ForEach(func(_ []byte, b *bolt.Bucket) error {
		n += b.Stats().KeyN
		return nil
	})
	if n <= c.maxEntries {
		return nil
	}
	var all []entry
	_ = tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		return b.ForEach(func(k, v []byte) error {
			if len(v) >= 8 {
				all = append(all, entry{bytes.Clone(name), bytes.Clone(k), binary.LittleEndian.Uint64(v)})
			}
			return nil
		})
	})
	slices.SortFunc(all, func(a, b entry) int { return int(int64(a.at) - int64(b.at)) })
	drop := max(n-c.maxEntries, c.maxEntries/10)
	for _, e := range all[:min(drop, len(all))] {
		if err := tx.Bucket(e.bucket).Delete(e.key); err != nil {
			return err
		}
	}
	return nil
}

func encode(dst []byte, v []float32) {
	for i, x := range v {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(x))
	}
}

func decode(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}
