package schedule

import (
	"strings"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	l, err := time.LoadLocation(name)
	if err != nil {
		t.Skipf("no zone data for %s: %v", name, err)
	}
	return l
}

// TestNextAcrossDST: cron expressions across the spring and autumn changes
// of two zones whose rules differ (New York changes at 02:00 local, Berlin
// at 01:00 UTC). Each row walks a chain of runs: a wall time in the spring
// gap runs once, just after it; one in the repeated autumn hour runs once,
// at its first occurrence.
func TestNextAcrossDST(t *testing.T) {
	ny, berlin := mustZone(t, "America/New_York"), mustZone(t, "Europe/Berlin")
	tests := []struct {
		name string
		expr string
		loc  *time.Location
		from string   // RFC 3339
		want []string // the next runs, in order, RFC 3339 with offsets
	}{
		{"NY spring gap runs once after it", "30 2 * * *", ny, "2026-03-07T03:00:00-05:00",
			[]string{"2026-03-08T03:30:00-04:00", "2026-03-09T02:30:00-04:00"}},
		{"NY autumn repeat runs once", "30 1 * * *", ny, "2026-10-31T02:00:00-04:00",
			[]string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
		{"NY autumn from inside the second 01:xx", "30 1 * * *", ny, "2026-11-01T01:10:00-05:00",
			[]string{"2026-11-02T01:30:00-05:00"}},
		{"NY hourly over the autumn change", "0 * * * *", ny, "2026-11-01T00:30:00-04:00",
			[]string{"2026-11-01T01:00:00-04:00", "2026-11-01T02:00:00-05:00", "2026-11-01T03:00:00-05:00"}},
		{"NY hourly over the spring change", "0 * * * *", ny, "2026-03-08T00:30:00-05:00",
			[]string{"2026-03-08T01:00:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T04:00:00-04:00"}},
		{"Berlin spring gap runs once after it", "30 2 * * *", berlin, "2026-03-28T03:00:00+01:00",
			[]string{"2026-03-29T03:30:00+02:00", "2026-03-30T02:30:00+02:00"}},
		{"Berlin autumn repeat runs once", "30 2 * * *", berlin, "2026-10-24T03:00:00+02:00",
			[]string{"2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"}},
		{"Berlin 07:00 daily keeps its wall time", "0 7 * * *", berlin, "2026-03-28T08:00:00+01:00",
			[]string{"2026-03-29T07:00:00+02:00", "2026-03-30T07:00:00+02:00"}},
		{"six fields, seconds first", "*/20 * * * * *", time.UTC, "2026-01-01T00:00:05Z",
			[]string{"2026-01-01T00:00:20Z", "2026-01-01T00:00:40Z", "2026-01-01T00:01:00Z"}},
		{"weekday mornings", "0 7 * * 1-5", berlin, "2026-11-27T08:00:00+01:00", // a Friday
			[]string{"2026-11-30T07:00:00+01:00"}},
		{"descriptor", "@daily", time.UTC, "2026-01-01T12:00:00Z", []string{"2026-01-02T00:00:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from, _ := time.Parse(time.RFC3339, tt.from)
			sp, err := Parse(api.CronSchedule{Kind: api.ScheduleCron, Expr: tt.expr}, tt.loc, from)
			if err != nil {
				t.Fatal(err)
			}
			at := from
			for i, w := range tt.want {
				at = sp.Next(at)
				if got := at.Format(time.RFC3339); got != w {
					t.Fatalf("run %d = %s, want %s", i+1, got, w)
				}
			}
		})
	}
}

func TestNextEveryAndAt(t *testing.T) {
	base := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	sp, err := Parse(api.CronSchedule{Kind: api.ScheduleEvery, EveryMs: 30 * 60 * 1000}, nil, base)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ from, want time.Duration }{
		{-time.Hour, 0}, // before the anchor: the anchor
		{0, 30 * time.Minute},
		{29 * time.Minute, 30 * time.Minute},
		{30 * time.Minute, time.Hour},
		{5*time.Hour + time.Second, 5*time.Hour + 30*time.Minute}, // after downtime: the next slot, once
	} {
		if got := sp.Next(base.Add(c.from)); !got.Equal(base.Add(c.want)) {
			t.Errorf("every 30m from %s = %s, want %s", c.from, got.Sub(base), c.want)
		}
	}
	at, err := Parse(api.CronSchedule{Kind: api.ScheduleAt, At: "2026-11-29T09:02:00Z"}, nil, base)
	if err != nil {
		t.Fatal(err)
	}
	if got := at.Next(base); !got.Equal(base.Add(2 * time.Minute)) {
		t.Errorf("at = %s", got)
	}
	if got := at.Next(base.Add(2 * time.Minute)); !got.IsZero() {
		t.Errorf("at after its time = %s, want none", got)
	}
}

func TestParseErrors(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		s    api.CronSchedule
		want string
	}{
		{api.CronSchedule{}, "schedule.kind: required"},
		{api.CronSchedule{Kind: "hourly"}, `"hourly" is not at, every or cron`},
		{api.CronSchedule{Kind: api.ScheduleAt}, "schedule.at: a time is required"},
		{api.CronSchedule{Kind: api.ScheduleAt, At: "tomorrow 9am"}, "not an RFC 3339 time"},
		{api.CronSchedule{Kind: api.ScheduleEvery, EveryMs: 1000}, "shorter than the minimum"},
		{api.CronSchedule{Kind: api.ScheduleCron, Expr: "61 * * * *"}, "schedule.expr"},
		{api.CronSchedule{Kind: api.ScheduleCron, Expr: "* * *"}, "5 fields"},
		{api.CronSchedule{Kind: api.ScheduleCron, Expr: "0 7 * * *", TZ: "Mars/Olympus"}, "not an IANA time zone"},
		{api.CronSchedule{Kind: api.ScheduleCron, Expr: "0 7 * * *", TZ: "Local"}, "not an IANA time zone"},
		{api.CronSchedule{Kind: api.ScheduleCron, Expr: "CRON_TZ=UTC 0 7 * * *"}, "schedule.tz"},
		{api.CronSchedule{Kind: api.ScheduleCron, Expr: "@every 5m"}, "kind every"},
		{api.CronSchedule{Kind: api.ScheduleCron, Expr: "0 0 30 2 *"}, "never matches"},
	} {
		_, err := Parse(c.s, time.UTC, now)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%+v) = %v, want an error with %q", c.s, err, c.want)
		}
	}
}
