// Package schedule is the assistant that speaks first: cron jobs (one-shot
// reminders, intervals and cron expressions in a time zone) and the
// heartbeat, each run as a turn through the gateway's door
// (gateway.RunTurn), its reply delivered through the channel side's outbox
// like any other (docs/design.md §3).
//
// OpenClaw's model, field names and CLI verbs (api.CronJob): a job has a
// schedule (at | every | cron with tz), a session target (main, isolated,
// current, session:<key>), a payload message, and a delivery (announce to
// a channel target, "last" being the owner's last contact, or none).
// One-shot jobs are deleted after success unless keepAfterRun.
//
// Crash safety, in the order a run goes:
//
//  1. claim: one transaction writes the pending run (bucket cron-pending,
//     with its dedup key), the run log's "running" entry, and the job's
//     next run (recurring: the next slot after now, so a missed job runs
//     at most once and then keeps its schedule).
//  2. the turn: gateway.RunTurn with the run's dedup key. The session
//     store commits the message with that key before the model is called,
//     and the reply with its outbox records and the end of the turn in
//     one transaction — exactly as for a channel message.
//  3. finish: one transaction deletes the pending run, writes the run
//     log's outcome and the job's state (deletes a finished one-shot).
//
// A pending run found at start is run again with the same dedup key: a
// turn that was committed is not run twice (its outcome is read back
// from the session store, and its reply was already queued); one a crash
// cut short is run again under a new attempt key, since nothing of it was
// sent. So a reminder is neither lost nor sent twice.
//
// Times: cron expressions are matched on the wall clock of their zone
// (Spec.Next: a daylight-saving change neither skips nor repeats a run).
// After downtime a missed one-shot runs once at start and its reply says
// it is late; consecutive failures back off 30 s → 1 m → 5 m → 15 m →
// 60 m (OpenClaw's steps), a failed one-shot is tried three times.
//
// Parsing is robfig/cron v3 (MIT): one small package with no
// dependencies; its scheduler is not used — ours must persist.
package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/crashpoint"
)

// Record buckets.
const (
	bucketJobs    = "cron-jobs"    // <job id> → api.CronJob
	bucketPending = "cron-pending" // <job id> → pending: a claimed run not yet marked
	bucketRuns    = "cron-runs"    // <job id>/<started ms, 16 digits>-<run id> → api.CronRun
)

// Limits.
const (
	// LateAfter: a run this long after its time is late (and says so).
	LateAfter = time.Minute
	// maxAttempts bounds the runs of one claim that a crash cut short,
	// and the tries of a failing one-shot.
	maxAttempts = 3
	// keepRuns is how many run-log entries a job keeps.
	keepRuns = 200
	// maxJobs bounds the jobs of a gateway (a runaway model adding jobs).
	maxJobs = 500
	// maxMessage bounds a job's message.
	maxMessage = 4000
	// maxResumeAge: a run claimed longer ago than this is not resumed
	// (the session store keeps dedup keys 7 days; a day of margin).
	maxResumeAge = 6 * 24 * time.Hour
	// maxWait: the loop looks again at least this often, so a clock that
	// jumps (a box without a real-time clock, set by NTP after boot) is
	// noticed.
	maxWait = time.Minute
)

// backoff is OpenClaw's retry backoff after consecutive errors.
var backoff = []time.Duration{30 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour}

// Backoff is the wait after n consecutive errors (n ≥ 1).
func Backoff(n int) time.Duration {
	if n < 1 {
		return 0
	}
	return backoff[min(n, len(backoff))-1]
}

// Run is one claimed run as the Runner gets it.
type Run struct {
	api.CronRun
	// Dedup is the run's dedup key for the turn: the same on a run given
	// again after a crash, a new one per attempt.
	Dedup   string `json:"dedup"`
	Attempt int    `json:"attempt"`
	// DueMs is when it was due (ScheduledMs) in the job's eyes; Late is
	// set when it starts more than LateAfter after that.
}

