package schedule_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/access"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/gateway"
	"github.com/openclaw-edge/edge/engine/gateway/gatewaytest"
	"github.com/openclaw-edge/edge/engine/inbound"
	"github.com/openclaw-edge/edge/engine/schedule"
	"github.com/openclaw-edge/edge/engine/session"
	"github.com/openclaw-edge/edge/engine/tool"
	"github.com/openclaw-edge/edge/engine/tool/fs"
	"github.com/openclaw-edge/edge/engine/transcript"
)

const owner = "+15551234567"

// harness is the whole path a reminder takes, in process: a channel
// adapter at the platform's boundary, the channel side, the gateway with
// a scripted model and the real tools, the scheduler and the heartbeat
// on a real bbolt file.
type harness struct {
	g     *gateway.Gateway
	in    *inbound.Inbound
	model *gatewaytest.Model
	wa    *gatewaytest.Adapter
	sched *schedule.Scheduler
	hb    *schedule.Heartbeat
	clk   *schedule.Clock
	ws    string
	db    engine.Records
	reg   *tool.Registry
}

func newHarness(t *testing.T, hb []schedule.HeartbeatAgent, steps ...gatewaytest.Step) *harness {
	t.Helper()
	return newHarnessModels(t, "", hb, steps...)
}

// newHarnessModels is newHarness whose model fails over to switchTo first
// ("": it does not).
func newHarnessModels(t *testing.T, switchTo string, hb []schedule.HeartbeatAgent, steps ...gatewaytest.Step) *harness {
	t.Helper()
	db, ws := gatewaytest.State(t, t.TempDir())
	clk := &schedule.Clock{T: time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)}
	m := &gatewaytest.Model{Steps: steps}
	wa := gatewaytest.NewAdapter("whatsapp")
	owners := []string{"whatsapp:" + owner}
	reg := tool.NewRegistry(fs.Tools(fs.Config{})...)
	g, err := gateway.New(gateway.Config{
		Agents:   []gateway.Agent{{ID: "main", Name: "Claw", Workspace: ws, Model: "fake/model", MaxTurns: 5, Location: time.UTC}},
		Sessions: session.NewManager(db, session.Config{DailyResetHour: new(-1), Now: clk.Now}),
		Tools:    reg,
		Models:   gatewaytest.Models{M: m, SwitchTo: switchTo},
		Version:  "test",
		Now:      clk.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	in, err := inbound.New(g, inbound.Config{
		Records: db, Owners: owners, Now: clk.Now,
		// Strangers may talk (dmPolicy open): the tools are still the
		// owner's alone.
		Channels: []inbound.Account{{Adapter: wa, Policy: &access.Policy{Channel: "whatsapp", Common: channel.Common{DMPolicy: "open", AllowFrom: []string{"*"}}, Owners: owners}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	heart := schedule.NewHeartbeat(schedule.HeartbeatConfig{Agents: hb, G: g, Targets: in, Records: db, Now: clk.Now})
	s, err := schedule.New(schedule.Config{
		Records: db, Runner: &schedule.Turns{G: g, Targets: in, Now: clk.Now}, Enabled: true,
		DefaultAgent: "main", HasAgent: func(id string) bool { return g.Agent(id) != nil },
		Location: func(string) *time.Location { return time.UTC }, CheckDelivery: in.CheckDelivery,
		Heartbeat: heart, Now: clk.Now,
		Retention: 24 * time.Hour,
		DropTranscript: func(agentID, key, sessionID string) error {
			return db.DeleteTranscript(agentID, engine.SessionKey(key), sessionID)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	reg.Add(s.Tool())
	ctx, cancel := context.WithCancel(context.Background())
	if err := in.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		s.Stop()
		in.Stop()
	})
	return &harness{g: g, in: in, model: m, wa: wa, sched: s, hb: heart, clk: clk, ws: ws, db: db, reg: reg}
}

func dm(sender, id, text string) engine.Inbound {
	return engine.Inbound{Channel: "whatsapp", ChatType: engine.ChatDirect, ChatID: strings.TrimPrefix(sender, "+") + "@s.whatsapp.net", SenderID: sender, MessageID: id, Text: text}
}

// TestReminderFromAChat: "remind me in 2 minutes to water the plants"
// from the owner's phone makes a job through the cron tool; two minutes
// later the reminder is a turn of the main session whose reply reaches
// the owner's chat, once, and the run log says so.
func TestReminderFromAChat(t *testing.T) {
	h := newHarness(t, nil,
		gatewaytest.CallTool("cron", map[string]any{"action": "add", "in": "2m", "message": "Remind the user to water the plants"}),
		gatewaytest.Reply("Okay, I will remind you at 09:02."),
		gatewaytest.Reply("Time to water the plants!"),
	)
	h.wa.Deliver(t, dm(owner, "A1", "remind me in 2 minutes to water the plants"))
	sent := h.wa.WaitSent(t, 1)
	if !strings.Contains(sent[0].Text, "remind you") {
		t.Fatalf("reply %+v", sent[0])
	}
	jobs, err := h.sched.List(true)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("jobs = %+v, %v", jobs, err)
	}
	j := jobs[0]
	if j.Schedule.Kind != api.ScheduleAt || j.SessionKey != "agent:main:main" || j.Delivery.Channel != api.DeliveryLast || j.CreatedBy != "agent:agent:main:main" {
		t.Errorf("job %+v", j)
	}
	if want := h.clk.Now().Add(2 * time.Minute).UnixMilli(); j.State.NextRunAtMs != want {
		t.Errorf("next run %d, want %d", j.State.NextRunAtMs, want)
	}

	h.clk.Advance(time.Minute)
	h.sched.Wake()
	time.Sleep(50 * time.Millisecond)
	if n := len(h.wa.WaitSent(t, 1)); n != 1 {
		t.Fatalf("something was sent before the reminder was due: %d", n)
	}
	h.clk.Advance(time.Minute)
	h.sched.Wake()
	sent = h.wa.WaitSent(t, 2)
	if sent[1].Text != "Time to water the plants!" || sent[1].ChatID != "15551234567@s.whatsapp.net" {
		t.Fatalf("reminder %+v", sent[1])
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := h.sched.Get(j.ID); err != nil {
			break // a one-shot is deleted after its run
		}
		if time.Now().After(deadline) {
			t.Fatal("the one-shot job was not deleted after its run")
		}
		time.Sleep(5 * time.Millisecond)
	}
	runs, err := h.sched.Runs(j.ID, 0)
	if err != nil || len(runs) != 1 || runs[0].Status != api.RunOK || runs[0].Late || !strings.Contains(runs[0].Delivered, "whatsapp:") {
		t.Fatalf("runs %+v, %v", runs, err)
	}
	// The reminder's turn is in the main session: the model saw the job's
	// message there.
	reqs := h.model.Requests()
	last := reqs[len(reqs)-1].Messages
	if txt := last[len(last)-1].Text(); !strings.Contains(txt, "Remind the user to water the plants") || !strings.Contains(txt, "[cron:"+j.ID) {
		t.Errorf("the reminder turn's message: %q", txt)
	}
	time.Sleep(50 * time.Millisecond)
	if n := len(h.wa.WaitSent(t, 2)); n != 2 {
		t.Errorf("%d messages sent, want 2", n)
	}
}

// TestStrangerCannotSchedule: a non-owner (dmPolicy open) asks for a
// reminder and the model, talked into it, calls the cron tool: the call
// is refused and no job exists.
func TestStrangerCannotSchedule(t *testing.T) {
	h := newHarness(t, nil,
		gatewaytest.CallTool("cron", map[string]any{"action": "add", "every": "1m", "session": "main", "message": "Run exec rm -rf ~ and report"}),
		gatewaytest.Reply("Sorry, I can't."),
	)
	h.wa.Deliver(t, dm("+15559990000", "S1", "remind me every minute"))
	h.wa.WaitSent(t, 1)
	jobs, _ := h.sched.List(true)
	if len(jobs) != 0 {
		t.Fatalf("a stranger created jobs: %+v", jobs)
	}
	reqs := h.model.Requests()
	if len(reqs) < 2 {
		t.Fatalf("%d model calls", len(reqs))
	}
	msgs := reqs[1].Messages
	res := msgs[len(msgs)-1]
	if res.Role != engine.RoleToolResult || !res.IsError || !strings.Contains(res.Text(), "not allowed") {
		t.Fatalf("tool result %+v", res)
	}
	for _, sp := range reqs[0].Tools {
		if sp.Name == "cron" {
			t.Errorf("a stranger's turn offered the cron tool")
		}
	}
}

// TestHeartbeat: a beat whose reply is HEARTBEAT_OK sends nothing and
// leaves no trace in the main session; one with something to say is
// sent to the owner's last contact, once; outside active hours and with
// an empty checklist no model is called.
func TestHeartbeat(t *testing.T) {
	hb := []schedule.HeartbeatAgent{{AgentID: "main", Every: 30 * time.Minute, Target: "last", SkipWhenBusy: true}}
	h := newHarness(t, hb,
		gatewaytest.Reply("Hello!"),
		gatewaytest.Reply("HEARTBEAT_OK"),
		gatewaytest.Reply("**HEARTBEAT_OK**"),
		gatewaytest.Reply("You have an urgent mail from Bob."),
	)
	ctx := context.Background()
	// No checklist: skipped, no model call.
	st, err := h.hb.RunNow(ctx, "main")
	if err != nil || st.Last == nil || st.Last.Status != "skipped" || st.Last.Reason != schedule.SkipEmptyFile {
		t.Fatalf("no HEARTBEAT.md: %+v %v", st, err)
	}
	if err := os.WriteFile(filepath.Join(h.ws, "HEARTBEAT.md"), []byte("# Checklist\n\n- [ ]\n<!-- nothing -->\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st, _ := h.hb.RunNow(ctx, "main"); st.Last.Reason != schedule.SkipEmptyFile {
		t.Fatalf("headings only: %+v", st.Last)
	}
	if n := len(h.model.Requests()); n != 0 {
		t.Fatalf("%d model calls for skipped beats", n)
	}
	// The owner writes once: that is "last".
	h.wa.Deliver(t, dm(owner, "A1", "hi"))
	h.wa.WaitSent(t, 1)
	if err := os.WriteFile(filepath.Join(h.ws, "HEARTBEAT.md"), []byte("# Checklist\n- Check the inbox for urgent mail\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := activeTexts(t, h)
	for _, want := range []string{"ok", "ok"} {
		st, err := h.hb.RunNow(ctx, "main")
		if err != nil || st.Last.Status != want {
			t.Fatalf("beat: %+v %v", st.Last, err)
		}
	}
	if got := activeTexts(t, h); strings.Join(got, "|") != strings.Join(before, "|") {
		t.Errorf("HEARTBEAT_OK left a trace in the main session:\n%q\nwas\n%q", got, before)
	}
	st, err = h.hb.RunNow(ctx, "main")
	if err != nil || st.Last.Status != "sent" || !strings.Contains(st.Last.Delivered, "whatsapp:") {
		t.Fatalf("beat with news: %+v %v", st.Last, err)
	}
	sent := h.wa.WaitSent(t, 2)
	if sent[1].Text != "You have an urgent mail from Bob." || sent[1].ChatID != "15551234567@s.whatsapp.net" {
		t.Fatalf("sent %+v", sent[1])
	}
	time.Sleep(50 * time.Millisecond)
	if n := len(h.wa.WaitSent(t, 2)); n != 2 {
		t.Errorf("%d messages sent, want 2 (HEARTBEAT_OK never)", n)
	}

	// Quiet hours: 22:00–07:00 and it is 09:00 → the timer's beat is
	// skipped without a model call (RunNow is the owner's explicit ask,
	// so the loop's beat is driven here through a fresh Heartbeat).
	quiet, _ := schedule.ParseActiveHours("22:00", "07:00", time.UTC)
	calls := len(h.model.Requests())
	// The last beat (the store's record) was two minutes ago, so the
	// loop's first beat is due at once.
	if err := h.db.UpdateRecords(func(tx engine.RecordTx) error {
		return tx.Put("heartbeat", "main", api.HeartbeatRun{AtMs: h.clk.Now().Add(-2 * time.Minute).UnixMilli(), Status: "ok"})
	}); err != nil {
		t.Fatal(err)
	}
	q := schedule.NewHeartbeat(schedule.HeartbeatConfig{Agents: []schedule.HeartbeatAgent{{AgentID: "main", Every: time.Minute, Target: "last", ActiveHours: quiet}}, G: h.g, Targets: h.in, Records: h.db, Now: h.clk.Now})
	qctx, cancel := context.WithCancel(ctx)
	defer cancel()
	q.Start(qctx)
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, _ := q.Status("main")
		if st.Last != nil && st.Last.Reason != "" {
			if st.Last.Status != "skipped" || st.Last.Reason != schedule.SkipQuietHours {
				t.Fatalf("quiet hours: %+v", st.Last)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the heartbeat loop did not tick")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	q.Stop()
	if n := len(h.model.Requests()); n != calls {
		t.Errorf("a beat in quiet hours called the model")
	}
}

// activeTexts is the main session's active branch, as texts.
func activeTexts(t *testing.T, h *harness) []string {
	t.Helper()
	_, entries, err := h.g.Sessions().History("main", "agent:main:main")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range transcript.Path(entries, transcript.ActiveLeaf(entries)) {
		if e.Message != nil {
			out = append(out, string(e.Message.Role)+": "+e.Message.Text())
		}
	}
	return out
}

func TestIsAck(t *testing.T) {
	for _, c := range []struct {
		text string
		want bool
	}{
		{"HEARTBEAT_OK", true},
		{"  **HEARTBEAT_OK**  ", true},
		{"All quiet. HEARTBEAT_OK", true},
		{"HEARTBEAT_OK " + strings.Repeat("x", 301), false},
		{"Bob mailed: urgent.", false},
		{"heartbeat_ok", false},
	} {
		if got := schedule.IsAck(c.text, schedule.DefaultAckMaxChars); got != c.want {
			t.Errorf("IsAck(%q) = %v, want %v", c.text, got, c.want)
		}
	}
}

// TestIsolatedRunRetention: each run of an isolated job has a fresh
// session; the transcripts of runs that ended more than
// cron.sessionRetention ago are deleted, the current one is kept, and the
// run log stays.
func TestIsolatedRunRetention(t *testing.T) {
	h := newHarness(t, nil, gatewaytest.Reply("first run"), gatewaytest.Reply("second run"))
	j, err := h.sched.Add(context.Background(), api.CronJob{Enabled: true, SessionTarget: api.TargetIsolated,
		Schedule: api.CronSchedule{Kind: api.ScheduleEvery, EveryMs: (10 * time.Minute).Milliseconds()},
		Payload:  api.CronPayload{Message: "summarize the inbox"}, Delivery: api.CronDelivery{Mode: api.DeliveryNone}})
	if err != nil {
		t.Fatal(err)
	}
	waitRuns := func(n int) []api.CronRun {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			runs, _ := h.sched.Runs(j.ID, 0)
			if len(runs) >= n && runs[0].Status == api.RunOK {
				return runs
			}
			if time.Now().After(deadline) {
				t.Fatalf("runs %+v", runs)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	h.clk.Advance(10 * time.Minute)
	h.sched.Wake()
	waitRuns(1)
	h.clk.Advance(10 * time.Minute)
	h.sched.Wake()
	runs := waitRuns(2)
	first, second := runs[1], runs[0]
	if first.SessionID == "" || second.SessionID == "" || first.SessionID == second.SessionID || first.SessionKey != "agent:main:cron:"+j.ID {
		t.Fatalf("runs %+v", runs)
	}
	if _, err := h.sched.Edit(j.ID, api.CronPatch{Enabled: new(false)}); err != nil {
		t.Fatal(err)
	}
	h.clk.Advance(25 * time.Hour)
	h.sched.Wake()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, _, err := h.g.Sessions().Transcript(first.SessionID); errors.Is(err, session.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first run's transcript was not pruned")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, _, err := h.g.Sessions().Transcript(second.SessionID); err != nil {
		t.Errorf("the current run's transcript: %v", err)
	}
	for { // the log is updated after the transcript is gone
		runs, _ = h.sched.Runs(j.ID, 0)
		if len(runs) == 2 && runs[1].SessionID == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run log after pruning %+v", runs)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if runs[0].SessionID != second.SessionID {
		t.Errorf("the current run's log entry lost its session: %+v", runs[0])
	}
}

// TestScheduledApprovalReachesOwner: a scheduled turn that needs an exec
// approval tells the owner on their channel (nobody watches a scheduled
// turn); the owner's answer lets it finish and its reply is delivered.
func TestScheduledApprovalReachesOwner(t *testing.T) {
	h := newHarness(t, nil,
		gatewaytest.Reply("Hello!"),
		gatewaytest.RunCmd("backup.sh"),
		gatewaytest.Reply("Backup done."),
	)
	ex := &gatewaytest.Exec{Allow: &gatewaytest.MemAllowlist{}}
	h.reg.Add(ex)
	h.wa.Deliver(t, dm(owner, "A1", "hi"))
	h.wa.WaitSent(t, 1)
	if _, err := h.sched.Add(context.Background(), api.CronJob{Enabled: true,
		Schedule: api.CronSchedule{Kind: api.ScheduleAt, At: h.clk.Now().Add(time.Minute).Format(time.RFC3339)},
		Payload:  api.CronPayload{Message: "run the backup"}}); err != nil {
		t.Fatal(err)
	}
	h.clk.Advance(time.Minute)
	h.sched.Wake()
	sent := h.wa.WaitSent(t, 2)
	if !strings.Contains(sent[1].Text, "Approval needed") || !strings.Contains(sent[1].Text, "backup.sh") {
		t.Fatalf("notice %+v", sent[1])
	}
	pending := h.g.Approvals()
	if len(pending) != 1 {
		t.Fatalf("approvals %+v", pending)
	}
	if _, err := h.g.Decide(engine.SessionKey(pending[0].SessionKey), pending[0].ID, tool.DecisionAllowOnce); err != nil {
		t.Fatal(err)
	}
	sent = h.wa.WaitSent(t, 3)
	if sent[2].Text != "Backup done." {
		t.Fatalf("reply %+v", sent[2])
	}
	if got := ex.Got(); len(got) != 1 || got[0] != "backup.sh: allow-once" {
		t.Errorf("exec %v", got)
	}
}

// TestStopEndsAScheduledTurn: the owner's /stop ends a scheduled turn for
// good: it is not run again, the run log says it was stopped, and the
// one-shot is kept, disabled, for `cron run`.
func TestStopEndsAScheduledTurn(t *testing.T) {
	started := make(chan struct{})
	hang := func(ctx context.Context, _ *engine.ChatRequest, _ func(engine.Event)) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	}
	h := newHarness(t, nil, hang)
	j, err := h.sched.Add(context.Background(), api.CronJob{Enabled: true,
		Schedule: api.CronSchedule{Kind: api.ScheduleAt, At: h.clk.Now().Add(time.Minute).Format(time.RFC3339)},
		Payload:  api.CronPayload{Message: "a long job"}, Delivery: api.CronDelivery{Mode: api.DeliveryNone}})
	if err != nil {
		t.Fatal(err)
	}
	h.clk.Advance(time.Minute)
	h.sched.Wake()
	<-started
	if _, err := h.g.Command(context.Background(), h.g.Agent("main"), "agent:main:main", "stop", "", func(api.Event) {}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := h.sched.Get(j.ID)
		if err == nil && got.State.RunningAtMs == 0 && got.State.LastStatus != "" {
			if got.Enabled || got.State.LastStatus != api.RunSkipped || !strings.Contains(got.State.LastError, "stopped") {
				t.Fatalf("after /stop: %+v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not end: %+v %v", got, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(h.model.Requests()); n != 1 {
		t.Errorf("%d model calls, want 1 (a stopped run is not run again)", n)
	}
}

// TestJobInAContactsSessionHasNoTools: a job bound to a session where a
// contact writes runs without tools: their text must not steer the
// owner's tools.
func TestJobInAContactsSessionHasNoTools(t *testing.T) {
	h := newHarness(t, nil, gatewaytest.Reply("hi"), gatewaytest.Reply("done"))
	key := "agent:main:whatsapp:direct:+15559990000"
	if _, err := h.sched.Add(context.Background(), api.CronJob{Enabled: true, SessionTarget: "session:" + key,
		Schedule: api.CronSchedule{Kind: api.ScheduleAt, At: h.clk.Now().Add(time.Minute).Format(time.RFC3339)},
		Payload:  api.CronPayload{Message: "follow up"}, Delivery: api.CronDelivery{Mode: api.DeliveryNone}}); err != nil {
		t.Fatal(err)
	}
	h.clk.Advance(time.Minute)
	h.sched.Wake()
	deadline := time.Now().Add(10 * time.Second)
	for len(h.model.Requests()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no run")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := len(h.model.Requests()[0].Tools); n != 0 {
		t.Errorf("a job in a contact's session offered %d tools", n)
	}
}

// TestScheduleLimits: a schedule that would run more often than the
// scheduler allows is refused; the tool (a model, maybe an injected one)
// may not schedule more often than once a minute.
func TestScheduleLimits(t *testing.T) {
	h := newHarness(t, nil,
		gatewaytest.CallTool("cron", map[string]any{"action": "add", "cron": "*/30 * * * * *", "message": "spam"}),
		gatewaytest.Reply("ok"))
	_, err := h.sched.Add(context.Background(), api.CronJob{Enabled: true, Schedule: api.CronSchedule{Kind: api.ScheduleCron, Expr: "* * * * * *"}, Payload: api.CronPayload{Message: "x"}})
	if err == nil || !strings.Contains(err.Error(), "more often") {
		t.Errorf("every second: %v", err)
	}
	h.wa.Deliver(t, dm(owner, "A1", "ping me every 30 seconds"))
	h.wa.WaitSent(t, 1)
	reqs := h.model.Requests()
	msgs := reqs[1].Messages
	if res := msgs[len(msgs)-1]; !res.IsError || !strings.Contains(res.Text(), "once a minute") {
		t.Errorf("tool result %+v", res)
	}
	if jobs, _ := h.sched.List(true); len(jobs) != 0 {
		t.Errorf("jobs %+v", jobs)
	}
}

// TestHeartbeatFileConfined: HEARTBEAT.md is read inside the workspace, as
// a regular file, bounded: a link out of the workspace or a FIFO is an
// error for that beat, never a read of another file or a hang.
func TestHeartbeatFileConfined(t *testing.T) {
	hb := []schedule.HeartbeatAgent{{AgentID: "main", Every: 30 * time.Minute, Target: "last", LightContext: true}}
	h := newHarness(t, hb)
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("TOP SECRET outside the workspace"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(h.ws, "HEARTBEAT.md")); err != nil {
		t.Fatal(err)
	}
	st, err := h.hb.RunNow(context.Background(), "main")
	if err != nil || st.Last.Status != "error" {
		t.Fatalf("a link out of the workspace: %+v %v", st.Last, err)
	}
	os.Remove(filepath.Join(h.ws, "HEARTBEAT.md"))
	if err := syscall.Mkfifo(filepath.Join(h.ws, "HEARTBEAT.md"), 0o600); err != nil {
		t.Skip("no FIFO: ", err)
	}
	done := make(chan api.HeartbeatStatus, 1)
	go func() { st, _ := h.hb.RunNow(context.Background(), "main"); done <- st }()
	select {
	case st := <-done:
		if st.Last.Status != "error" {
			t.Errorf("a FIFO: %+v", st.Last)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a FIFO HEARTBEAT.md blocked the heartbeat")
	}
	if n := len(h.model.Requests()); n != 0 {
		t.Errorf("%d model calls", n)
	}
}

// TestCutTurnWithToolsNotRerun: a scheduled turn a crash cut short after
// it had called a tool is not run again at start (the tool would act
// twice: a message sent twice, a job added twice); one cut before any
// tool is.
func TestCutTurnWithToolsNotRerun(t *testing.T) {
	h := newHarness(t, nil, gatewaytest.Reply("ran again"))
	sess := h.g.Sessions()
	key := engine.SessionKey("agent:main:main")
	cut := func(dedup string, withTool bool) {
		t.Helper()
		if _, err := sess.BeginTurn("main", key, session.Meta{}, dedup, engine.UserText("[cron:x] send the report")); err != nil {
			t.Fatal(err)
		}
		if withTool {
			call := engine.Message{Role: engine.RoleAssistant, Content: []engine.Block{engine.ToolCall{ID: "c1", Name: "message", Arguments: []byte(`{}`)}.Block()}, StopReason: engine.StopToolUse}
			if _, err := sess.Append("main", key, call); err != nil {
				t.Fatal(err)
			}
		}
		if err := sess.CloseInterrupted("main", key, "interrupted"); err != nil {
			t.Fatal(err)
		}
	}
	turns := &schedule.Turns{G: h.g, Targets: h.in, Now: h.clk.Now}
	job := api.CronJob{ID: "x", AgentID: "main", SessionTarget: api.TargetMain, Payload: api.CronPayload{Message: "send the report"}, Delivery: api.CronDelivery{Mode: api.DeliveryNone}}
	run := func(dedup string) schedule.Result {
		return turns.RunJob(context.Background(), job, schedule.Run{CronRun: api.CronRun{JobID: "x", RunID: "r", SessionKey: string(key)}, Dedup: dedup, Attempt: 1})
	}
	cut("cron:x:r1", true)
	if res := run("cron:x:r1"); res.Again || res.Status != api.RunError || !strings.Contains(res.Error, "used tools") {
		t.Errorf("cut after a tool call: %+v", res)
	}
	cut("cron:x:r2", false)
	if res := run("cron:x:r2"); !res.Again {
		t.Errorf("cut before any tool: %+v, want it run again", res)
	}
	if n := len(h.model.Requests()); n != 0 {
		t.Errorf("%d model calls", n)
	}
}

// TestScheduledTurnFailsOver: a job whose model is down fails over like
// any turn: the run is ok, the reply delivered, the failover recorded in
// the session.
func TestScheduledTurnFailsOver(t *testing.T) {
	h := newHarnessModels(t, "backup/model", nil, gatewaytest.Reply("Hello!"), gatewaytest.Reply("Time to stretch."))
	h.wa.Deliver(t, dm(owner, "A1", "hi"))
	h.wa.WaitSent(t, 1)
	j, err := h.sched.Add(context.Background(), api.CronJob{Enabled: true,
		Schedule: api.CronSchedule{Kind: api.ScheduleAt, At: h.clk.Now().Add(time.Minute).Format(time.RFC3339)},
		Payload:  api.CronPayload{Message: "remind me to stretch"}})
	if err != nil {
		t.Fatal(err)
	}
	h.clk.Advance(time.Minute)
	h.sched.Wake()
	if sent := h.wa.WaitSent(t, 2); sent[1].Text != "Time to stretch." {
		t.Fatalf("sent %+v", sent[1])
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		runs, _ := h.sched.Runs(j.ID, 0)
		if _, err := h.sched.Get(j.ID); err != nil && len(runs) == 1 && runs[0].Status == api.RunOK {
			break // done and deleted; its run stays in the log
		}
		if time.Now().After(deadline) {
			got, err := h.sched.Get(j.ID)
			t.Fatalf("the job did not finish: %+v %v %+v", got, err, runs)
		}
		time.Sleep(5 * time.Millisecond)
	}
	_, entries, err := h.g.Sessions().History("main", "agent:main:main")
	if err != nil {
		t.Fatal(err)
	}
	failovers := 0
	for _, e := range entries {
		if e.CustomType == gateway.FailoverEntryType {
			failovers++
		}
	}
	if failovers < 2 {
		t.Errorf("%d failover entries, want one per turn (2)", failovers)
	}
}

// TestUndeliverableReminderIsNotLost: a reminder whose reply could reach
// nobody (the owner never wrote from a channel, so there is no "last")
// is an error, not an ok: no model is woken, the job stays and is tried
// again with backoff. A heartbeat with nobody to tell is skipped.
func TestUndeliverableReminderIsNotLost(t *testing.T) {
	hb := []schedule.HeartbeatAgent{{AgentID: "main", Every: 30 * time.Minute, Target: "last"}}
	h := newHarness(t, hb, gatewaytest.Reply("never"))
	j, err := h.sched.Add(context.Background(), api.CronJob{Enabled: true,
		Schedule: api.CronSchedule{Kind: api.ScheduleAt, At: h.clk.Now().Add(time.Minute).Format(time.RFC3339)},
		Payload:  api.CronPayload{Message: "call the plumber"}})
	if err != nil {
		t.Fatal(err)
	}
	h.clk.Advance(time.Minute)
	h.sched.Wake()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := h.sched.Get(j.ID)
		if err != nil {
			t.Fatalf("the job is gone: %v", err)
		}
		if got.State.LastStatus != "" && got.State.RunningAtMs == 0 {
			if got.State.LastStatus != api.RunError || !strings.Contains(got.State.LastError, "not delivered") || got.State.NextRunAtMs != h.clk.Now().Add(30*time.Second).UnixMilli() {
				t.Fatalf("after an undeliverable run: %+v", got.State)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no run: %+v", got.State)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := os.WriteFile(filepath.Join(h.ws, "HEARTBEAT.md"), []byte("- check the inbox\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := h.hb.RunNow(context.Background(), "main")
	if err != nil || st.Last.Status != "skipped" || !strings.HasPrefix(st.Last.Reason, schedule.SkipNoTarget) {
		t.Fatalf("heartbeat with nobody to tell: %+v %v", st.Last, err)
	}
	if n := len(h.model.Requests()); n != 0 {
		t.Errorf("%d model calls", n)
	}
}
