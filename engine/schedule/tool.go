package schedule

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/tool"
)

// Tool is the agent's cron tool: "remind me at 9 to call the plumber"
// from any channel. Its arguments are flat (a small local model fills
// them under a grammar; OpenClaw's nested job object is harder to get
// right), and they can only do what the owner could ask for themselves:
//
//   - only owners' turns have tools at all (gateway.runTurn), so a
//     non-owner can never create a job, and no job runs in the owner's
//     session at a stranger's request;
//   - a job made here is delivered to the owner's last contact or
//     nowhere: the model cannot aim a job's replies at another chat;
//   - "current" binds the job to the session that asked.
func (s *Scheduler) Tool() tool.Tool { return &cronTool{s: s} }

type cronTool struct{ s *Scheduler }

func (t *cronTool) Spec() engine.ToolSpec {
	return engine.ToolSpec{
		Name: "cron",
		Description: "Schedule reminders and recurring jobs. At the set time the message is given to you as a new message, and your reply is sent to the user. " +
			"add: give message plus one of in (\"20m\", \"2h\"), at (\"2026-12-01 09:00\", the user's time zone), every (\"30m\") or cron (\"0 7 * * *\"). " +
			"list: the jobs. update/remove/run: by id.",
		Parameters: tool.MustSchema(`{"type":"object","properties":{` +
			`"action":{"type":"string","enum":["add","list","update","remove","run"]},` +
			`"message":{"type":"string","description":"What to do or remind at run time, e.g. Remind the user to call the plumber"},` +
			`"in":{"type":"string","description":"Once, after this long: 20m, 2h, 1d"},` +
			`"at":{"type":"string","description":"Once, at this local time: 2026-12-01 09:00"},` +
			`"every":{"type":"string","description":"Repeat at this interval: 30m, 1h"},` +
			`"cron":{"type":"string","description":"Repeat on a cron expression: 0 7 * * *"},` +
			`"tz":{"type":"string","description":"IANA time zone for at/cron (default: the user's)"},` +
			`"name":{"type":"string"},` +
			`"id":{"type":"string","description":"The job id, for update, remove, run"},` +
			`"session":{"type":"string","enum":["main","isolated","current"],"description":"Where it runs (default: main for reminders, isolated for repeating jobs)"},` +
			`"announce":{"type":"boolean","description":"Send the reply to the user (default true)"}},` +
			`"required":["action"]}`),
	}
}

type cronArgs struct {
	Action   string     `json:"action"`
	Message  string     `json:"message"`
	In       string     `json:"in"`
	At       string     `json:"at"`
	Every    string     `json:"every"`
	Cron     string     `json:"cron"`
	TZ       string     `json:"tz"`
	Name     string     `json:"name"`
	ID       string     `json:"id"`
	Session  string     `json:"session"`
	Announce *tool.Bool `json:"announce"`
}

