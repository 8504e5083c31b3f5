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

// TestParseAtAndDuration: the tool's times as a person (or a model) types
// them; a local time in the spring gap is the instant after it.
func TestParseAtAndDuration(t *testing.T) {
	ny := mustZone(t, "America/New_York")
	now := time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct{ in, want string }{
		{"2026-03-08 02:30", "2026-03-08T03:30:00-04:00"},
		{"2026-03-08T09:00", "2026-03-08T09:00:00-04:00"},
		{"2026-12-01T09:00:00+01:00", "2026-12-01T09:00:00+01:00"},
		{"09:00", "2026-03-07T09:00:00-05:00"}, // it is 07:00 there: today
		{"6am", "2026-03-08T06:00:00-04:00"},   // passed: tomorrow
	} {
		got, err := ParseAt(c.in, now, ny)
		if err != nil || got.Format(time.RFC3339) != c.want {
			t.Errorf("ParseAt(%q) = %s, %v; want %s", c.in, got.Format(time.RFC3339), err, c.want)
		}
	}
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"20m", 20 * time.Minute, true},
		{"in 20 minutes", 20 * time.Minute, true},
		{"+2h", 2 * time.Hour, true},
		{"1.5h", 90 * time.Minute, true},
		{"1d", 24 * time.Hour, true},
		{"2 hours and 30 minutes", 150 * time.Minute, true},
		{"0m", 0, false},
		{"0.0001s", 0, false},
		{"-5m", 0, false},
		{"90", 0, false},
		{"9999999999999h 9999999999999h 1h", 0, false},
		{"soon", 0, false},
	} {
		got, err := ParseDuration(c.in)
		if (err == nil) != c.ok || c.ok && got != c.want {
			t.Errorf("ParseDuration(%q) = %s, %v; want %s ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
}
