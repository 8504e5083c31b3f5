package command

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
)

// The fake's scheduler. Each fake gateway starts with three jobs, their
// times counted from when it started: j1 (a weekday cron job in
// Europe/Berlin, announced on WhatsApp, next run in 5m, last ok 2h ago),
// j2 (every 30m in the main session, a hostile name, last an error) and
// j3 (a disabled one-shot). Added jobs get j4, j5 …; a cron expression
// must have 5 or 6 fields and a zone must load, as the real scheduler
// checks. j1 has a run log; agent "ghost" is not configured.

var fakeCrons sync.Map // *fakeGateway → *fakeCron

type fakeCron struct {
	mu     sync.Mutex
	jobs   map[string]*api.CronJob
	nextID int
	runs   int
}

func cronOf(g *fakeGateway) *fakeCron {
	if v, ok := fakeCrons.Load(g); ok {
		return v.(*fakeCron)
	}
	now := time.Now()
	ms := func(d time.Duration) int64 { return now.Add(d).UnixMilli() }
	c := &fakeCron{nextID: 4, jobs: map[string]*api.CronJob{
		"j1": {ID: "j1", AgentID: "main", Name: "morning standup", Enabled: true,
			Schedule: api.CronSchedule{Kind: api.ScheduleCron, Expr: "0 7 * * 1-5", TZ: "Europe/Berlin"}, SessionTarget: api.TargetIsolated,
			SessionKey: "agent:main:cron:j1", Payload: api.CronPayload{Kind: "agentTurn", Message: "Summarise my calendar\nfor today"},
			Delivery:  api.CronDelivery{Mode: api.DeliveryAnnounce, Channel: "whatsapp", To: "+15551234567"},
			CreatedBy: "cli", CreatedAtMs: fakeEpoch.UnixMilli(), UpdatedAtMs: fakeEpoch.UnixMilli(),
			State: api.CronState{NextRunAtMs: ms(5 * time.Minute), LastRunAtMs: ms(-2 * time.Hour), LastStatus: api.RunOK, LastDurationMs: 4200}},
		"j2": {ID: "j2", AgentID: "main", Name: "water\x1b[2J", Enabled: true,
			Schedule: api.CronSchedule{Kind: api.ScheduleEvery, EveryMs: (30 * time.Minute).Milliseconds()}, SessionTarget: api.TargetMain,
			SessionKey: "agent:main:main", Payload: api.CronPayload{Kind: "agentTurn", Message: "Remind me to drink water"},
			Delivery: api.CronDelivery{Mode: api.DeliveryNone}, CreatedBy: "agent:agent:main:main",
			CreatedAtMs: fakeEpoch.UnixMilli(), UpdatedAtMs: fakeEpoch.UnixMilli(),
			State: api.CronState{NextRunAtMs: ms(25 * time.Minute), LastRunAtMs: ms(-5 * time.Minute), LastStatus: api.RunError,
				LastError: "every model failed", ConsecutiveErrors: 3}},
		"j3": {ID: "j3", AgentID: "main", Name: "old reminder", Enabled: false, KeepAfterRun: true,
			Schedule: api.CronSchedule{Kind: api.ScheduleAt, At: "2027-01-15T09:00:00Z"}, SessionTarget: api.TargetMain,
			Payload: api.CronPayload{Kind: "agentTurn", Message: "Renew the passport"}, Delivery: api.CronDelivery{Mode: api.DeliveryNone},
			CreatedAtMs: fakeEpoch.UnixMilli(), UpdatedAtMs: fakeEpoch.UnixMilli()},
	}}
	v, _ := fakeCrons.LoadOrStore(g, c)
	return v.(*fakeCron)
}

// job returns the job ?id= names, or answers not_found.
func (c *fakeCron) job(w http.ResponseWriter, r *http.Request) *api.CronJob {
	id := r.URL.Query().Get("id")
	j, ok := c.jobs[id]
	if !ok {
		fakeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no cron job %q (see `openclaw cron list --all`)", id)})
	}
	return j
}