func (t *cronTool) Run(ctx context.Context, env tool.Env, raw json.RawMessage) engine.ToolResult {
	var a cronArgs
	if err := tool.DecodeArgs(raw, &a); err != nil {
		return engine.ErrorResult("%v", err)
	}
	s := t.s
	action := strings.ToLower(strings.TrimSpace(a.Action))
	if env.Depth > 0 && action != "list" {
		// A turn another session started (sessions_send, a sub-agent):
		// a job it made would run later at depth 0, out of reach of
		// the hop limit that keeps sessions from driving each other.
		return engine.ErrorResult("a turn another session started cannot schedule or change jobs; ask in the owner's own chat")
	}
	switch action {
	case "list":
		jobs, err := s.List(true)
		if err != nil {
			return engine.ErrorResult("%v", err)
		}
		var b strings.Builder
		n := 0
		for _, j := range jobs {
			if j.AgentID != env.AgentID {
				continue
			}
			n++
			next := "not scheduled"
			if j.State.NextRunAtMs != 0 {
				next = "next " + time.UnixMilli(j.State.NextRunAtMs).In(s.cfg.Location(j.AgentID)).Format("Mon 2006-01-02 15:04 MST")
			}
			fmt.Fprintf(&b, "%s %q %s, %s, enabled=%t: %s\n", j.ID, j.Name, Describe(j.Schedule), next, j.Enabled, cut(j.Payload.Message, 120))
		}
		if n == 0 {
			return engine.TextResult("No cron jobs.")
		}
		return engine.TextResult(b.String())
	case "add":
		job, err := t.job(env, a)
		if err != nil {
			return engine.ErrorResult("%v", err)
		}
		if err := t.modelLimits(env, job.Schedule); err != nil {
			return engine.ErrorResult("%v", err)
		}
		j, err := s.Add(ctx, job)
		if err != nil {
			return engine.ErrorResult("%v", err)
		}
		return engine.TextResult(t.describe("Scheduled", j))
	case "update":
		if a.ID == "" {
			return engine.ErrorResult("update needs the job's id (action list shows them)")
		}
		if err := t.own(env, a.ID); err != nil {
			return engine.ErrorResult("%v", err)
		}
		if j, _ := s.Get(a.ID); !toOwner(j.Delivery) {
			// Its replies go to someone else: changing what it says
			// would be a message to them the owner never wrote.
			return engine.ErrorResult("job %s sends its replies to %s:%s; only the owner changes it (openclaw cron edit)", a.ID, j.Delivery.Channel, j.Delivery.To)
		}
		var p api.CronPatch
		if a.Name != "" {
			p.Name = &a.Name
		}
		if a.Message != "" {
			p.Message = &a.Message
		}
		if a.In != "" || a.At != "" || a.Every != "" || a.Cron != "" {
			sched, err := t.schedule(env, a)
			if err != nil {
				return engine.ErrorResult("%v", err)
			}
			if err := t.modelLimits(env, sched); err != nil {
				return engine.ErrorResult("%v", err)
			}
			p.Schedule = &sched
			on := true
			p.Enabled = &on
		}
		j, err := s.Edit(a.ID, p)
		if err != nil {
			return engine.ErrorResult("%v", err)
		}
		return engine.TextResult(t.describe("Updated", j))
	case "remove":
		if err := t.own(env, a.ID); err != nil {
			return engine.ErrorResult("%v", err)
		}
		j, err := s.Remove(a.ID)
		if err != nil {
			return engine.ErrorResult("%v", err)
		}
		return engine.TextResult(fmt.Sprintf("Removed job %s (%s).", j.ID, j.Name))
	case "run":
		if err := t.own(env, a.ID); err != nil {
			return engine.ErrorResult("%v", err)
		}
		q, err := s.Run(a.ID, false)
		if err != nil {
			return engine.ErrorResult("%v", err)
		}
		if !q.Enqueued {
			return engine.TextResult("Not started: " + q.Reason)
		}
		return engine.TextResult("Started run " + q.RunID + "; its reply arrives as a new message.")
	}
	return engine.ErrorResult("action must be add, list, update, remove or run (got %q)", a.Action)
}

// Limits on what a model may schedule (a prompt-injected one, too): a job
// it makes runs at most once a minute, and an agent keeps at most
// maxModelJobs of them; the owner's CLI is bound only by the scheduler's.
const (
	modelMinEvery = time.Minute
	maxModelJobs  = 50
)

func (t *cronTool) modelLimits(env tool.Env, sched api.CronSchedule) error {
	if sched.Kind != api.ScheduleAt {
		sp, err := Parse(sched, t.s.cfg.Location(env.AgentID), t.s.cfg.Now())
		if err != nil {
			return err
		}
		if gap := sp.minGap(t.s.cfg.Now()); gap > 0 && gap < modelMinEvery {
			return fmt.Errorf("a job may run at most once a minute (this one: every %s)", gap)
		}
	}
	jobs, err := t.s.List(true)
	if err != nil {
		return err
	}
	n := 0
	for _, j := range jobs {
		if j.AgentID == env.AgentID && strings.HasPrefix(j.CreatedBy, "agent:") {
			n++
		}
	}
	if n >= maxModelJobs {
		return fmt.Errorf("there are already %d jobs made in chats; remove some first (action list, then remove)", n)
	}
	return nil
}

// toOwner reports whether a delivery goes to the owner (or nowhere): no
// chat named, so the owner's last contact or their id on the channel.
func toOwner(d api.CronDelivery) bool {
	return d.Mode == api.DeliveryNone || d.To == ""
}

// own checks that job id belongs to the caller's agent (an agent cannot
// touch another agent's jobs).
func (t *cronTool) own(env tool.Env, id string) error {
	if id == "" {
		return fmt.Errorf("this action needs the job's id (action list shows them)")
	}
	j, err := t.s.Get(id)
	if err != nil {
		return err
	}
	if j.AgentID != env.AgentID {
		return notFound(id)
	}
	return nil
}

func (t *cronTool) describe(what string, j api.CronJob) string {
	next := "it is not scheduled"
	if j.State.NextRunAtMs != 0 {
		next = "it runs " + time.UnixMilli(j.State.NextRunAtMs).In(t.s.cfg.Location(j.AgentID)).Format("Mon 2006-01-02 15:04 MST")
	}
	return fmt.Sprintf("%s job %s (%s): %s; %s.", what, j.ID, j.Name, Describe(j.Schedule), next)
}

