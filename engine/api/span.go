package api

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// spanUnits are the units ParseSpan knows.
var spanUnits = map[string]time.Duration{
	"ms": time.Millisecond,
	"s":  time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	"w": 7 * 24 * time.Hour, "week": 7 * 24 * time.Hour, "weeks": 7 * 24 * time.Hour,
}

// ParseSpan reads a length of time as people type it: numbers with units,
// together or apart ("1h30m", "1d", "20 minutes", "1 hour 30 min",
// "1.5h"); a "," or "and" may separate the parts. The CLI (--at, --every)
// and the scheduler's cron tool read durations with it.
func ParseSpan(s string) (time.Duration, error) {
	rest := strings.ToLower(strings.TrimSpace(s))
	if rest == "" {
		return 0, errors.New("empty")
	}
	var total float64
	for {
		rest = strings.TrimLeft(rest, " ,")
		if r, ok := strings.CutPrefix(rest, "and "); ok && total > 0 {
			rest = strings.TrimLeft(r, " ")
		}
		if rest == "" {
			break
		}
		i := strings.IndexFunc(rest, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
		if i < 0 {
			return 0, fmt.Errorf("%q has no unit (such as m, h or d)", s)
		}
		if i == 0 {
			return 0, fmt.Errorf("%q: want a number before each unit", s)
		}
		n, err := strconv.ParseFloat(rest[:i], 64)
		if err != nil {
			return 0, fmt.Errorf("%q: %q is not a number", s, rest[:i])
		}
		rest = strings.TrimLeft(rest[i:], " ")
		j := strings.IndexFunc(rest, func(r rune) bool { return r < 'a' || r > 'z' })
		if j < 0 {
			j = len(rest)
		}
		u, ok := spanUnits[rest[:j]]
		if !ok {
			if j == 0 {
				return 0, fmt.Errorf("%q has no unit (such as m, h or d)", s)
			}
			return 0, fmt.Errorf("%q: unknown unit %q (want s, m, h, d or w)", s, rest[:j])
		}
		rest = rest[j:]
		if total += n * float64(u); total > math.MaxInt64/2 {
			return 0, fmt.Errorf("%q is too long", s)
		}
	}
	return time.Duration(total), nil
}