// Result is how a run went.
type Result struct {
	Status string // api.RunOK, api.RunError or api.RunSkipped
	Error  string
	// SessionID is the transcript an isolated run wrote (its retention
	// is cron.sessionRetention); "" otherwise.
	SessionID string
	Reply     string
	Delivered string
	// Again: the turn was cut short by a crash or a shutdown before
	// anything was sent; run it again under a new attempt.
	Again bool
	// Stopped: the owner stopped the turn (/stop), or removed or
	// disabled the job while it ran: not an error, and not run again.
	Stopped bool
}

// Runner runs a claimed run: a turn. The same run (same Dedup) may come
// again after a crash; the Runner must not repeat a committed turn.
type Runner interface {
	RunJob(ctx context.Context, job api.CronJob, run Run) Result
}

// Config is what New needs.
type Config struct {
	Records engine.Records
	Runner  Runner
	// Enabled is cron.enabled: false keeps the jobs and runs none.
	Enabled bool
	// MaxConcurrent is cron.maxConcurrentRuns (default 1).
	MaxConcurrent int
	// DefaultAgent, HasAgent and Location describe the agents: the agent
	// of a job without one, whether an id is configured, and its zone
	// (agents.defaults.userTimezone) for cron expressions without tz.
	DefaultAgent string
	HasAgent     func(id string) bool
	Location     func(agentID string) *time.Location
	// MainKey is session.mainKey ("main").
	MainKey string
	// CheckDelivery, if set, says whether a delivery can be resolved
	// (the channel is configured …) when a job is added or edited.
	CheckDelivery func(api.CronDelivery) error
	// Heartbeat, if set, answers the heartbeat routes.
	Heartbeat *Heartbeat
	// Retention is cron.sessionRetention: an isolated run's transcript
	// is deleted this long after the run (DropTranscript does it); 0
	// keeps them.
	Retention      time.Duration
	DropTranscript func(agentID, key, sessionID string) error
	Logger         *slog.Logger
	Now            func() time.Time
}

// Scheduler runs the jobs. It is safe for concurrent use.
type Scheduler struct {
	cfg Config
	log *slog.Logger
	db  engine.Records

	wake chan struct{}
	sem  chan struct{}

	mu sync.Mutex
	// running holds the runs in flight here by job id, with what
	// cancels one (cron rm, disable).
	running map[string]context.CancelFunc
	looping bool // the loop runs (startLoop)
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// New returns a Scheduler; Start runs it.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Records == nil || cfg.Runner == nil {
		return nil, errors.New("schedule: records and a runner are required")
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = 1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MainKey == "" {
		cfg.MainKey = "main"
	}
	if cfg.HasAgent == nil {
		cfg.HasAgent = func(id string) bool { return id == cfg.DefaultAgent }
	}
	if cfg.Location == nil {
		cfg.Location = func(string) *time.Location { return time.Local }
	}
	return &Scheduler{
		cfg:     cfg,
		log:     cfg.Logger.With("part", "cron"),
		db:      cfg.Records,
		wake:    make(chan struct{}, 1),
		sem:     make(chan struct{}, cfg.MaxConcurrent),
		running: map[string]context.CancelFunc{},
	}, nil
}

type pending struct {
	Job api.CronJob `json:"job"` // as claimed
	Run Run         `json:"run"`
}

