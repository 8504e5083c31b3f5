package bolt

import (
	"sync"
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/session"
)

// The dedup record of an inbound message learns, in the transaction that
// ends the turn, how the turn ended and which entry answered; the reply and
// the end marker are one commit.
func TestTurnOutcomeRecorded(t *testing.T) {
	answer := func(text string, stop engine.StopReason) engine.Message {
		return engine.Message{Role: engine.RoleAssistant, Content: []engine.Block{engine.TextBlock(text)}, StopReason: stop}
	}
	tests := []struct {
		name      string
		end       func(m *session.Manager, key engine.SessionKey) error
		wantState string
		wantText  string
	}{
		{"reply", func(m *session.Manager, key engine.SessionKey) error {
			return m.EndTurn(agent, key, engine.Usage{}, 0, "local/x", answer("the reply", engine.StopEnd))
		}, session.OutcomeReply, "the reply"},
		{"failed", func(m *session.Manager, key engine.SessionKey) error {
			return m.EndTurn(agent, key, engine.Usage{}, 0, "", answer("⚠️ model down", engine.StopError))
		}, session.OutcomeFailed, "⚠️ model down"},
		{"interrupted", func(m *session.Manager, key engine.SessionKey) error {
			return m.CloseInterrupted(agent, key, "cut by a crash")
		}, session.OutcomeInterrupted, "cut by a crash"},
		{"open", func(*session.Manager, engine.SessionKey) error { return nil }, session.OutcomeOpen, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, path := openTemp(t)
			m := session.NewManager(db, session.Config{DailyResetHour: new(-1)})
			key := engine.AgentSessionKey(agent, "main")
			turn, err := m.BeginTurn(agent, key, session.Meta{}, "cli-idem:k1", engine.UserText("q"))
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.end(m, key); err != nil {
				t.Fatal(err)
			}
			// Durable: read it back from a reopened file.
			db.Close()
			db2, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db2.Close()
			m = session.NewManager(db2, session.Config{DailyResetHour: new(-1)})
			out, found, err := m.Outcome("cli-idem:k1")
			if err != nil || !found {
				t.Fatalf("outcome: %v, %v", found, err)
			}
			if out.State != tt.wantState || out.InboundID != turn.InboundID || out.SessionID != turn.SessionID || out.Key != key {
				t.Errorf("outcome = %+v", out)
			}
			got := ""
			if out.Answer != nil {
				got = out.Answer.Text()
			}
			if got != tt.wantText {
				t.Errorf("answer %q, want %q", got, tt.wantText)
			}
			e, _, _ := m.Get(agent, key)
			if tt.wantState != session.OutcomeOpen && (e.OpenTurn != "" || e.OpenTurnDedup != "") {
				t.Errorf("turn still open: %+v", e)
			}
			if errs := db2.Check(); len(errs) > 0 {
				t.Errorf("bolt check: %v", errs)
			}
		})
	}
	db, _ := openTemp(t)
	m := session.NewManager(db, session.Config{})
	if _, found, err := m.Outcome("cli-idem:never"); found || err != nil {
		t.Errorf("unknown key: %v, %v", found, err)
	}
}

// Update is one read-modify-write transaction: concurrent increments of one
// record lose nothing (GetJSON then PutJSON would).
func TestUpdateIsAtomic(t *testing.T) {
	db, _ := openTemp(t)
	const n = 50
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			var r record
			err := db.Update(BucketCooldowns, "k", &r, func(bool) (bool, error) {
				r.Strikes++
				return true, nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	var r record
	if _, err := db.GetJSON(BucketCooldowns, "k", &r); err != nil || r.Strikes != n {
		t.Errorf("strikes %d, want %d (%v)", r.Strikes, n, err)
	}
	// fn declining writes nothing; bad buckets are refused.
	var r2 record
	if err := db.Update(BucketCooldowns, "other", &r2, func(found bool) (bool, error) { return false, nil }); err != nil {
		t.Fatal(err)
	}
	if ok, _ := db.GetJSON(BucketCooldowns, "other", &r2); ok {
		t.Error("declined update wrote a record")
	}
	if err := db.Update("sessions", "k", &r2, func(bool) (bool, error) { return true, nil }); err == nil {
		t.Error("update of the session bucket accepted")
	}
}
