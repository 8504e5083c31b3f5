package migrate

import (
	"testing"
	"time"
)

// TestMigrateKeepsUpdatedAt: each session is imported with its updatedAt
// where OpenClaw keeps it (the store's, sessions.json's), so it keeps its
// age here.
func TestMigrateKeepsUpdatedAt(t *testing.T) {
	src, gw := newFakeMigration()
	t0 := time.Date(2026, 9, 10, 8, 0, 3, 0, time.UTC)
	for i := range src.sessions {
		src.sessions[i].Updated = t0.Add(time.Duration(i) * time.Hour)
	}
	runMigration(t, src, gw, Options{Apply: true})
	if len(gw.imports) != 3 {
		t.Fatalf("imports = %+v", gw.imports)
	}
	for i, imp := range gw.imports {
		if want := src.sessions[i].Updated; !imp.UpdatedAt.Equal(want) {
			t.Errorf("%s: updatedAt %v, want %v", imp.Key, imp.UpdatedAt, want)
		}
	}
}
