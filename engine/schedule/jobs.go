package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
)

// List returns the jobs, enabled first then by next run; all false leaves
// out disabled ones.
func (s *Scheduler) List(all bool) ([]api.CronJob, error) {
	jobs, err := s.jobs()
	if err != nil {
		return nil, fmt.Errorf("read the cron jobs: %w", err)
	}
	out := make([]api.CronJob, 0, len(jobs))
	for _, j := range jobs {
		if all || j.Enabled {
			out = append(out, j)
		}
	}
	return out, nil
}

// Get returns one job.
func (s *Scheduler) Get(id string) (api.CronJob, error) {
	var j api.CronJob
	var found bool
	err := s.db.ViewRecords(func(tx engine.RecordTx) error {
		var err error
		found, err = tx.Get(bucketJobs, id, &j)
		return err
	})
	if err != nil {
		return j, fmt.Errorf("read cron job %s: %w", id, err)
	}
	if !found {
		return j, notFound(id)
	}
	return j, nil
}

// Add checks job and stores it with a new id and its next run. A job
// whose time has passed is refused (an at in the past is a typo more
// often than a wish to run now: `openclaw cron run` is that).
func (s *Scheduler) Add(_ context.Context, job api.CronJob) (api.CronJob, error) {
	now := s.cfg.Now()
	job.ID = engine.NewID(8)
	job.CreatedAtMs, job.UpdatedAtMs = now.UnixMilli(), now.UnixMilli()
	job.State = api.CronState{}
	if job.AgentID == "" {
		job.AgentID = s.cfg.DefaultAgent
	}
	if job.Payload.Kind == "" {
		job.Payload.Kind = "agentTurn"
	}
	if job.SessionTarget == "" {
		job.SessionTarget = api.TargetMain
		if job.Schedule.Kind != api.ScheduleAt {
			job.SessionTarget = api.TargetIsolated
		}
	}
	if job.Delivery.Mode == "" {
		job.Delivery.Mode = api.DeliveryAnnounce
	}
	if job.Delivery.Mode == api.DeliveryAnnounce && job.Delivery.Channel == "" {
		job.Delivery.Channel = api.DeliveryLast
	}
	if job.Name == "" {
		job.Name = cut(oneLine(job.Payload.Message), 40)
	}
	if err := s.check(&job, now, true); err != nil {
		return api.CronJob{}, err
	}
	err := s.db.UpdateRecords(func(tx engine.RecordTx) error {
		n := 0
		if err := tx.ForEach(bucketJobs, "", func(string, []byte) error { n++; return nil }); err != nil {
			return err
		}
		if n >= maxJobs {
			return badRequest("there are already %d cron jobs, the most a gateway keeps; remove some (openclaw cron rm)", n)
		}
		return tx.Put(bucketJobs, job.ID, job)
	})
	if err != nil {
		return api.CronJob{}, wrapStore("add the cron job", err)
	}
	s.log.Info("cron job added", "job", job.ID, "name", job.Name, "schedule", Describe(job.Schedule), "by", job.CreatedBy)
	s.Wake()
	return job, nil
}

