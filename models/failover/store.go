package failover

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/openclaw-edge/edge/engine"
)

// MemoryStore keeps cooldowns in memory: for tests, and for gateways
// without a state file. Share one between chains to share cooldowns.
type MemoryStore struct {
	mu sync.Mutex
	m  map[string]Cooldown
}

var (
	_ Store   = (*MemoryStore)(nil)
	_ Updater = (*MemoryStore)(nil)
)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{m: map[string]Cooldown{}} }

// Cooldown returns a copy of the record at key.
func (s *MemoryStore) Cooldown(key string) (Cooldown, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.m[key]
	c.Failures = slices.Clone(c.Failures)
	return c, ok, nil
}

// PutCooldown stores a copy of c at key.
func (s *MemoryStore) PutCooldown(key string, c Cooldown) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.Failures = slices.Clone(c.Failures)
	s.m[key] = c
	return nil
}

// UpdateCooldown applies fn to a copy of the record at key under the
// store's lock and stores it when fn reports true.
func (s *MemoryStore) UpdateCooldown(key string, fn func(*Cooldown) bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.m[key]
	c.Failures = slices.Clone(c.Failures)
	if fn(&c) {
		s.m[key] = c
	}
	return nil
}

// JSONStore adapts a store of JSON records (the gateway's bbolt file:
// bolt.DB.GetJSON and PutJSON on bolt.BucketCooldowns) to Store.
func JSONStore(get func(key string, v any) (bool, error), put func(key string, v any) error) Store {
	return jsonStore{get: get, put: put}
}

// JSONUpdateStore is JSONStore plus a transactional read-modify-write
// (bolt.DB.Update on bolt.BucketCooldowns): update must decode the record
// at key into v, call fn and store v when fn reports true, atomically. The
// result implements Updater, so two gateways' chains (or two chains of one
// gateway) sharing the file cannot lose each other's failures.
func JSONUpdateStore(get func(key string, v any) (bool, error), put func(key string, v any) error,
	update func(key string, v any, fn func(found bool) (bool, error)) error) Store {
	return jsonUpdateStore{jsonStore{get: get, put: put}, update}
}

type jsonStore struct {
	get func(key string, v any) (bool, error)
	put func(key string, v any) error
}

type jsonUpdateStore struct {
	jsonStore
	update func(key string, v any, fn func(found bool) (bool, error)) error
}

func (s jsonUpdateStore) UpdateCooldown(key string, fn func(*Cooldown) bool) error {
	var c Cooldown
	err := s.update(key, &c, func(bool) (bool, error) { return fn(&c), nil })
	if err != nil {
		return fmt.Errorf("cooldown %s: %w", key, err)
	}
	return nil
}

func (s jsonStore) Cooldown(key string) (Cooldown, bool, error) {
	var c Cooldown
	ok, err := s.get(key, &c)
	if err != nil {
		return Cooldown{}, false, fmt.Errorf("cooldown %s: %w", key, err)
	}
	return c, ok, nil
}

func (s jsonStore) PutCooldown(key string, c Cooldown) error {
	if err := s.put(key, c); err != nil {
		return fmt.Errorf("cooldown %s: %w", key, err)
	}
	return nil
}

// State is what a status display shows of one candidate.
type State struct {
	Label string // "ref" or "ref@profile"
	// Until is when its cooldown ends (zero: usable now), Reason why.
	Until  time.Time
	Reason engine.ErrorKind
	// Failures counts its recent failures (within the failure window).
	Failures int
	// BillingStrikes counts consecutive billing failures of its profile.
	BillingStrikes int
}

// States returns the state of every candidate, in chain order.
func (c *Chain) States() ([]State, error) {
	now := c.cfg.Now()
	out := make([]State, 0, len(c.chain))
	for _, cand := range c.chain {
		st := State{Label: cand.Label()}
		cd, err := c.cooling(cand)
		if err != nil {
			return nil, fmt.Errorf("failover state of %s: %w", st.Label, err)
		}
		st.Until, st.Reason = cd.Until, cd.Reason
		pk, _, err := c.cfg.Store.Cooldown(cand.profileKey())
		if err != nil {
			return nil, fmt.Errorf("failover state of %s: %w", st.Label, err)
		}
		mk, _, err := c.cfg.Store.Cooldown(cand.modelKey())
		if err != nil {
			return nil, fmt.Errorf("failover state of %s: %w", st.Label, err)
		}
		st.BillingStrikes = pk.BillingStrikes
		st.Failures = len(recent(mk.Failures, now.Add(-c.cfg.FailureWindow)))
		out = append(out, st)
	}
	return out, nil
}