// Start resumes the runs a crash left claimed and starts the loop. With
// cron.enabled false it does neither (the jobs stay, and the API serves
// them).
func (s *Scheduler) Start(ctx context.Context) error {
	s.mu.Lock()
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.mu.Unlock()
	if !s.cfg.Enabled {
		s.log.Info("cron is disabled (cron.enabled false): no job runs")
		return nil
	}
	var left []pending
	err := s.db.ViewRecords(func(tx engine.RecordTx) error {
		return tx.ForEach(bucketPending, "", func(_ string, raw []byte) error {
			var p pending
			if err := json.Unmarshal(raw, &p); err != nil {
				s.log.Error("unreadable pending cron run dropped", "err", err)
				return nil
			}
			left = append(left, p)
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("read pending cron runs: %w", err)
	}
	var resume []pending
	for _, p := range left {
		if s.cfg.Now().Sub(time.UnixMilli(p.Run.StartedMs)) > maxResumeAge {
			// The session store forgets dedup keys after a week: a turn
			// this old might be run (and sent) a second time.
			s.log.Warn("a cron run left by the last run is too old to resume safely; recorded as an error", "job", p.Job.ID, "run", p.Run.RunID)
			if err := s.finish(p, Result{Status: api.RunError, Error: "the gateway was down too long to resume this run safely"}); err != nil {
				s.log.Error("could not record an old cron run", "err", err)
			}
			continue
		}
		j, err := s.Get(p.Job.ID)
		if err != nil || !j.Enabled {
			// Removed or disabled since: the run is not resumed.
			s.log.Info("a cron run left by the last run is dropped: its job was removed or disabled", "job", p.Job.ID, "run", p.Run.RunID)
			s.dropPending(p)
			continue
		}
		s.mu.Lock()
		s.running[p.Job.ID] = func() {}
		s.mu.Unlock()
		resume = append(resume, p)
	}
	// Resumed runs go first, cron.maxConcurrentRuns at a time, without
	// holding up the gateway's start.
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for _, p := range resume {
			s.log.Info("resuming a cron run left by the last run", "job", p.Job.ID, "run", p.Run.RunID)
			select {
			case s.sem <- struct{}{}:
			case <-s.ctx.Done():
				return
			}
			s.wg.Add(1)
			go s.execute(p)
		}
		// No job: no loop until one is added (Wake starts it): an idle
		// box keeps nothing of the scheduler resident.
		if jobs, err := s.List(false); err != nil || len(jobs) > 0 {
			s.startLoop()
		}
	}()
	return nil
}

// startLoop starts the loop once.
func (s *Scheduler) startLoop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.looping || s.ctx == nil || s.ctx.Err() != nil || !s.cfg.Enabled {
		return
	}
	s.looping = true
	s.wg.Add(1) // under the lock: Stop cancels under it before it waits
	go s.loop()
}

// dropPending forgets a pending run whose job is gone or disabled; its
// run log entry says so.
func (s *Scheduler) dropPending(p pending) {
	r := p.Run.CronRun
	r.Status, r.Error, r.EndedMs = api.RunSkipped, "the job was removed or disabled before the run ended", s.cfg.Now().UnixMilli()
	if err := s.db.UpdateRecords(func(tx engine.RecordTx) error {
		if err := tx.Delete(bucketPending, p.Job.ID); err != nil {
			return err
		}
		var j api.CronJob
		if found, err := tx.Get(bucketJobs, p.Job.ID, &j); err != nil {
			return err
		} else if found {
			j.State.RunningAtMs = 0
			if err := tx.Put(bucketJobs, j.ID, j); err != nil {
				return err
			}
			return tx.Put(bucketRuns, runKey(r), r)
		}
		return nil
	}); err != nil {
		s.log.Warn("could not drop a pending cron run", "job", p.Job.ID, "err", err)
	}
}

// cancelRun stops job id's run in flight, if any (cron rm, disable).
func (s *Scheduler) cancelRun(id string) {
	s.mu.Lock()
	cancel := s.running[id]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Stop stops the loop and waits for the runs in flight (the gateway's
// shutdown cuts their turns; they stay pending and resume at start).
func (s *Scheduler) Stop() {
	s.mu.Lock()
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// Wake makes the loop look at the jobs now (starting it if it was not).
func (s *Scheduler) Wake() {
	s.startLoop()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Scheduler) loop() {
	defer s.wg.Done()
	// The first prune an hour after start: nothing of it is needed at
	// start, and a box that restarts often still prunes (hourly uptime).
	pruned := s.cfg.Now()
	for {
		if now := s.cfg.Now(); now.Sub(pruned) >= time.Hour {
			s.pruneSessions(now)
			s.pruneLogs(now)
			pruned = now
		}
		next := s.tick()
		wait := maxWait
		if !next.IsZero() {
			wait = min(wait, max(next.Sub(s.cfg.Now()), 0))
		}
		t := time.NewTimer(wait)
		select {
		case <-s.ctx.Done():
			t.Stop()
			return
		case <-s.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// tick claims every due job it has room for and returns when the next one
// is due (zero: none).
func (s *Scheduler) tick() time.Time {
	now := s.cfg.Now()
	jobs, err := s.jobs()
	if err != nil {
		s.log.Error("could not read the cron jobs", "err", err)
		return now.Add(maxWait)
	}
	var next time.Time
	for _, j := range jobs {
		if !j.Enabled || j.State.NextRunAtMs == 0 {
			continue
		}
		due := time.UnixMilli(j.State.NextRunAtMs)
		if due.After(now) && j.Schedule.Kind != api.ScheduleAt && j.State.ConsecutiveErrors == 0 {
			// The clock went back (set by hand, or by NTP after a
			// boot with a wrong clock): a next run computed on the
			// later clock would keep the job quiet until it catches up.
			if sp, err := Parse(j.Schedule, s.cfg.Location(j.AgentID), time.UnixMilli(j.CreatedAtMs)); err == nil {
				if n := sp.Next(now); !n.IsZero() && n.Before(due) {
					s.reschedule(j.ID, j.State.NextRunAtMs, n)
					due = n
				}
			}
		}
		if due.After(now) {
			if next.IsZero() || due.Before(next) {
				next = due
			}
			continue
		}
		if s.ctx.Err() != nil {
			return next
		}
		s.mu.Lock()
		_, busy := s.running[j.ID]
		s.mu.Unlock()
		if busy {
			continue
		}
		select {
		case s.sem <- struct{}{}:
		default:
			continue // cron.maxConcurrentRuns: a finishing run wakes the loop
		}
		p, ok, err := s.claim(j.ID, now, false, true)
		if err != nil || !ok {
			<-s.sem
			if err != nil {
				s.log.Error("could not claim a cron run", "job", j.ID, "err", err)
			}
			continue
		}
		s.wg.Add(1)
		go s.execute(p)
	}
	return next
}

// reschedule moves job id's next run from was to next, if it is still was.
func (s *Scheduler) reschedule(id string, was int64, next time.Time) {
	err := s.db.UpdateRecords(func(tx engine.RecordTx) error {
		var j api.CronJob
		if found, err := tx.Get(bucketJobs, id, &j); err != nil || !found || j.State.NextRunAtMs != was {
			return err
		}
		j.State.NextRunAtMs = next.UnixMilli()
		return tx.Put(bucketJobs, id, j)
	})
	if err != nil {
		s.log.Warn("could not reschedule a job after the clock went back", "job", id, "err", err)
	}
}

// claim marks a run of job id as started (one transaction: the pending
// run, the run log's entry, the job's next run). ok is false when the job
// is gone, disabled, already running, or (due) not due.
func (s *Scheduler) claim(id string, now time.Time, manual, due bool) (pending, bool, error) {
	var p pending
	ok := false
	err := s.db.UpdateRecords(func(tx engine.RecordTx) error {
		var j api.CronJob
		found, err := tx.Get(bucketJobs, id, &j)
		if err != nil || !found {
			return err
		}
		var left pending
		if busy, err := tx.Get(bucketPending, id, &left); err != nil || busy {
			return err
		}
		if due && (!j.Enabled || j.State.NextRunAtMs == 0 || j.State.NextRunAtMs > now.UnixMilli()) {
			return nil
		}
		sp, err := Parse(j.Schedule, s.cfg.Location(j.AgentID), time.UnixMilli(j.CreatedAtMs))
		if err != nil {
			return fmt.Errorf("job %s: %w", id, err)
		}
		scheduled := j.State.NextRunAtMs
		if manual || scheduled == 0 {
			scheduled = now.UnixMilli()
		}
		runID := engine.NewID(10)
		p = pending{Run: Run{
			CronRun: api.CronRun{
				JobID: id, RunID: runID, ScheduledMs: scheduled, StartedMs: now.UnixMilli(),
				Status: api.RunRunning, Manual: manual,
				Late: !manual && now.Sub(time.UnixMilli(scheduled)) > LateAfter,
			},
			Dedup:   "cron:" + id + ":" + runID,
			Attempt: 1,
		}}
		if !sp.OneShot() && !manual {
			// The next slot after now: a job missed during downtime
			// runs once, then keeps its schedule.
			j.State.NextRunAtMs = ms(sp.Next(now))
		}
		j.State.RunningAtMs = now.UnixMilli()
		p.Job = j
		p.Run.SessionKey = s.sessionKey(j)
		if err := tx.Put(bucketJobs, id, j); err != nil {
			return err
		}
		if err := tx.Put(bucketPending, id, p); err != nil {
			return err
		}
		ok = true
		return tx.Put(bucketRuns, runKey(p.Run.CronRun), p.Run.CronRun)
	})
	if ok {
		s.mu.Lock()
		s.running[id] = func() {} // execute puts the run's own cancel here
		s.mu.Unlock()
	}
	return p, ok, err
}

// execute runs a claimed run to its end and marks it. The caller holds a
// slot of sem.
func (s *Scheduler) execute(p pending) {
	defer s.wg.Done()
	defer func() {
		<-s.sem
		s.mu.Lock()
		delete(s.running, p.Job.ID)
		s.mu.Unlock()
		s.Wake()
	}()
	log := s.log.With("job", p.Job.ID, "run", p.Run.RunID)
	runCtx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	s.mu.Lock()
	s.running[p.Job.ID] = cancel
	s.mu.Unlock()
	crashpoint.At("cron-after-claim")
	var res Result
	for {
		res = s.cfg.Runner.RunJob(runCtx, p.Job, p.Run)
		if s.ctx.Err() != nil {
			// Shutting down: the run stays pending and resumes at start.
			log.Info("cron run cut by shutdown; it resumes at the next start")
			return
		}
		if runCtx.Err() != nil {
			res = Result{Stopped: true, Error: "stopped: the job was removed or disabled while it ran"}
		}
		if !res.Again {
			break
		}
		if p.Run.Attempt >= maxAttempts {
			res = Result{Status: api.RunError, Error: fmt.Sprintf("the run was cut short %d times (gateway restarts)", p.Run.Attempt)}
			break
		}
		p.Run.Attempt++
		p.Run.Dedup = fmt.Sprintf("cron:%s:%s:%d", p.Job.ID, p.Run.RunID, p.Run.Attempt)
		if err := s.db.UpdateRecords(func(tx engine.RecordTx) error { return tx.Put(bucketPending, p.Job.ID, p) }); err != nil {
			log.Error("could not record a new attempt; left pending", "err", err)
			return
		}
		log.Warn("cron run was cut short before it answered; running it again", "attempt", p.Run.Attempt)
	}
	crashpoint.At("cron-before-finish")
	if err := s.finish(p, res); err != nil {
		log.Error("could not record the end of a cron run; it is marked at the next start", "err", err)
		return
	}
	log.Info("cron run ended", "status", res.Status, "delivered", res.Delivered, "late", p.Run.Late)
}

// finish records the end of a run (one transaction): the run log, the
// job's state, the pending run gone.
func (s *Scheduler) finish(p pending, res Result) error {
	now := s.cfg.Now()
	r := p.Run.CronRun
	if res.Stopped {
		res.Status = api.RunSkipped
	}
	r.EndedMs, r.Status, r.Error, r.Delivered, r.SessionID = now.UnixMilli(), res.Status, res.Error, res.Delivered, res.SessionID
	r.Reply = cut(res.Reply, 300)
	return s.db.UpdateRecords(func(tx engine.RecordTx) error {
		if err := tx.Delete(bucketPending, p.Job.ID); err != nil {
			return err
		}
		var j api.CronJob
		found, err := tx.Get(bucketJobs, p.Job.ID, &j)
		if err != nil || !found {
			return err // removed while it ran: its log went with it
		}
		if err := tx.Put(bucketRuns, runKey(r), r); err != nil {
			return err
		}
		if err := pruneRuns(tx, r.JobID); err != nil {
			return err
		}
		j.State.RunningAtMs = 0
		j.State.LastRunAtMs = r.StartedMs
		j.State.LastStatus = res.Status
		j.State.LastError = res.Error
		j.State.LastDurationMs = r.EndedMs - r.StartedMs
		if j.UpdatedAtMs != p.Job.UpdatedAtMs {
			// Edited while it ran: the edit (a new time, a new
			// schedule) stands; only the outcome is recorded.
			return tx.Put(bucketJobs, j.ID, j)
		}
		oneShot := j.Schedule.Kind == api.ScheduleAt
		switch {
		case res.Stopped:
			if oneShot {
				j.Enabled, j.State.NextRunAtMs = false, 0 // kept: `cron run` runs it again
			}
		case res.Status == api.RunError:
			j.State.ConsecutiveErrors++
			retry := ms(now.Add(Backoff(j.State.ConsecutiveErrors)))
			if oneShot {
				if j.State.ConsecutiveErrors >= maxAttempts {
					j.Enabled, j.State.NextRunAtMs = false, 0
				} else {
					j.State.NextRunAtMs = retry
				}
			} else if !p.Run.Manual {
				// Failures make a job run less often, never more.
				j.State.NextRunAtMs = max(j.State.NextRunAtMs, retry)
			}
		case oneShot && !j.KeepAfterRun && p.Job.Enabled:
			return tx.Delete(bucketJobs, j.ID) // done: OpenClaw's deleteAfterRun
		case oneShot && !p.Job.Enabled:
			// A disabled one-shot run by hand (`cron run`) stays as it was.
		default:
			j.State.ConsecutiveErrors = 0
			if oneShot {
				j.Enabled, j.State.NextRunAtMs = false, 0
			}
		}
		return tx.Put(bucketJobs, j.ID, j)
	})
}

// pruneRuns keeps a job's newest keepRuns log entries.
func pruneRuns(tx engine.RecordTx, jobID string) error {
	var keys []string
	if err := tx.ForEach(bucketRuns, jobID+"/", func(k string, _ []byte) error {
		keys = append(keys, k)
		return nil
	}); err != nil {
		return err
	}
	for i := 0; i < len(keys)-keepRuns; i++ {
		if err := tx.Delete(bucketRuns, keys[i]); err != nil {
			return err
		}
	}
	return nil
}

func runKey(r api.CronRun) string {
	return fmt.Sprintf("%s/%016d-%s", r.JobID, r.StartedMs, r.RunID)
}

// sessionKey is the session a job's runs use.
func (s *Scheduler) sessionKey(j api.CronJob) string {
	switch {
	case j.SessionTarget == api.TargetIsolated:
		return string(engine.AgentSessionKey(j.AgentID, "cron:"+j.ID))
	case j.SessionKey != "":
		return j.SessionKey
	}
	return string(engine.AgentSessionKey(j.AgentID, s.cfg.MainKey))
}

// jobs reads every job, enabled first, then by next run.
func (s *Scheduler) jobs() ([]api.CronJob, error) {
	var out []api.CronJob
	err := s.db.ViewRecords(func(tx engine.RecordTx) error {
		return tx.ForEach(bucketJobs, "", func(_ string, raw []byte) error {
			var j api.CronJob
			if err := json.Unmarshal(raw, &j); err != nil {
				return nil // unreadable: skipped (Get reports it)
			}
			out = append(out, j)
			return nil
		})
	})
	sort.SliceStable(out, func(a, b int) bool {
		ja, jb := out[a], out[b]
		if ja.Enabled != jb.Enabled {
			return ja.Enabled
		}
		if (ja.State.NextRunAtMs == 0) != (jb.State.NextRunAtMs == 0) {
			return jb.State.NextRunAtMs == 0
		}
		if ja.State.NextRunAtMs != jb.State.NextRunAtMs {
			return ja.State.NextRunAtMs < jb.State.NextRunAtMs
		}
		return ja.CreatedAtMs < jb.CreatedAtMs
	})
	return out, err
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// cut is s's first n runes.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

func notFound(id string) error {
	return &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no cron job %q (openclaw cron list shows them)", id)}
}

func badRequest(format string, a ...any) error {
	return &api.Error{Code: api.CodeBadRequest, Message: fmt.Sprintf(format, a...)}
}

// oneLine folds s to one line for logs and names.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// keepDoneLogs is how long the run log of a job that is gone (a finished
// one-shot) is kept: `cron runs` shows a reminder's run after the job was
// deleted, but a reminder a day would otherwise grow the log forever.
const keepDoneLogs = 30 * 24 * time.Hour

// pruneLogs deletes the run-log entries of jobs that are gone, once they
// are older than keepDoneLogs.
func (s *Scheduler) pruneLogs(now time.Time) {
	cutoff := now.Add(-keepDoneLogs).UnixMilli()
	var old []string
	find := func(tx engine.RecordTx) error {
		old = old[:0]
		return tx.ForEach(bucketRuns, "", func(k string, raw []byte) error {
			var r api.CronRun
			if json.Unmarshal(raw, &r) == nil && r.EndedMs != 0 && r.EndedMs < cutoff {
				var j api.CronJob
				if found, err := tx.Get(bucketJobs, r.JobID, &j); err == nil && !found {
					old = append(old, k)
				}
			}
			return nil
		})
	}
	// Read first: a write transaction (and its fsync) only when there is
	// something to delete.
	if err := s.db.ViewRecords(find); err != nil || len(old) == 0 {
		if err != nil {
			s.log.Warn("could not read the run log", "err", err)
		}
		return
	}
	err := s.db.UpdateRecords(func(tx engine.RecordTx) error {
		if err := find(tx); err != nil {
			return err
		}
		for _, k := range old {
			if err := tx.Delete(bucketRuns, k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		s.log.Warn("could not prune the run log", "err", err)
	}
}

// pruneSessions deletes the transcripts of isolated runs that ended more
// than cfg.Retention ago (never the one a job's session shows now) and
// clears them from the run log, which stays.
func (s *Scheduler) pruneSessions(now time.Time) {
	if s.cfg.Retention <= 0 || s.cfg.DropTranscript == nil {
		return
	}
	cutoff := now.Add(-s.cfg.Retention).UnixMilli()
	type old struct {
		key string
		run api.CronRun
	}
	var due []old
	err := s.db.ViewRecords(func(tx engine.RecordTx) error {
		return tx.ForEach(bucketRuns, "", func(k string, raw []byte) error {
			var r api.CronRun
			if json.Unmarshal(raw, &r) == nil && r.SessionID != "" && r.EndedMs != 0 && r.EndedMs < cutoff {
				due = append(due, old{k, r})
			}
			return nil
		})
	})
	if err != nil {
		s.log.Warn("could not read the run log for retention", "err", err)
		return
	}
	for _, o := range due {
		key := engine.SessionKey(o.run.SessionKey)
		if err := s.cfg.DropTranscript(key.AgentID(), o.run.SessionKey, o.run.SessionID); err != nil {
			// The session's current transcript (the last run's) stays
			// until a later run replaces it.
			s.log.Debug("isolated run transcript kept", "run", o.run.RunID, "err", err)
			continue
		}
		o.run.SessionID = ""
		if err := s.db.UpdateRecords(func(tx engine.RecordTx) error { return tx.Put(bucketRuns, o.key, o.run) }); err != nil {
			s.log.Warn("could not update the run log", "err", err)
		}
	}
	if len(due) > 0 {
		s.log.Info("isolated cron run sessions past cron.sessionRetention pruned", "count", len(due))
	}
}
