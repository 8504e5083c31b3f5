package schedule

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/store/bolt"
	"github.com/openclaw-edge/edge/engine/tool"
)

// Clock is a test clock the scheduler reads; Advance wakes nothing by
// itself (the test calls Wake). Exported for the package's external
// tests (integration_test.go).
type Clock struct {
	mu sync.Mutex
	T  time.Time // the time now; set before use
}

func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.T
}

func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.T = c.T.Add(d)
	c.mu.Unlock()
}

// fakeRunner records runs and answers with results from results (then ok).
type fakeRunner struct {
	mu      sync.Mutex
	runs    []Run
	results []Result
	done    chan Run
	block   chan struct{} // when set, a run waits on it
}

func (f *fakeRunner) RunJob(ctx context.Context, job api.CronJob, run Run) Result {
	f.mu.Lock()
	f.runs = append(f.runs, run)
	res := Result{Status: api.RunOK, Reply: "done"}
	if len(f.results) > 0 {
		res, f.results = f.results[0], f.results[1:]
	}
	block := f.block
	f.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return Result{Again: true}
		}
	}
	if f.done != nil {
		f.done <- run
	}
	return res
}

func (f *fakeRunner) Runs() []Run {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Run(nil), f.runs...)
}

func openDB(t *testing.T, path string) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func newSched(t *testing.T, db *bolt.DB, clk *Clock, r Runner) *Scheduler {
	t.Helper()
	s, err := New(Config{Records: db, Runner: r, Enabled: true, DefaultAgent: "main", Now: clk.Now,
		Location: func(string) *time.Location { return time.UTC }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// waitRun waits for the next run the runner finishes.
func waitRun(t *testing.T, f *fakeRunner) Run {
	t.Helper()
	select {
	case r := <-f.done:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no run")
	}
	return Run{}
}

// waitState polls job id until ok holds for it (or for its absence: ok
// gets found false).
func waitState(t *testing.T, s *Scheduler, id string, ok func(j api.CronJob, found bool) bool) api.CronJob {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		j, err := s.Get(id)
		if ok(j, err == nil) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: state %+v, err %v", id, j.State, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var t0 = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

// TestCatchUpAfterDowntime: jobs missed while the gateway was down. A
// one-shot runs once at start and is marked late; a recurring job missed
// many times runs once, then keeps its schedule; a job not yet due waits.
func TestCatchUpAfterDowntime(t *testing.T) {
	dir := t.TempDir()
	clk := &Clock{T: t0}
	db := openDB(t, dir+"/state.db")
	s := newSched(t, db, clk, &fakeRunner{})
	ctx := context.Background()
	at, err := s.Add(ctx, api.CronJob{Enabled: true, Schedule: api.CronSchedule{Kind: api.ScheduleAt, At: t0.Add(10 * time.Minute).Format(time.RFC3339)}, Payload: api.CronPayload{Message: "water the plants"}, Delivery: api.CronDelivery{Mode: api.DeliveryNone}})
	if err != nil {
		t.Fatal(err)
	}
	every, err := s.Add(ctx, api.CronJob{Enabled: true, Schedule: api.CronSchedule{Kind: api.ScheduleEvery, EveryMs: (30 * time.Minute).Milliseconds()}, Payload: api.CronPayload{Message: "check the inbox"}, Delivery: api.CronDelivery{Mode: api.DeliveryNone}})
	if err != nil {
		t.Fatal(err)
	}
	later, err := s.Add(ctx, api.CronJob{Enabled: true, Schedule: api.CronSchedule{Kind: api.ScheduleCron, Expr: "0 18 * * *"}, Payload: api.CronPayload{Message: "evening summary"}, Delivery: api.CronDelivery{Mode: api.DeliveryNone}})
	if err != nil {
		t.Fatal(err)
	}
	// Never started: the gateway was down for five hours.
	db.Close()
	clk.Advance(5*time.Hour + 5*time.Minute)
	db = openDB(t, dir+"/state.db")
	defer db.Close()
	r := &fakeRunner{done: make(chan Run, 10)}
	s = newSched(t, db, clk, r)
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	got := map[string]Run{}
	for range 2 {
		run := waitRun(t, r)
		got[run.JobID] = run
	}
	if run := got[at.ID]; !run.Late || run.ScheduledMs != t0.Add(10*time.Minute).UnixMilli() {
		t.Errorf("one-shot run = %+v, want late, scheduled at its time", run)
	}
	if run := got[every.ID]; !run.Late {
		t.Errorf("recurring run = %+v, want late", run)
	}
	waitState(t, s, at.ID, func(_ api.CronJob, found bool) bool { return !found }) // done: deleted
	j := waitState(t, s, every.ID, func(j api.CronJob, _ bool) bool { return j.State.RunningAtMs == 0 && j.State.LastStatus == api.RunOK })
	// Next: the next 30-minute slot after now (14:05) counted from the
	// job's creation at 09:00 — 14:30, not one per missed slot.
	if want := t0.Add(5*time.Hour + 30*time.Minute).UnixMilli(); j.State.NextRunAtMs != want {
		t.Errorf("next run %s, want %s", time.UnixMilli(j.State.NextRunAtMs).UTC(), time.UnixMilli(want).UTC())
	}
	time.Sleep(50 * time.Millisecond)
	if n := len(r.Runs()); n != 2 {
		t.Errorf("%d runs, want 2 (one per missed job): %+v", n, r.Runs())
	}
	if j, _ := s.Get(later.ID); j.State.LastRunAtMs != 0 {
		t.Errorf("the 18:00 job ran at 14:05: %+v", j.State)
	}
	runs, err := s.Runs(every.ID, 0)
	if err != nil || len(runs) != 1 || runs[0].Status != api.RunOK || !runs[0].Late {
		t.Errorf("runs = %+v, %v", runs, err)
	}
}

// TestBackoff: consecutive failures of a recurring job push its next run
// out 30 s → 1 m → 5 m → 15 m → 60 m (never sooner than its schedule); a
// success returns it to the schedule. A one-shot is tried three times.
func TestBackoff(t *testing.T) {
	clk := &Clock{T: t0}
	db := openDB(t, t.TempDir()+"/state.db")
	defer db.Close()
	fail := Result{Status: api.RunError, Error: "model down"}
	r := &fakeRunner{done: make(chan Run, 20), results: []Result{fail, fail, fail, fail, fail, fail, {Status: api.RunOK}}}
	s := newSched(t, db, clk, r)
	ctx := context.Background()
	j, err := s.Add(ctx, api.CronJob{Enabled: true, Schedule: api.CronSchedule{Kind: api.ScheduleEvery, EveryMs: (10 * time.Second).Milliseconds()}, Payload: api.CronPayload{Message: "poll"}, Delivery: api.CronDelivery{Mode: api.DeliveryNone}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	waits := []time.Duration{30 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, time.Hour}
	for i, w := range waits {
		next := time.UnixMilli(j.State.NextRunAtMs)
		clk.Advance(next.Sub(clk.Now()))
		s.Wake()
		waitRun(t, r)
		ranAt := clk.Now()
		j = waitState(t, s, j.ID, func(j api.CronJob, _ bool) bool { return j.State.ConsecutiveErrors == i+1 && j.State.RunningAtMs == 0 })
		if got := time.UnixMilli(j.State.NextRunAtMs).Sub(ranAt); got != w {
			t.Errorf("after %d errors the next run is in %s, want %s", i+1, got, w)
		}
		if j.State.LastStatus != api.RunError || j.State.LastError != "model down" {
			t.Errorf("state %+v", j.State)
		}
	}
	clk.Advance(time.UnixMilli(j.State.NextRunAtMs).Sub(clk.Now()))
	s.Wake()
	waitRun(t, r)
	ranAt := clk.Now()
	j = waitState(t, s, j.ID, func(j api.CronJob, _ bool) bool { return j.State.LastStatus == api.RunOK && j.State.RunningAtMs == 0 })
	if j.State.ConsecutiveErrors != 0 || time.UnixMilli(j.State.NextRunAtMs).Sub(ranAt) > 10*time.Second {
		t.Errorf("after a success: %+v (ran at %s)", j.State, ranAt)
	}
	for i, w := range []time.Duration{30 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, time.Hour, time.Hour} {
		if got := Backoff(i + 1); got != w {
			t.Errorf("Backoff(%d) = %s, want %s", i+1, got, w)
		}
	}

	// A one-shot that keeps failing: three tries, then disabled, kept.
	r.mu.Lock()
	r.results = []Result{fail, fail, fail}
	r.mu.Unlock()
	once, err := s.Add(ctx, api.CronJob{Enabled: true, Schedule: api.CronSchedule{Kind: api.ScheduleAt, At: clk.Now().Add(time.Minute).Format(time.RFC3339)}, Payload: api.CronPayload{Message: "once"}, Delivery: api.CronDelivery{Mode: api.DeliveryNone}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Edit(j.ID, api.CronPatch{Enabled: new(false)}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		cur, _ := s.Get(once.ID)
		clk.Advance(time.UnixMilli(cur.State.NextRunAtMs).Sub(clk.Now()))
		s.Wake()
		waitRun(t, r)
		waitState(t, s, once.ID, func(j api.CronJob, _ bool) bool { return j.State.ConsecutiveErrors == i+1 && j.State.RunningAtMs == 0 })
	}
	if j, err := s.Get(once.ID); err != nil || j.Enabled || j.State.NextRunAtMs != 0 {
		t.Errorf("a one-shot that failed three times: %+v, %v; want kept and disabled", j, err)
	}
}

// TestResumeClaimedRun: a run claimed before a crash (its pending record
// written, the turn not marked) is run again at start with the same dedup
// key — the key the session store uses to never run a committed turn
// twice — and marked once.
func TestResumeClaimedRun(t *testing.T) {
	dir := t.TempDir()
	clk := &Clock{T: t0}
	db := openDB(t, dir+"/state.db")
	s := newSched(t, db, clk, &fakeRunner{})
	j, err := s.Add(context.Background(), api.CronJob{Enabled: true, Schedule: api.CronSchedule{Kind: api.ScheduleAt, At: t0.Add(time.Minute).Format(time.RFC3339)}, Payload: api.CronPayload{Message: "call the plumber"}, Delivery: api.CronDelivery{Mode: api.DeliveryNone}})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	p, ok, err := s.claim(j.ID, clk.Now(), false, true)
	if err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	// Claimed twice: no.
	if _, ok, _ := s.claim(j.ID, clk.Now(), false, true); ok {
		t.Fatal("a claimed job was claimed again")
	}
	db.Close() // the crash

	db = openDB(t, dir+"/state.db")
	defer db.Close()
	r := &fakeRunner{done: make(chan Run, 4)}
	s = newSched(t, db, clk, r)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	run := waitRun(t, r)
	if run.Dedup != p.Run.Dedup || run.RunID != p.Run.RunID {
		t.Errorf("resumed run %+v, want the claimed one %+v", run, p.Run)
	}
	waitState(t, s, j.ID, func(_ api.CronJob, found bool) bool { return !found })
	time.Sleep(50 * time.Millisecond)
	if n := len(r.Runs()); n != 1 {
		t.Errorf("%d runs, want 1", n)
	}
	runs, _ := s.Runs(j.ID, 0)
	if len(runs) != 1 || runs[0].Status != api.RunOK {
		t.Errorf("run log %+v, want one ok entry", runs)
	}
}

// TestAgainGetsNewAttempt: a turn a crash cut short is run again under a
// new attempt key, at most maxAttempts times.
func TestAgainGetsNewAttempt(t *testing.T) {
	clk := &Clock{T: t0}
	db := openDB(t, t.TempDir()+"/state.db")
	defer db.Close()
	r := &fakeRunner{done: make(chan Run, 10), results: []Result{{Again: true}, {Again: true}, {Again: true}}}
	s := newSched(t, db, clk, r)
	j, err := s.Add(context.Background(), api.CronJob{Enabled: true, Schedule: api.CronSchedule{Kind: api.ScheduleAt, At: t0.Add(time.Minute).Format(time.RFC3339)}, Payload: api.CronPayload{Message: "x"}, Delivery: api.CronDelivery{Mode: api.DeliveryNone}})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	for range 3 {
		waitRun(t, r)
	}
	waitState(t, s, j.ID, func(j api.CronJob, _ bool) bool { return j.State.LastStatus == api.RunError })
	runs := r.Runs()
	seen := map[string]bool{}
	for i, run := range runs {
		if run.Attempt != i+1 || seen[run.Dedup] {
			t.Errorf("run %d: attempt %d dedup %s", i, run.Attempt, run.Dedup)
		}
		seen[run.Dedup] = true
	}
}

func TestAddValidates(t *testing.T) {
	clk := &Clock{T: t0}
	db := openDB(t, t.TempDir()+"/state.db")
	defer db.Close()
	s := newSched(t, db, clk, &fakeRunner{})
	ok := api.CronJob{Enabled: true, Schedule: api.CronSchedule{Kind: api.ScheduleEvery, EveryMs: 60000}, Payload: api.CronPayload{Message: "m"}}
	for _, c := range []struct {
		name string
		edit func(*api.CronJob)
		want string
	}{
		{"no message", func(j *api.CronJob) { j.Payload.Message = " " }, "payload.message"},
		{"unknown agent", func(j *api.CronJob) { j.AgentID = "ops" }, `agent "ops" is not configured`},
		{"past at", func(j *api.CronJob) {
			j.Schedule = api.CronSchedule{Kind: api.ScheduleAt, At: t0.Add(-time.Hour).Format(time.RFC3339)}
		}, "has passed"},
		{"bad target", func(j *api.CronJob) { j.SessionTarget = "owner" }, "sessionTarget"},
		{"current without a session", func(j *api.CronJob) { j.SessionTarget = api.TargetCurrent }, "current"},
		{"other agent's session", func(j *api.CronJob) { j.SessionTarget = "session:agent:ops:main" }, `belongs to agent "ops"`},
		{"bad delivery", func(j *api.CronJob) { j.Delivery.Mode = "shout" }, "delivery.mode"},
		{"bad cron", func(j *api.CronJob) { j.Schedule = api.CronSchedule{Kind: api.ScheduleCron, Expr: "every day"} }, "schedule.expr"},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := ok
			c.edit(&j)
			_, err := s.Add(context.Background(), j)
			var ae *api.Error
			if err == nil || !asAPI(err, &ae) || ae.Code != api.CodeBadRequest || !contains(ae.Message, c.want) {
				t.Fatalf("Add = %v, want bad_request with %q", err, c.want)
			}
		})
	}
	if jobs, _ := s.List(true); len(jobs) != 0 {
		t.Errorf("refused jobs were stored: %+v", jobs)
	}
}

func asAPI(err error, ae **api.Error) bool { return errors.As(err, ae) }

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestRunNeverWaits: with every slot taken, a manual run (the cron tool's,
// from inside a turn) answers at once instead of waiting for a slot the
// turn itself may hold.
func TestRunNeverWaits(t *testing.T) {
	clk := &Clock{T: t0}
	db := openDB(t, t.TempDir()+"/state.db")
	defer db.Close()
	r := &fakeRunner{done: make(chan Run, 4), block: make(chan struct{})}
	s := newSched(t, db, clk, r)
	add := func(msg string) api.CronJob {
		j, err := s.Add(context.Background(), api.CronJob{Enabled: true, Schedule: api.CronSchedule{Kind: api.ScheduleEvery, EveryMs: 3600000}, Payload: api.CronPayload{Message: msg}, Delivery: api.CronDelivery{Mode: api.DeliveryNone}})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	a, b := add("a"), add("b")
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if q, err := s.Run(a.ID, false); err != nil || !q.Enqueued {
		t.Fatalf("first run: %+v %v", q, err)
	}
	done := make(chan api.CronRunQueued, 1)
	go func() { q, _ := s.Run(b.ID, false); done <- q }()
	select {
	case q := <-done:
		if q.Enqueued || !strings.Contains(q.Reason, "in progress") {
			t.Errorf("second run: %+v", q)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run waited for a slot")
	}
	close(r.block)
	waitRun(t, r)
}

// TestRemoveStopsARun: removing a job while it runs stops the run; its
// log goes with it and nothing of it is resumed at the next start.
func TestRemoveStopsARun(t *testing.T) {
	dir := t.TempDir()
	clk := &Clock{T: t0}
	db := openDB(t, dir+"/state.db")
	r := &fakeRunner{block: make(chan struct{})}
	s := newSched(t, db, clk, r)
	j, err := s.Add(context.Background(), api.CronJob{Enabled: true, Schedule: api.CronSchedule{Kind: api.ScheduleAt, At: t0.Add(time.Minute).Format(time.RFC3339)}, Payload: api.CronPayload{Message: "x"}, Delivery: api.CronDelivery{Mode: api.DeliveryNone}})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(r.Runs()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no run")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := s.Remove(j.ID); err != nil {
		t.Fatal(err)
	}
	for s.Status().Running != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the run did not stop")
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.Stop()
	var left int
	_ = db.ViewRecords(func(tx engine.RecordTx) error {
		for _, b := range []string{bucketPending, bucketRuns} {
			_ = tx.ForEach(b, "", func(string, []byte) error { left++; return nil })
		}
		return nil
	})
	if left != 0 {
		t.Errorf("%d pending/run-log records left after cron rm", left)
	}
}

// TestEditDuringRunStands: a one-shot rescheduled while it runs is not
// deleted when the run ends; the edit stands.
func TestEditDuringRunStands(t *testing.T) {
	clk := &Clock{T: t0}
	db := openDB(t, t.TempDir()+"/state.db")
	defer db.Close()
	r := &fakeRunner{done: make(chan Run, 2), block: make(chan struct{})}
	s := newSched(t, db, clk, r)
	j, err := s.Add(context.Background(), api.CronJob{Enabled: true, Schedule: api.CronSchedule{Kind: api.ScheduleAt, At: t0.Add(time.Minute).Format(time.RFC3339)}, Payload: api.CronPayload{Message: "x"}, Delivery: api.CronDelivery{Mode: api.DeliveryNone}})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	deadline := time.Now().Add(5 * time.Second)
	for len(r.Runs()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no run")
		}
		time.Sleep(5 * time.Millisecond)
	}
	tomorrow := clk.Now().Add(24 * time.Hour).Format(time.RFC3339)
	if _, err := s.Edit(j.ID, api.CronPatch{Schedule: &api.CronSchedule{Kind: api.ScheduleAt, At: tomorrow}}); err != nil {
		t.Fatal(err)
	}
	close(r.block)
	waitRun(t, r)
	got := waitState(t, s, j.ID, func(j api.CronJob, found bool) bool { return !found || j.State.RunningAtMs == 0 })
	if got.ID == "" || !got.Enabled || got.Schedule.At != tomorrow || got.State.NextRunAtMs == 0 {
		t.Errorf("after the run: %+v", got)
	}
}

// TestStartDoesNotWaitForResumedRuns: more runs left pending than
// cron.maxConcurrentRuns do not hold up Start; they run one by one.
func TestStartDoesNotWaitForResumedRuns(t *testing.T) {
	dir := t.TempDir()
	clk := &Clock{T: t0}
	db := openDB(t, dir+"/state.db")
	s := newSched(t, db, clk, &fakeRunner{})
	var ids []string
	for i := range 3 {
		j, err := s.Add(context.Background(), api.CronJob{Enabled: true, Schedule: api.CronSchedule{Kind: api.ScheduleAt, At: t0.Add(time.Minute).Format(time.RFC3339)}, Payload: api.CronPayload{Message: fmt.Sprint(i)}, Delivery: api.CronDelivery{Mode: api.DeliveryNone}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	clk.Advance(time.Minute)
	for _, id := range ids {
		if _, ok, err := s.claim(id, clk.Now(), false, true); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	db.Close()
	db = openDB(t, dir+"/state.db")
	defer db.Close()
	r := &fakeRunner{done: make(chan Run, 4), block: make(chan struct{})}
	s = newSched(t, db, clk, r)
	started := make(chan error, 1)
	go func() { started <- s.Start(context.Background()) }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Start waited for the resumed runs")
	}
	close(r.block)
	for range 3 {
		waitRun(t, r)
	}
	s.Stop()
}

// TestToolRefusesDeeperTurns: a turn another session started (depth 1:
// sessions_send, a sub-agent) cannot schedule: the job would later run at
// depth 0, outside the hop limit.
func TestToolRefusesDeeperTurns(t *testing.T) {
	clk := &Clock{T: t0}
	db := openDB(t, t.TempDir()+"/state.db")
	defer db.Close()
	s := newSched(t, db, clk, &fakeRunner{})
	args := []byte(`{"action":"add","in":"10m","message":"later"}`)
	res := s.Tool().Run(context.Background(), tool.Env{AgentID: "main", SessionKey: "agent:main:side", Depth: 1}, args)
	if !res.IsError || !strings.Contains(res.Content[0].Text, "cannot schedule") {
		t.Fatalf("depth 1: %+v", res)
	}
	if res := s.Tool().Run(context.Background(), tool.Env{AgentID: "main", SessionKey: "agent:main:main"}, args); res.IsError {
		t.Fatalf("depth 0: %+v", res)
	}
}

// TestDoneJobLogsPruned: a finished one-shot's run stays in the log
// (`cron runs` shows it) for 30 days, then goes.
func TestDoneJobLogsPruned(t *testing.T) {
	clk := &Clock{T: t0}
	db := openDB(t, t.TempDir()+"/state.db")
	defer db.Close()
	r := &fakeRunner{done: make(chan Run, 1)}
	s := newSched(t, db, clk, r)
	j, err := s.Add(context.Background(), api.CronJob{Enabled: true, Schedule: api.CronSchedule{Kind: api.ScheduleAt, At: t0.Add(time.Minute).Format(time.RFC3339)}, Payload: api.CronPayload{Message: "x"}, Delivery: api.CronDelivery{Mode: api.DeliveryNone}})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	waitRun(t, r)
	waitState(t, s, j.ID, func(_ api.CronJob, found bool) bool { return !found })
	s.pruneLogs(clk.Now().Add(29 * 24 * time.Hour))
	if runs, err := s.Runs(j.ID, 0); err != nil || len(runs) != 1 {
		t.Fatalf("after 29 days: %+v %v", runs, err)
	}
	s.pruneLogs(clk.Now().Add(31 * 24 * time.Hour))
	if runs, err := s.Runs(j.ID, 0); err == nil || len(runs) != 0 {
		t.Fatalf("after 31 days: %+v %v", runs, err)
	}
}

// TestManualRunKeepsADisabledOneShot: `cron run` of a disabled one-shot
// (a test) does not delete it.
func TestManualRunKeepsADisabledOneShot(t *testing.T) {
	clk := &Clock{T: t0}
	db := openDB(t, t.TempDir()+"/state.db")
	defer db.Close()
	r := &fakeRunner{done: make(chan Run, 1)}
	s := newSched(t, db, clk, r)
	j, err := s.Add(context.Background(), api.CronJob{Enabled: false, Schedule: api.CronSchedule{Kind: api.ScheduleAt, At: t0.Add(time.Hour).Format(time.RFC3339)}, Payload: api.CronPayload{Message: "x"}, Delivery: api.CronDelivery{Mode: api.DeliveryNone}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if q, err := s.Run(j.ID, false); err != nil || !q.Enqueued {
		t.Fatalf("run: %+v %v", q, err)
	}
	waitRun(t, r)
	got := waitState(t, s, j.ID, func(j api.CronJob, found bool) bool { return !found || j.State.LastStatus == api.RunOK })
	if got.ID != j.ID || got.Enabled {
		t.Errorf("after a manual run: %+v", got)
	}
}

// TestOldPendingRunNotResumed: a run claimed more than six days before
// the start is not run again (the session store forgets dedup keys after
// a week, so a committed turn might be repeated); it is logged an error.
func TestOldPendingRunNotResumed(t *testing.T) {
	dir := t.TempDir()
	clk := &Clock{T: t0}
	db := openDB(t, dir+"/state.db")
	s := newSched(t, db, clk, &fakeRunner{})
	j, err := s.Add(context.Background(), api.CronJob{Enabled: true, Schedule: api.CronSchedule{Kind: api.ScheduleEvery, EveryMs: 3600000}, Payload: api.CronPayload{Message: "x"}, Delivery: api.CronDelivery{Mode: api.DeliveryNone}})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	if _, ok, err := s.claim(j.ID, clk.Now(), false, true); !ok || err != nil {
		t.Fatal(ok, err)
	}
	db.Close()
	clk.Advance(8 * 24 * time.Hour)
	db = openDB(t, dir+"/state.db")
	defer db.Close()
	r := &fakeRunner{done: make(chan Run, 2)}
	s = newSched(t, db, clk, r)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	runs, err := s.Runs(j.ID, 0)
	if err != nil || len(runs) == 0 || runs[len(runs)-1].Status != api.RunError || !strings.Contains(runs[len(runs)-1].Error, "too long") {
		t.Fatalf("runs %+v %v", runs, err)
	}
	// The job itself goes on, after the error's backoff.
	clk.Advance(time.Minute)
	s.Wake()
	r2 := waitRun(t, r)
	if r2.RunID == runs[len(runs)-1].RunID {
		t.Errorf("the old run was resumed")
	}
}