// check validates job (filled in) and computes its next run. fresh: the
// job is new (an at in the past is refused; current resolves).
func (s *Scheduler) check(job *api.CronJob, now time.Time, fresh bool) error {
	if !s.cfg.HasAgent(job.AgentID) {
		return badRequest("agentId: agent %q is not configured", job.AgentID)
	}
	job.Payload.Message = strings.TrimSpace(job.Payload.Message)
	switch {
	case job.Payload.Kind != "agentTurn" && job.Payload.Kind != "systemEvent":
		return badRequest("payload.kind: %q is not agentTurn", job.Payload.Kind)
	case job.Payload.Message == "":
		return badRequest("payload.message: a job needs a message (--message): what the assistant is asked at run time")
	case len(job.Payload.Message) > maxMessage:
		return badRequest("payload.message: %d bytes, more than %d", len(job.Payload.Message), maxMessage)
	case len(job.Name) > 200:
		return badRequest("name: longer than 200 bytes")
	}
	job.Payload.Kind = "agentTurn" // a system event is a turn here too
	sp, err := Parse(job.Schedule, s.cfg.Location(job.AgentID), time.UnixMilli(job.CreatedAtMs))
	if err != nil {
		return badRequest("%v", err)
	}
	if gap := sp.minGap(now); gap > 0 && gap < MinEvery {
		return badRequest("schedule: runs %s apart, more often than every %s", gap, MinEvery)
	}
	switch t := job.SessionTarget; {
	case t == api.TargetMain:
		job.SessionKey = string(engine.AgentSessionKey(job.AgentID, s.cfg.MainKey))
	case t == api.TargetIsolated:
		job.SessionKey = string(engine.AgentSessionKey(job.AgentID, "cron:"+job.ID))
	case t == api.TargetCurrent:
		if job.SessionKey == "" {
			return badRequest("sessionTarget: current is the session that creates the job, and this request comes from none; use main, isolated or session:<key>")
		}
	case strings.HasPrefix(t, api.TargetSessionPrefix):
		k := engine.SessionKey(strings.TrimPrefix(t, api.TargetSessionPrefix))
		if !strings.HasPrefix(string(k), "agent:") {
			k = engine.AgentSessionKey(job.AgentID, string(k))
		}
		if err := k.Valid(); err != nil {
			return badRequest("sessionTarget: %v", err)
		}
		if k.AgentID() != job.AgentID {
			return badRequest("sessionTarget: session %s belongs to agent %q, not %q", k, k.AgentID(), job.AgentID)
		}
		job.SessionKey = string(k)
	default:
		return badRequest("sessionTarget: %q is not main, isolated, current or session:<key>", t)
	}
	switch job.Delivery.Mode {
	case api.DeliveryNone:
	case api.DeliveryAnnounce:
		if s.cfg.CheckDelivery != nil {
			if err := s.cfg.CheckDelivery(job.Delivery); err != nil {
				return badRequest("delivery: %v", err)
			}
		}
	default:
		return badRequest("delivery.mode: %q is not announce or none", job.Delivery.Mode)
	}
	if !job.Enabled {
		job.State.NextRunAtMs = 0
		return nil
	}
	from := now
	if sp.OneShot() {
		next := sp.Next(time.Time{})
		if fresh && !next.After(now.Add(-time.Minute)) {
			return badRequest("schedule.at: %s has passed (now %s); use `openclaw cron run` to run a job now", next.Format(time.RFC3339), now.Format(time.RFC3339))
		}
		job.State.NextRunAtMs = next.UnixMilli()
		return nil
	}
	job.State.NextRunAtMs = ms(sp.Next(from))
	return nil
}

// Edit changes the fields p sets.
func (s *Scheduler) Edit(id string, p api.CronPatch) (api.CronJob, error) {
	now := s.cfg.Now()
	var out api.CronJob
	err := s.db.UpdateRecords(func(tx engine.RecordTx) error {
		var j api.CronJob
		found, err := tx.Get(bucketJobs, id, &j)
		if err != nil {
			return err
		}
		if !found {
			return notFound(id)
		}
		reschedule := false
		if p.Name != nil {
			j.Name = *p.Name
		}
		if p.Description != nil {
			j.Description = *p.Description
		}
		if p.KeepAfterRun != nil {
			j.KeepAfterRun = *p.KeepAfterRun
		}
		if p.Message != nil {
			j.Payload.Message = *p.Message
		}
		if p.Model != nil {
			j.Payload.Model = *p.Model
		}
		if p.Delivery != nil {
			j.Delivery = *p.Delivery
			if j.Delivery.Mode == api.DeliveryAnnounce && j.Delivery.Channel == "" {
				j.Delivery.Channel = api.DeliveryLast
			}
		}
		if p.SessionTarget != nil {
			if *p.SessionTarget == api.TargetCurrent {
				return badRequest("sessionTarget: current is resolved when a job is created; give session:<key>")
			}
			j.SessionTarget = *p.SessionTarget
		}
		if p.Schedule != nil {
			j.Schedule, reschedule = *p.Schedule, true
			if j.Schedule.Kind == api.ScheduleEvery && j.Schedule.AnchorMs == 0 {
				j.Schedule.AnchorMs = now.UnixMilli() // a new interval counts from now
			}
		}
		if p.Enabled != nil && *p.Enabled != j.Enabled {
			j.Enabled, reschedule = *p.Enabled, true
			j.State.ConsecutiveErrors = 0
		}
		next := j.State.NextRunAtMs
		if err := s.check(&j, now, reschedule && j.Schedule.Kind == api.ScheduleAt && p.Schedule != nil); err != nil {
			return err
		}
		if !reschedule && j.Enabled {
			j.State.NextRunAtMs = next // a backoff or a due run stays as it was
		}
		j.UpdatedAtMs = now.UnixMilli()
		out = j
		return tx.Put(bucketJobs, id, j)
	})
	if err != nil {
		return api.CronJob{}, wrapStore("edit the cron job", err)
	}
	if !out.Enabled {
		s.cancelRun(id) // disabled: a run in flight stops
	}
	s.Wake()
	return out, nil
}

