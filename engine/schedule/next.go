package schedule

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/openclaw-edge/edge/engine/api"
)

// Spec is a parsed CronSchedule: Next gives its next run strictly after a
// time.
type Spec struct {
	kind  string
	at    time.Time
	every time.Duration
	// anchor is the start of an every schedule.
	anchor time.Time
	cron   cron.Schedule
	loc    *time.Location
}

// cronParser reads 5 fields (minute first) and, with seconds first, 6;
// descriptors (@daily, @every …) too. robfig/cron's own
// ParseStandard takes 5 only.
var cronParser = sync.OnceValue(func() cron.Parser {
	return cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
})

// MinEvery is the shortest interval an every schedule may have: a
// shorter one would keep a small box's model busy all the time.
const MinEvery = 10 * time.Second

// Parse checks s and returns its Spec. def is the zone of a cron
// expression without TZ (the agent's userTimezone); created is the
// anchor of an every schedule without one. The error says which field
// is wrong and why.
func Parse(s api.CronSchedule, def *time.Location, created time.Time) (*Spec, error) {
	if def == nil {
		def = time.Local
	}
	switch s.Kind {
	case api.ScheduleAt:
		if s.At == "" {
			return nil, errors.New("schedule.at: a time is required for kind at (RFC 3339, e.g. 2026-12-01T09:00:00+01:00)")
		}
		t, err := time.Parse(time.RFC3339, s.At)
		if err != nil {
			return nil, fmt.Errorf("schedule.at: %q is not an RFC 3339 time (e.g. 2026-12-01T09:00:00+01:00)", s.At)
		}
		return &Spec{kind: s.Kind, at: t}, nil
	case api.ScheduleEvery:
		d := time.Duration(s.EveryMs) * time.Millisecond
		if d < MinEvery {
			return nil, fmt.Errorf("schedule.everyMs: %d ms is shorter than the minimum, %s", s.EveryMs, MinEvery)
		}
		anchor := created
		if s.AnchorMs > 0 {
			anchor = time.UnixMilli(s.AnchorMs)
		}
		return &Spec{kind: s.Kind, every: d, anchor: anchor}, nil
	case api.ScheduleCron:
		loc := def
		if s.TZ != "" {
			l, err := time.LoadLocation(s.TZ)
			if err != nil || strings.EqualFold(s.TZ, "local") {
				return nil, fmt.Errorf("schedule.tz: %q is not an IANA time zone (e.g. Europe/Berlin, America/New_York, UTC)", s.TZ)
			}
			loc = l
		}
		expr := strings.TrimSpace(s.Expr)
		if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
			return nil, errors.New("schedule.expr: give the zone in schedule.tz (--tz), not in the expression")
		}
		if strings.HasPrefix(expr, "@every") {
			return nil, errors.New("schedule.expr: use kind every (--every) for intervals")
		}
		c, err := cronParser().Parse(expr)
		if err != nil {
			return nil, fmt.Errorf("schedule.expr: %q: %v (5 fields: minute hour day-of-month month day-of-week, e.g. \"0 7 * * *\"; or 6 with seconds first)", s.Expr, err)
		}
		sp := &Spec{kind: s.Kind, cron: c, loc: loc}
		// An expression that never matches (30 February) would never run.
		if sp.Next(created).IsZero() {
			return nil, fmt.Errorf("schedule.expr: %q never matches a date", s.Expr)
		}
		return sp, nil
	case "":
		return nil, errors.New("schedule.kind: required (at, every or cron)")
	}
	return nil, fmt.Errorf("schedule.kind: %q is not at, every or cron", s.Kind)
}

// minGap is the shortest time between the next few runs after t (0 for a
// one-shot): "* * * * * *" runs every second, which no box can afford.
func (sp *Spec) minGap(t time.Time) time.Duration {
	if sp.OneShot() {
		return 0
	}
	var gap time.Duration
	prev := sp.Next(t)
	for range 4 {
		next := sp.Next(prev)
		if prev.IsZero() || next.IsZero() {
			break
		}
		if d := next.Sub(prev); gap == 0 || d < gap {
			gap = d
		}
		prev = next
	}
	return gap
}

// OneShot reports whether the schedule runs once.
func (sp *Spec) OneShot() bool { return sp.kind == api.ScheduleAt }

// Next is the first run strictly after t; zero when there is none (a
// one-shot whose time has passed).
//
// Cron expressions are matched against the wall clock of their zone, then
// mapped to an instant, so a daylight-saving change neither skips nor
// repeats a day's run:
//   - spring forward: a wall time in the gap (02:30 where 02:00 jumps to
//     03:00) runs once, at the instant the gap maps to (03:30);
//   - autumn back: a wall time in the repeated hour (01:30 twice) runs
//     once, at its first occurrence.
//
// robfig/cron's own Next, run in the zone, skips the first and runs the
// second twice; here it runs in UTC, where the wall clock has no gaps.
func (sp *Spec) Next(t time.Time) time.Time {
	switch sp.kind {
	case api.ScheduleAt:
		if sp.at.After(t) {
			return sp.at
		}
		return time.Time{}
	case api.ScheduleEvery:
		if t.Before(sp.anchor) {
			return sp.anchor
		}
		n := t.Sub(sp.anchor)/sp.every + 1
		return sp.anchor.Add(n * sp.every)
	}
	wall := floating(t.In(sp.loc))
	for range 1000 {
		w := sp.cron.Next(wall)
		if w.IsZero() {
			return time.Time{}
		}
		at := api.WallTime(w, sp.loc)
		if at.After(t) {
			return at
		}
		wall = w
	}
	return time.Time{}
}

// floating is t's wall clock read as UTC.
func floating(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// Describe is a schedule in a few words: "at 2026-12-01 09:00 CET",
// "every 30m", "cron 0 7 * * * (Europe/Berlin)".
func Describe(s api.CronSchedule) string {
	switch s.Kind {
	case api.ScheduleAt:
		if t, err := time.Parse(time.RFC3339, s.At); err == nil {
			return "at " + t.Format("2006-01-02 15:04 MST")
		}
		return "at " + s.At
	case api.ScheduleEvery:
		return "every " + (time.Duration(s.EveryMs) * time.Millisecond).String()
	case api.ScheduleCron:
		if s.TZ != "" {
			return "cron " + s.Expr + " (" + s.TZ + ")"
		}
		return "cron " + s.Expr
	}
	return s.Kind
}
