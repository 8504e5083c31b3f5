package api

import (
	"testing"
	"time"
)

func TestWallTime(t *testing.T) {
	zone := func(name string) *time.Location {
		l, err := time.LoadLocation(name)
		if err != nil {
			t.Skipf("no zone data: %v", err)
		}
		return l
	}
	ny, berlin := zone("America/New_York"), zone("Europe/Berlin")
	for _, c := range []struct {
		wall string
		loc  *time.Location
		want string
	}{
		{"2026-03-08T02:30:00Z", ny, "2026-03-08T03:30:00-04:00"},     // spring gap: just after it
		{"2026-11-01T01:30:00Z", ny, "2026-11-01T01:30:00-04:00"},     // autumn repeat: the first
		{"2026-03-29T02:30:00Z", berlin, "2026-03-29T03:30:00+02:00"}, // spring gap
		{"2026-10-25T02:30:00Z", berlin, "2026-10-25T02:30:00+02:00"}, // autumn repeat: the first
		{"2026-07-01T09:00:00Z", berlin, "2026-07-01T09:00:00+02:00"},
	} {
		w, _ := time.Parse(time.RFC3339, c.wall)
		if got := WallTime(w, c.loc).Format(time.RFC3339); got != c.want {
			t.Errorf("WallTime(%s, %s) = %s, want %s", c.wall, c.loc, got, c.want)
		}
	}
}