// Remove deletes a job (a run in flight finishes; its log stays).
func (s *Scheduler) Remove(id string) (api.CronJob, error) {
	var j api.CronJob
	err := s.db.UpdateRecords(func(tx engine.RecordTx) error {
		found, err := tx.Get(bucketJobs, id, &j)
		if err != nil {
			return err
		}
		if !found {
			return notFound(id)
		}
		// Its run log goes with it.
		var runs []string
		if err := tx.ForEach(bucketRuns, id+"/", func(k string, _ []byte) error { runs = append(runs, k); return nil }); err != nil {
			return err
		}
		for _, k := range runs {
			if err := tx.Delete(bucketRuns, k); err != nil {
				return err
			}
		}
		return tx.Delete(bucketJobs, id)
	})
	if err != nil {
		return api.CronJob{}, wrapStore("remove the cron job", err)
	}
	s.cancelRun(id) // a run in flight stops; its pending record goes when it ends
	s.log.Info("cron job removed", "job", id)
	return j, nil
}

// Run queues a run of the job now; due: only if it is due.
func (s *Scheduler) Run(id string, due bool) (api.CronRunQueued, error) {
	if _, err := s.Get(id); err != nil {
		return api.CronRunQueued{}, err
	}
	if !s.cfg.Enabled {
		return api.CronRunQueued{OK: false, Reason: "cron is disabled (cron.enabled false)"}, nil
	}
	s.mu.Lock()
	ctx := s.ctx
	_, busy := s.running[id]
	s.mu.Unlock()
	if ctx == nil || ctx.Err() != nil {
		return api.CronRunQueued{Reason: "the scheduler is not running"}, nil
	}
	if busy {
		return api.CronRunQueued{OK: true, Reason: "a run of this job is in progress"}, nil
	}
	// Never wait for a slot: the caller may be a turn (the cron tool)
	// that holds a session another run waits for.
	select {
	case s.sem <- struct{}{}:
	default:
		return api.CronRunQueued{OK: true, Reason: fmt.Sprintf("%d runs are in progress (cron.maxConcurrentRuns); try again when they end", cap(s.sem))}, nil
	}
	p, ok, err := s.claim(id, s.cfg.Now(), !due, due)
	if err != nil || !ok {
		<-s.sem
		if err != nil {
			return api.CronRunQueued{}, wrapStore("claim the run", err)
		}
		return api.CronRunQueued{OK: true, Reason: "not due"}, nil
	}
	s.wg.Add(1)
	go s.execute(p)
	return api.CronRunQueued{OK: true, Enqueued: true, RunID: p.Run.RunID}, nil
}

// Runs returns a job's run log, newest first.
func (s *Scheduler) Runs(id string, limit int) ([]api.CronRun, error) {
	if limit <= 0 {
		limit = 50
	}
	var out []api.CronRun
	err := s.db.ViewRecords(func(tx engine.RecordTx) error {
		return tx.ForEach(bucketRuns, id+"/", func(_ string, raw []byte) error {
			var r api.CronRun
			if err := json.Unmarshal(raw, &r); err == nil {
				out = append(out, r)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read the runs of %s: %w", id, err)
	}
	if len(out) == 0 {
		if _, err := s.Get(id); err != nil {
			return nil, err // no log and no job: a typo
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out[:min(limit, len(out))], nil
}

// Status is the scheduler's state.
func (s *Scheduler) Status() api.CronStatus {
	st := api.CronStatus{Enabled: s.cfg.Enabled, MaxConcurrent: s.cfg.MaxConcurrent}
	jobs, err := s.jobs()
	if err != nil {
		s.log.Error("could not read the cron jobs", "err", err)
	}
	st.Jobs = len(jobs)
	for _, j := range jobs {
		if !j.Enabled {
			continue
		}
		st.EnabledJobs++
		if n := j.State.NextRunAtMs; n != 0 && (st.NextRunAtMs == 0 || n < st.NextRunAtMs) {
			st.NextRunAtMs, st.NextJobID = n, j.ID
		}
	}
	s.mu.Lock()
	st.Running = len(s.running)
	s.mu.Unlock()
	return st
}

// Heartbeat is an agent's heartbeat state.
func (s *Scheduler) Heartbeat(agentID string) (api.HeartbeatStatus, error) {
	if s.cfg.Heartbeat == nil {
		return api.HeartbeatStatus{}, &api.Error{Code: api.CodeNotFound, Message: "the heartbeat is not configured"}
	}
	return s.cfg.Heartbeat.Status(agentID)
}

// HeartbeatNow runs an agent's heartbeat once, now.
func (s *Scheduler) HeartbeatNow(ctx context.Context, agentID string) (api.HeartbeatStatus, error) {
	if s.cfg.Heartbeat == nil {
		return api.HeartbeatStatus{}, &api.Error{Code: api.CodeNotFound, Message: "the heartbeat is not configured"}
	}
	return s.cfg.Heartbeat.RunNow(ctx, agentID)
}

// wrapStore passes an *api.Error through and wraps any other error.
func wrapStore(what string, err error) error {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae
	}
	return fmt.Errorf("%s: %w", what, err)
}