// job turns the tool's arguments into a new job.
func (t *cronTool) job(env tool.Env, a cronArgs) (api.CronJob, error) {
	sched, err := t.schedule(env, a)
	if err != nil {
		return api.CronJob{}, err
	}
	j := api.CronJob{
		AgentID: env.AgentID, Name: a.Name, Enabled: true, Schedule: sched,
		Payload:   api.CronPayload{Kind: "agentTurn", Message: a.Message},
		Delivery:  api.CronDelivery{Mode: api.DeliveryAnnounce, Channel: api.DeliveryLast},
		CreatedBy: "agent:" + string(env.SessionKey),
	}
	if a.Announce != nil && !bool(*a.Announce) {
		j.Delivery = api.CronDelivery{Mode: api.DeliveryNone}
	}
	switch a.Session {
	case "", api.TargetMain, api.TargetIsolated:
		j.SessionTarget = a.Session
	case api.TargetCurrent:
		j.SessionTarget, j.SessionKey = api.TargetCurrent, string(env.SessionKey)
	default:
		return api.CronJob{}, fmt.Errorf("session must be main, isolated or current (got %q)", a.Session)
	}
	return j, nil
}

// schedule reads the one of in/at/every/cron that is given.
func (t *cronTool) schedule(env tool.Env, a cronArgs) (api.CronSchedule, error) {
	given := 0
	for _, v := range []string{a.In, a.At, a.Every, a.Cron} {
		if strings.TrimSpace(v) != "" {
			given++
		}
	}
	if given != 1 {
		return api.CronSchedule{}, fmt.Errorf("give exactly one of in, at, every or cron (got %d)", given)
	}
	loc := t.s.cfg.Location(env.AgentID)
	if a.TZ != "" {
		l, err := time.LoadLocation(a.TZ)
		if err != nil {
			return api.CronSchedule{}, fmt.Errorf("tz %q is not an IANA time zone (e.g. Europe/Berlin)", a.TZ)
		}
		loc = l
	}
	now := t.s.cfg.Now()
	switch {
	case a.In != "":
		d, err := ParseDuration(a.In)
		if err != nil {
			return api.CronSchedule{}, fmt.Errorf("in: %v", err)
		}
		return api.CronSchedule{Kind: api.ScheduleAt, At: now.Add(d).Truncate(time.Second).Format(time.RFC3339)}, nil
	case a.At != "":
		at, err := ParseAt(a.At, now, loc)
		if err != nil {
			return api.CronSchedule{}, fmt.Errorf("at: %v", err)
		}
		return api.CronSchedule{Kind: api.ScheduleAt, At: at.Format(time.RFC3339)}, nil
	case a.Every != "":
		d, err := ParseDuration(a.Every)
		if err != nil {
			return api.CronSchedule{}, fmt.Errorf("every: %v", err)
		}
		return api.CronSchedule{Kind: api.ScheduleEvery, EveryMs: d.Milliseconds()}, nil
	}
	return api.CronSchedule{Kind: api.ScheduleCron, Expr: strings.TrimSpace(a.Cron), TZ: a.TZ}, nil
}

// maxDuration bounds a delay or interval: ten years.
const maxDuration = 10 * 365 * 24 * time.Hour

// ParseDuration reads a delay or interval as a model (or a person) writes
// it: "20m", "2h30m", "1d", "in 20 minutes", "+2h" (api.ParseSpan after
// the "in"/"+"), at least a second and at most ten years.
func ParseDuration(s string) (time.Duration, error) {
	in := strings.TrimSpace(strings.ToLower(s))
	in = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(in, "in "), "+"))
	d, err := api.ParseSpan(in)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a duration (e.g. 20m, 2h, 1d, \"20 minutes\")", s)
	case d > maxDuration:
		return 0, fmt.Errorf("%q is longer than %d days", s, maxDuration/(24*time.Hour))
	case d < time.Second:
		return 0, fmt.Errorf("%q is not a duration of a second or more", s)
	}
	return d, nil
}

// ParseAt reads an absolute time: RFC 3339, or a local date and time
// ("2026-12-01 09:00", "2026-12-01T09:00") in loc, or a time of day
// ("09:00", today, or tomorrow once it has passed).
func ParseAt(s string, now time.Time, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	// Read as UTC, then resolved in loc: parsing in loc would let Go
	// pick a time in a spring gap (an hour early in some zones).
	for _, layout := range []string{"2006-01-02 15:04", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02T15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return api.WallTime(t, loc), nil
		}
	}
	for _, layout := range []string{"15:04", "3:04pm", "3pm", "3:04 pm", "3 pm"} {
		if t, err := time.Parse(layout, strings.ToLower(s)); err == nil {
			n := now.In(loc)
			at := api.WallTime(time.Date(n.Year(), n.Month(), n.Day(), t.Hour(), t.Minute(), 0, 0, time.UTC), loc)
			if !at.After(now) {
				at = api.WallTime(time.Date(n.Year(), n.Month(), n.Day()+1, t.Hour(), t.Minute(), 0, 0, time.UTC), loc)
			}
			return at, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time (e.g. 2026-12-01 09:00, 09:00, or RFC 3339)", s)
}
