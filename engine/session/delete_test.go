package session_test

import (
	"errors"
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/session"
)

// Delete removes the entry (overrides and all) and its current transcript,
// leaves other sessions alone, and frees the key for a fresh session; a
// retried message of the deleted session is still recognised.
func TestDelete(t *testing.T) {
	stores(t, func(t *testing.T, st session.Store) {
		m, _ := newManager(st, session.Config{})
		const other = engine.SessionKey("agent:main:other")
		first, err := m.BeginTurn(agent, key, session.Meta{Channel: "cli"}, "cli:1", engine.UserText("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if err := m.EndTurn(agent, key, engine.Usage{}, 0, "", engine.Message{Role: engine.RoleAssistant, Content: []engine.Block{engine.TextBlock("hello")}}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Update(agent, key, func(e *session.Entry) error { e.ModelOverride = "ollama/small"; return nil }); err != nil {
			t.Fatal(err)
		}
		kept, err := m.BeginTurn(agent, other, session.Meta{}, "", engine.UserText("elsewhere"))
		if err != nil {
			t.Fatal(err)
		}

		e, err := m.Delete(agent, key)
		if err != nil {
			t.Fatal(err)
		}
		if e.SessionID != first.SessionID || e.Messages != 2 || e.ModelOverride != "ollama/small" || e.Channel != "cli" {
			t.Errorf("deleted entry = %+v; want the entry as it was", e)
		}
		if _, ok, err := m.Get(agent, key); ok || err != nil {
			t.Errorf("Get after delete: %v %v", ok, err)
		}
		if _, _, err := m.History(agent, key); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("History after delete: %v", err)
		}
		if _, _, err := m.Transcript(first.SessionID); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("transcript after delete: %v", err)
		}
		if list, err := m.List(agent); err != nil || len(list) != 1 || list[0].Key != other {
			t.Errorf("List after delete = %+v, %v", list, err)
		}
		if _, entries, err := m.History(agent, other); err != nil || len(entries) != 1 || entries[0].ID != kept.InboundID {
			t.Errorf("the other session: %+v %v", entries, err)
		}

		if _, err := m.Delete(agent, key); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("second delete: %v", err)
		}
		if _, err := m.Delete(agent, "not a key"); err == nil || errors.Is(err, session.ErrNotFound) {
			t.Errorf("bad key: %v", err)
		}
		if _, err := m.Delete("", key); err == nil {
			t.Error("empty agent accepted")
		}

		if _, ok := st.(session.DedupStore); ok {
			out, found, err := m.Outcome("cli:1")
			if err != nil || !found || out.State != session.OutcomeReply || out.Answer != nil {
				t.Errorf("Outcome of a deleted session's message = %+v %v %v", out, found, err)
			}
		}
		if _, err := m.BeginTurn(agent, key, session.Meta{}, "cli:1", engine.UserText("hi")); !errors.Is(err, session.ErrDuplicate) {
			t.Errorf("retry after delete: %v; want ErrDuplicate", err)
		}

		next, err := m.BeginTurn(agent, key, session.Meta{}, "", engine.UserText("again"))
		if err != nil {
			t.Fatal(err)
		}
		if !next.NewSession || next.SessionID == first.SessionID || next.Entry.ModelOverride != "" || next.Entry.Messages != 1 {
			t.Errorf("turn after delete = %+v", next)
		}
	})
}
