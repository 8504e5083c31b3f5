package session_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/session"
)

// An import keeps the updatedAt it is given (the session's last activity
// where it comes from), so the idle and daily resets see its age; none, or
// one after the import, is the import's time.
func TestImportUpdatedAt(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "transcript", "testdata", "openclaw.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	stores(t, func(t *testing.T, st session.Store) {
		m, clk := newManager(st, session.Config{})
		old := clk.Now().Add(-72 * time.Hour)
		for _, tc := range []struct {
			key           engine.SessionKey
			updated, want time.Time
		}{
			{"agent:main:kept", old, old},
			{"agent:main:none", time.Time{}, clk.Now()},
			{"agent:main:future", clk.Now().Add(time.Hour), clk.Now()},
		} {
			imp, err := m.BeginImport(bytes.NewReader(src))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := imp.Load(); err != nil {
				t.Fatal(err)
			}
			imp.SetUpdatedAt(tc.updated)
			e, err := imp.Publish(agent, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			got, _, _ := m.Get(agent, tc.key)
			if !e.UpdatedAt.Equal(tc.want) || !got.UpdatedAt.Equal(tc.want) {
				t.Errorf("%s: updatedAt %v (stored %v), want %v", tc.key, e.UpdatedAt, got.UpdatedAt, tc.want)
			}
		}
		// Three days idle: the next message starts a new session, as it
		// would have where the session comes from (the daily reset).
		turn, err := m.BeginTurn(agent, "agent:main:kept", session.Meta{}, "", engine.UserText("hello again"))
		if err != nil {
			t.Fatal(err)
		}
		if !turn.NewSession {
			t.Error("a session idle for three days was continued")
		}
	})
}
