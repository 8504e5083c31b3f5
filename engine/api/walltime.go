package api

import "time"

// WallTime is the instant a wall-clock time names in loc (wall's fields
// read as they are, its own zone ignored), the way a person means it:
// when an autumn change repeats the time, its first occurrence; when a
// spring change skips it (02:30 where 02:00 jumps to 03:00), the instant
// just after the gap (03:30). time.Date leaves the choice open and picks
// differently in different zones. The scheduler (cron expressions, "at
// 09:00") and the CLI (--at with --tz) both resolve times with it.
func WallTime(wall time.Time, loc *time.Location) time.Time {
	w := time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), wall.Second(), wall.Nanosecond(), time.UTC)
	offset := func(t time.Time) time.Duration {
		_, off := t.In(loc).Zone()
		return time.Duration(off) * time.Second
	}
	// The offsets a day either side: zones change at most once a day.
	before, after := offset(w.Add(-24*time.Hour)), offset(w.Add(24*time.Hour))
	var first time.Time
	for _, off := range []time.Duration{before, after} {
		at := w.Add(-off)
		l := at.In(loc)
		if time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC).Equal(w) && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	if first.IsZero() { // in the gap: the old offset puts it just after
		first = w.Add(-before)
	}
	return first.In(loc)
}
