package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Cron configures the scheduler (engine/schedule), OpenClaw's keys.
type Cron struct {
	// Enabled: nil = true. false keeps the jobs and runs none.
	Enabled *bool `json:"enabled"`
	// MaxConcurrentRuns: scheduled turns at once (default 1: a small box
	// runs one model turn at a time anyway).
	MaxConcurrentRuns int `json:"maxConcurrentRuns"`
	// SessionRetention: how long the session of an isolated run is kept
	// after it ended (a duration, "24h" by default; "false" keeps them).
	SessionRetention string `json:"sessionRetention"`
}

// IsEnabled reports whether cron jobs run.
func (c Cron) IsEnabled() bool { return c.Enabled == nil || *c.Enabled }

// Retention is cron.sessionRetention as a duration; 0 keeps the sessions.
func (c Cron) Retention() time.Duration {
	s := strings.TrimSpace(c.SessionRetention)
	if s == "" {
		return 24 * time.Hour
	}
	d, err := ParseDuration(s)
	if err != nil {
		return 0
	}
	return d
}

// Heartbeat configures an agent's periodic check-in
// (agents.defaults.heartbeat, agents.list[].heartbeat), OpenClaw's keys.
type Heartbeat struct {
	// Every: "30m" (the default), "1h"; "0" turns it off.
	Every string `json:"every"`
	// Target: "none", "last" (the owner's last contact; the default) or
	// a channel name; To and AccountID pick the chat there.
	Target    string `json:"target"`
	To        string `json:"to"`
	AccountID string `json:"accountId"`
	// ActiveHours: beats only between start and end (HH:MM) in timezone
	// (IANA; "" the agent's userTimezone).
	ActiveHours *ActiveHours `json:"activeHours"`
	// Model: the model of heartbeat turns ("" the agent's).
	Model string `json:"model"`
	// LightContext: a minimal system prompt and only HEARTBEAT.md.
	LightContext bool `json:"lightContext"`
	// IsolatedSession: beats run in agent:<id>:heartbeat, not the main
	// session.
	IsolatedSession bool `json:"isolatedSession"`
	// SkipWhenBusy: no beat while the session is answering (default
	// true: a beat would wait behind the turn anyway).
	SkipWhenBusy *bool  `json:"skipWhenBusy"`
	Prompt       string `json:"prompt"`
	AckMaxChars  int    `json:"ackMaxChars"`
}

// ActiveHours is a heartbeat's daily window.
type ActiveHours struct {
	Start    string `json:"start"`
	End      string `json:"end"`
	Timezone string `json:"timezone"`
}

// ParseDuration reads a config duration: Go's ("30m", "1h30m") or with
// days ("1d"); "0" is zero.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, nil
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if d, err := strconv.Atoi(n); err == nil && d >= 0 {
			return time.Duration(d) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration (e.g. 30m, 1h, 1d; 0 for off)", s)
	}
	return d, nil
}

// mergeHeartbeat lays an agent's heartbeat over the defaults, field by
// field.
func mergeHeartbeat(d Heartbeat, a *Heartbeat) Heartbeat {
	if a == nil {
		return d
	}
	r := d
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&r.Every, a.Every)
	set(&r.Target, a.Target)
	set(&r.To, a.To)
	set(&r.AccountID, a.AccountID)
	set(&r.Model, a.Model)
	set(&r.Prompt, a.Prompt)
	if a.ActiveHours != nil {
		r.ActiveHours = a.ActiveHours
	}
	if a.SkipWhenBusy != nil {
		r.SkipWhenBusy = a.SkipWhenBusy
	}
	if a.AckMaxChars != 0 {
		r.AckMaxChars = a.AckMaxChars
	}
	r.LightContext = r.LightContext || a.LightContext
	r.IsolatedSession = r.IsolatedSession || a.IsolatedSession
	return r
}

var hhmm = func(s string) bool {
	var h, m int
	_, err := fmt.Sscanf(s, "%d:%d", &h, &m)
	return err == nil && len(s) == 5 && h >= 0 && h <= 24 && m >= 0 && m <= 59 && (h < 24 || m == 0)
}

func (c *Config) validateCron(v *validation) {
	if c.Cron.MaxConcurrentRuns < 0 {
		v.fail("cron.maxConcurrentRuns", "must be 0 (the default, 1) or more, got %d", c.Cron.MaxConcurrentRuns)
	}
	if s := strings.TrimSpace(c.Cron.SessionRetention); s != "" && s != "false" {
		if _, err := ParseDuration(s); err != nil {
			v.fail("cron.sessionRetention", "%v", err)
		}
	}
	check := func(p string, h *Heartbeat) {
		if h == nil {
			return
		}
		if h.Every != "" {
			if d, err := ParseDuration(h.Every); err != nil {
				v.fail(p+".every", "%v", err)
			} else if d > 0 && d < time.Minute {
				v.fail(p+".every", "%s is shorter than a minute", h.Every)
			}
		}
		if h.AckMaxChars < 0 {
			v.fail(p+".ackMaxChars", "must not be negative")
		}
		if a := h.ActiveHours; a != nil {
			if !hhmm(a.Start) {
				v.fail(p+".activeHours.start", "%q is not a time HH:MM", a.Start)
			}
			if !hhmm(a.End) {
				v.fail(p+".activeHours.end", "%q is not a time HH:MM (24:00 is midnight)", a.End)
			}
			if a.Start == a.End && hhmm(a.Start) {
				v.fail(p+".activeHours", "start and end are both %s: the heartbeat would never run", a.Start)
			}
			if a.Timezone != "" {
				if _, err := time.LoadLocation(a.Timezone); err != nil {
					v.fail(p+".activeHours.timezone", "unknown time zone %q (want an IANA name like Europe/Madrid)", a.Timezone)
				}
			}
		}
		if t := h.Target; t != "" && t != "none" && t != "last" && !channelNameOK(t) {
			v.fail(p+".target", "%q is not none, last or a channel name", t)
		}
	}
	check("agents.defaults.heartbeat", &c.Agents.Defaults.Heartbeat)
	for i := range c.Agents.List {
		check(indexPath("agents.list", i)+".heartbeat", c.Agents.List[i].Heartbeat)
	}
}

func channelNameOK(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return s != ""
}