// check refuses a schedule the real scheduler would, and computes the
// next run (cron: in an hour).
func (c *fakeCron) schedule(j *api.CronJob, now time.Time) *api.Error {
	s := j.Schedule
	if s.TZ != "" {
		if _, err := time.LoadLocation(s.TZ); err != nil {
			return &api.Error{Code: api.CodeBadRequest, Message: fmt.Sprintf("schedule.tz %q: unknown time zone", s.TZ)}
		}
	}
	var next time.Time
	switch s.Kind {
	case api.ScheduleAt:
		t, err := time.Parse(time.RFC3339, s.At)
		if err != nil {
			return &api.Error{Code: api.CodeBadRequest, Message: "schedule.at: " + err.Error()}
		}
		next = t
	case api.ScheduleEvery:
		if s.EveryMs <= 0 {
			return &api.Error{Code: api.CodeBadRequest, Message: "schedule.everyMs: want more than 0"}
		}
		next = now.Add(time.Duration(s.EveryMs) * time.Millisecond)
	case api.ScheduleCron:
		if n := len(strings.Fields(s.Expr)); n != 5 && n != 6 {
			return &api.Error{Code: api.CodeBadRequest, Message: fmt.Sprintf("schedule.expr %q: want 5 fields (minute first) or 6, not %d", s.Expr, n)}
		}
		next = now.Add(time.Hour)
	default:
		return &api.Error{Code: api.CodeBadRequest, Message: fmt.Sprintf("schedule.kind %q: want at, every or cron", s.Kind)}
	}
	j.State.NextRunAtMs = 0
	if j.Enabled {
		j.State.NextRunAtMs = next.UnixMilli()
	}
	return nil
}

func sessionKeyOf(j *api.CronJob) string {
	switch t := j.SessionTarget; {
	case t == api.TargetIsolated:
		return "agent:" + j.AgentID + ":cron:" + j.ID
	case strings.HasPrefix(t, api.TargetSessionPrefix):
		return strings.TrimPrefix(t, api.TargetSessionPrefix)
	}
	return "agent:" + j.AgentID + ":main"
}

func decodeStrict(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		fakeJSON(w, 400, api.Error{Code: api.CodeBadRequest, Message: "invalid JSON request body: " + err.Error()})
		return false
	}
	return true
}

