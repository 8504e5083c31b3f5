package failover_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/store/bolt"
	"github.com/openclaw-edge/edge/models/failover"
)

// model is a candidate that always fails with err, or answers when err is
// nil, counting its calls.
type model struct {
	err   error
	calls int
}

func (m *model) Stream(_ context.Context, _ *engine.ChatRequest, emit func(engine.Event)) error {
	m.calls++
	if m.err != nil {
		return m.err
	}
	emit(engine.Event{Type: engine.EventTextDelta, Text: "hi"})
	emit(engine.Event{Type: engine.EventMessageEnd, StopReason: engine.StopEnd})
	return nil
}

// boltStore is the gateway's adapter: the cooldowns bucket of the state file.
func boltStore(db *bolt.DB) failover.Store {
	return failover.JSONStore(
		func(key string, v any) (bool, error) { return db.GetJSON(bolt.BucketCooldowns, key, v) },
		func(key string, v any) error { return db.PutJSON(bolt.BucketCooldowns, key, v) },
	)
}

// TestCooldownsSurviveRestart: a billing cooldown written through the bbolt
// state file is still in force after the file is closed and opened again
// (a gateway restart), and the strikes keep doubling.
func TestCooldownsSurviveRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	now := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	billing := &engine.ModelError{Kind: engine.ErrBilling, Provider: "openai", Status: 402, Message: "insufficient quota"}

	chain := func(db *bolt.DB, remote, local *model) *failover.Chain {
		return failover.New(failover.Config{Now: clock, Store: boltStore(db)}, []failover.Candidate{
			{Ref: "openai/gpt-4o-mini", Provider: "openai", Profile: "work", Model: remote, ModelID: "gpt-4o-mini"},
			{Ref: "local/qwen3-1.7b", Provider: "local", Model: local, ModelID: "qwen3-1.7b"},
		}, nil)
	}

	db, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	remote, local := &model{err: billing}, &model{}
	if err := chain(db, remote, local).Stream(context.Background(), &engine.ChatRequest{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now = now.Add(23 * time.Hour)
	remote, local = &model{err: billing}, &model{}
	c := chain(db, remote, local)
	if err := c.Stream(context.Background(), &engine.ChatRequest{}, nil); err != nil {
		t.Fatal(err)
	}
	if remote.calls != 0 || local.calls != 1 || c.Answered() != "local/qwen3-1.7b" {
		t.Errorf("after a restart: remote called %d times, local %d, answered %q; want the cooldown kept", remote.calls, local.calls, c.Answered())
	}
	st, err := c.States()
	if err != nil || st[0].Reason != engine.ErrBilling || !st[0].Until.Equal(now.Add(time.Hour)) || st[0].BillingStrikes != 1 {
		t.Errorf("state after restart = %+v, %v", st, err)
	}

	// The cooldown ends; the second billing failure doubles it.
	now = now.Add(time.Hour)
	if err := c.Stream(context.Background(), &engine.ChatRequest{}, nil); err != nil {
		t.Fatal(err)
	}
	var cd failover.Cooldown
	if ok, err := db.GetJSON(bolt.BucketCooldowns, "profile:openai@work", &cd); !ok || err != nil ||
		cd.BillingStrikes != 2 || !cd.Until.Equal(now.Add(48*time.Hour)) || cd.Reason != engine.ErrBilling {
		t.Errorf("stored cooldown = %+v, %v, %v", cd, ok, err)
	}
}

// TestCooldownUpdateIsOneTransaction: read-modify-writes of one cooldown
// through the bbolt store never lose each other's failures, as separate
// get and put transactions could (two chains sharing the state file).
func TestCooldownUpdateIsOneTransaction(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := failover.JSONUpdateStore(
		func(key string, v any) (bool, error) { return db.GetJSON(bolt.BucketCooldowns, key, v) },
		func(key string, v any) error { return db.PutJSON(bolt.BucketCooldowns, key, v) },
		func(key string, v any, fn func(bool) (bool, error)) error {
			return db.Update(bolt.BucketCooldowns, key, v, fn)
		})
	u, ok := st.(failover.Updater)
	if !ok {
		t.Fatal("JSONUpdateStore is no Updater")
	}
	const n = 40
	now := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			err := u.UpdateCooldown("model:openai/gpt-4o-mini", func(c *failover.Cooldown) bool {
				c.Failures = append(c.Failures, now.Add(time.Duration(i)*time.Second))
				return true
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	c, _, err := st.Cooldown("model:openai/gpt-4o-mini")
	if err != nil || len(c.Failures) != n {
		t.Errorf("%d failures recorded, want %d (%v)", len(c.Failures), n, err)
	}
}