func init() {
	fakeRoutes["GET "+api.PathCron] = func(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
		c := cronOf(g)
		c.mu.Lock()
		defer c.mu.Unlock()
		all := r.URL.Query().Get("all") == "1"
		out := []api.CronJob{}
		for _, j := range c.jobs {
			if all || j.Enabled {
				out = append(out, *j)
			}
		}
		sort.Slice(out, func(i, k int) bool {
			a, b := out[i], out[k]
			if a.Enabled != b.Enabled {
				return a.Enabled
			}
			if a.State.NextRunAtMs != b.State.NextRunAtMs {
				return a.State.NextRunAtMs < b.State.NextRunAtMs
			}
			return a.ID < b.ID
		})
		fakeJSON(w, 200, out)
	}
	fakeRoutes["POST "+api.PathCron] = func(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
		var j api.CronJob
		if !decodeStrict(w, r, &j) {
			return
		}
		if j.AgentID == "ghost" {
			fakeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: `agent "ghost" is not configured`})
			return
		}
		if j.AgentID == "" {
			j.AgentID = "main"
		}
		// The scheduler's defaults (engine/schedule Add).
		if j.SessionTarget == "" {
			j.SessionTarget = api.TargetMain
			if j.Schedule.Kind != api.ScheduleAt {
				j.SessionTarget = api.TargetIsolated
			}
		}
		c := cronOf(g)
		c.mu.Lock()
		defer c.mu.Unlock()
		now := time.Now()
		if e := c.schedule(&j, now); e != nil {
			fakeJSON(w, 400, e)
			return
		}
		j.ID = "j" + strconv.Itoa(c.nextID)
		c.nextID++
		j.SessionKey = sessionKeyOf(&j)
		j.CreatedAtMs, j.UpdatedAtMs = now.UnixMilli(), now.UnixMilli()
		c.jobs[j.ID] = &j
		fakeJSON(w, 200, j)
	}
	fakeRoutes["GET "+api.PathCronJob] = func(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
		c := cronOf(g)
		c.mu.Lock()
		defer c.mu.Unlock()
		if j := c.job(w, r); j != nil {
			fakeJSON(w, 200, j)
		}
	}
	fakeRoutes["POST "+api.PathCronEdit] = func(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
		var p api.CronPatch
		if !decodeStrict(w, r, &p) {
			return
		}
		c := cronOf(g)
		c.mu.Lock()
		defer c.mu.Unlock()
		old := c.job(w, r)
		if old == nil {
			return
		}
		j := *old
		set := func(p *string, to *string) {
			if p != nil {
				*to = *p
			}
		}
		set(p.Name, &j.Name)
		set(p.Description, &j.Description)
		set(p.Message, &j.Payload.Message)
		set(p.Model, &j.Payload.Model)
		set(p.SessionTarget, &j.SessionTarget)
		if p.Enabled != nil {
			j.Enabled = *p.Enabled
		}
		if p.KeepAfterRun != nil {
			j.KeepAfterRun = *p.KeepAfterRun
		}
		if p.Schedule != nil {
			j.Schedule = *p.Schedule
		}
		if p.Delivery != nil {
			j.Delivery = *p.Delivery
		}
		now := time.Now()
		if e := c.schedule(&j, now); e != nil {
			fakeJSON(w, 400, e)
			return
		}
		j.SessionKey = sessionKeyOf(&j)
		j.UpdatedAtMs = now.UnixMilli()
		*old = j
		fakeJSON(w, 200, j)
	}
	fakeRoutes["POST "+api.PathCronRemove] = func(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
		c := cronOf(g)
		c.mu.Lock()
		defer c.mu.Unlock()
		if j := c.job(w, r); j != nil {
			delete(c.jobs, j.ID)
			fakeJSON(w, 200, j)
		}
	}
	fakeRoutes["POST "+api.PathCronRun] = func(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
		c := cronOf(g)
		c.mu.Lock()
		defer c.mu.Unlock()
		j := c.job(w, r)
		if j == nil {
			return
		}
		if r.URL.Query().Get("due") == "1" && j.State.NextRunAtMs > time.Now().UnixMilli() {
			fakeJSON(w, 200, api.CronRunQueued{OK: true, Reason: "not due"})
			return
		}
		c.runs++
		fakeJSON(w, 200, api.CronRunQueued{OK: true, Enqueued: true, RunID: "r" + strconv.Itoa(c.runs)})
	}
	fakeRoutes["GET "+api.PathCronRuns] = func(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
		c := cronOf(g)
		c.mu.Lock()
		defer c.mu.Unlock()
		j := c.job(w, r)
		if j == nil {
			return
		}
		out := []api.CronRun{}
		if j.ID == "j1" {
			day := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC) // 07:00 in Berlin
			at := func(d time.Duration) int64 { return day.Add(d).UnixMilli() }
			out = []api.CronRun{
				{JobID: "j1", RunID: "r9", ScheduledMs: at(26 * time.Hour), StartedMs: at(26 * time.Hour), EndedMs: at(26*time.Hour + 850*time.Millisecond),
					Status: api.RunOK, Manual: true, SessionKey: "agent:main:cron:j1", Reply: "Nothing on your calendar."},
				{JobID: "j1", RunID: "r8", ScheduledMs: at(24 * time.Hour), StartedMs: at(24*time.Hour + 3*time.Minute), EndedMs: at(24*time.Hour + 3*time.Minute + 4200*time.Millisecond),
					Status: api.RunOK, Late: true, SessionKey: "agent:main:cron:j1", Reply: "Good morning!\nStandup at 9:30.", Delivered: "whatsapp:+15551234567"},
				{JobID: "j1", RunID: "r7", ScheduledMs: at(0), StartedMs: at(0), EndedMs: at(2 * time.Minute),
					Status: api.RunError, Error: "every model failed: local/qwen3-1.7b: unreachable\x1b[2J"},
			}
		}
		if n, _ := strconv.Atoi(r.URL.Query().Get("limit")); n > 0 && n < len(out) {
			out = out[:n]
		}
		fakeJSON(w, 200, out)
	}
	fakeRoutes["GET "+api.PathCronStatus] = func(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
		c := cronOf(g)
		c.mu.Lock()
		defer c.mu.Unlock()
		st := api.CronStatus{Enabled: true, Jobs: len(c.jobs), MaxConcurrent: 1}
		for _, j := range c.jobs {
			if !j.Enabled {
				continue
			}
			st.EnabledJobs++
			if n := j.State.NextRunAtMs; n != 0 && (st.NextRunAtMs == 0 || n < st.NextRunAtMs) {
				st.NextRunAtMs, st.NextJobID = n, j.ID
			}
		}
		fakeJSON(w, 200, st)
	}
	heartbeat := func(w http.ResponseWriter, r *http.Request, last api.HeartbeatRun) {
		switch agent := r.URL.Query().Get("agent"); agent {
		case "", "main":
			fakeJSON(w, 200, api.HeartbeatStatus{AgentID: "main", Enabled: true, EveryMs: (30 * time.Minute).Milliseconds(), Target: "last",
				NextRunAtMs: time.Now().Add(25 * time.Minute).UnixMilli(), Last: &last})
		case "work":
			fakeJSON(w, 200, api.HeartbeatStatus{AgentID: "work", Target: "last"})
		default:
			fakeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("agent %q is not configured", agent)})
		}
	}
	fakeRoutes["GET "+api.PathHeartbeat] = func(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
		heartbeat(w, r, api.HeartbeatRun{AtMs: time.Now().Add(-5 * time.Minute).UnixMilli(), Status: api.RunSkipped, Reason: "quiet-hours"})
	}
	fakeRoutes["POST "+api.PathHeartbeatGo] = func(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
		heartbeat(w, r, api.HeartbeatRun{AtMs: time.Now().UnixMilli(), Status: "sent", Reply: "You have a call with Sam at 3pm.", Delivered: "whatsapp:+15551234567"})
	}
}
