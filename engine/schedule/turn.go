package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/delivery"
	"github.com/openclaw-edge/edge/engine/gateway"
	"github.com/openclaw-edge/edge/engine/prompt"
	"github.com/openclaw-edge/edge/engine/session"
)

// Targets is the channel side (engine/inbound) as the scheduler needs it:
// where an announced reply goes.
type Targets interface {
	// Announce resolves a delivery to one chat: a label for logs and the
	// run log ("imessage:+1555…"), and a function that turns a reply into
	// outbox records (committed with the end of the turn). Channel "last"
	// (or "") is the owner's last contact; To "" on a channel is the
	// owner's id there.
	Announce(d api.CronDelivery) (label string, reply func(delivery.Reply) ([]session.Record, error), err error)
	// Wake makes the outbox send what a turn just queued.
	Wake()
	// ApprovalNotice tells the owner that a scheduled turn waits for an
	// exec approval (nobody watches it otherwise).
	ApprovalNotice(a *api.Approval)
}

// notices forwards a scheduled turn's approval requests to the owner.
func notices(t Targets) func(api.Event) {
	return func(ev api.Event) {
		if t != nil && ev.Type == api.EventApproval && ev.Approval != nil {
			t.ApprovalNotice(ev.Approval)
		}
	}
}

// Turns runs cron jobs as turns through the gateway (the scheduler's
// Runner).
type Turns struct {
	G       *gateway.Gateway
	Targets Targets // nil: no channels; announce deliveries are not sent
	Logger  *slog.Logger
	Now     func() time.Time
}

// RunJob runs one claimed run as a turn of the job's session and reports
// how it went. A run given again after a crash reads the outcome of the
// turn its dedup key committed instead of running it twice.
func (t *Turns) RunJob(ctx context.Context, job api.CronJob, run Run) Result {
	log := t.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := time.Now
	if t.Now != nil {
		now = t.Now
	}
	ag := t.G.Agent(job.AgentID)
	if ag == nil {
		return Result{Status: api.RunError, Error: fmt.Sprintf("agent %q is not configured", job.AgentID)}
	}
	key := engine.SessionKey(run.SessionKey)
	if out, ok, err := t.G.Sessions().Outcome(run.Dedup); err == nil && ok {
		return t.isolated(job, out, t.outcome(out))
	}
	if job.Payload.Model != "" {
		c := *ag
		c.Model = job.Payload.Model
		ag = &c
	}
	if job.SessionTarget == api.TargetIsolated && run.Attempt == 1 {
		// A fresh session per run (OpenClaw's isolated jobs).
		release, err := t.G.Lane(ctx, key)
		if err != nil {
			return Result{Again: true}
		}
		_, err = t.G.Sessions().Reset(ag.ID, key, meta(job))
		release()
		if err != nil {
			return Result{Status: api.RunError, Error: "could not start the run's session: " + err.Error()}
		}
	}
	res := Result{}
	var reply func(delivery.Reply) ([]session.Record, error)
	if job.Delivery.Mode == api.DeliveryAnnounce {
		// A reply that cannot reach anyone is not run at all: a reminder
		// nobody gets is an error (retried, then kept), never an ok.
		if t.Targets == nil {
			return Result{Status: api.RunError, Error: "not delivered: no channel is configured"}
		} else if label, fn, err := t.Targets.Announce(job.Delivery); err != nil {
			log.Warn("cron reply cannot be delivered; the run is an error", "job", job.ID, "err", err)
			return Result{Status: api.RunError, Error: "not delivered: " + err.Error()}
		} else {
			res.Delivered = label
			reply = func(r delivery.Reply) ([]session.Record, error) {
				if run.Late {
					r.Text = fmt.Sprintf("(late: this was due at %s) %s", time.UnixMilli(run.ScheduledMs).In(ag.Location).Format("Mon 15:04"), r.Text)
				}
				return fn(r)
			}
		}
	}
	// An isolated run's session is the job's own; any other keeps the
	// channel and name it has (empty fields change nothing).
	var runMeta session.Meta
	if _, exists, _ := t.G.Sessions().Get(ag.ID, key); job.SessionTarget == api.TargetIsolated || !exists {
		runMeta = meta(job)
	}
	text := fmt.Sprintf("[cron:%s %s] %s", job.ID, oneLine(job.Name), job.Payload.Message)
	if run.Late {
		text += fmt.Sprintf("\n(This was due at %s; the gateway was down or busy then, so it runs late.)", time.UnixMilli(run.ScheduledMs).In(ag.Location).Format(time.RFC1123))
	}
	o := &gateway.Origin{
		In: engine.Inbound{
			Channel: "cron", ChatType: engine.ChatDirect, ChatID: "cron:" + job.ID,
			SenderID: "cron", SenderName: "Scheduler", MessageID: run.RunID, Text: text, Timestamp: now(),
		},
		Trusted: prompt.Trusted{Channel: "cron", Provider: "cron", ChatType: engine.ChatDirect, MessageID: run.RunID},
		Meta:    runMeta,
		Main:    key == engine.AgentSessionKey(ag.ID, t.G.MainKey()),
		// Only the owner makes jobs: the CLI (the owner's socket or an
		// operator device) or the cron tool, which only owners' turns
		// have (gateway.runTurn gives nobody else tools). Still, a run
		// in a session where contacts write (a job bound to a group
		// chat) has no tools: their text must not steer the owner's.
		Owner: gateway.OwnSession(key, t.G.MainKey()),
		Reply: reply,
	}
	r, err := t.G.RunTurn(ctx, ag, key, o, run.Dedup, notices(t.Targets))
	if t.Targets != nil && reply != nil {
		t.Targets.Wake()
	}
	if err != nil {
		var ae *api.Error
		if errors.As(err, &ae) && ae.Code == api.CodeAborted {
			if ctx.Err() != nil {
				return Result{Again: true} // shutdown, cron rm, disable: the scheduler decides
			}
			return Result{Stopped: true, Error: "stopped (/stop)"}
		}
		res.Status, res.Error, res.Delivered = api.RunError, err.Error(), ""
		return res
	}
	if r.Command == "duplicate" {
		if out, ok, err := t.G.Sessions().Outcome(run.Dedup); err == nil && ok {
			return t.isolated(job, out, t.outcome(out))
		}
		return Result{Status: api.RunOK}
	}
	res.Status, res.Reply = api.RunOK, r.Reply
	if job.SessionTarget == api.TargetIsolated {
		res.SessionID = r.SessionID
	}
	if r.Suppressed {
		res.Delivered = "" // a silent reply (NO_REPLY) sends nothing
	}
	return res
}

// outcome is the result of a run whose turn was committed before (a run
// resumed after a crash). A turn the crash cut short runs again, unless
// it had already used tools: running it again would repeat what they did
// (a message sent, a job added), so it is reported instead.
func (t *Turns) outcome(out session.TurnOutcome) Result {
	text := ""
	if out.Answer != nil {
		text = out.Answer.Text()
	}
	switch out.State {
	case session.OutcomeReply:
		return Result{Status: api.RunOK, Reply: text, Delivered: "(queued before a restart)"}
	case session.OutcomeInterrupted, session.OutcomeOpen:
		if t.usedTools(out) {
			return Result{Status: api.RunError, Error: "a restart cut the run short after it had used tools; it is not run again, so they do not act twice"}
		}
		return Result{Again: true}
	case session.OutcomeFailed:
		if out.Answer != nil && out.Answer.StopReason == engine.StopAborted {
			return Result{Again: true} // cut by a shutdown: nothing was sent
		}
		return Result{Status: api.RunError, Error: text}
	}
	return Result{Status: api.RunOK}
}

func meta(job api.CronJob) session.Meta {
	return session.Meta{ChatType: string(engine.ChatDirect), Channel: "cron", DisplayName: "cron: " + cut(oneLine(job.Name), 60)}
}

// isolated notes an isolated run's transcript in a result read back
// after a restart, so cron.sessionRetention prunes it too.
func (t *Turns) isolated(job api.CronJob, out session.TurnOutcome, res Result) Result {
	if job.SessionTarget == api.TargetIsolated && !res.Again {
		res.SessionID = out.SessionID
	}
	return res
}

// usedTools reports whether the turn out started made a tool call
// (unknown: true, the careful answer).
func (t *Turns) usedTools(out session.TurnOutcome) bool {
	_, entries, err := t.G.Sessions().Transcript(out.SessionID)
	if err != nil {
		return true
	}
	after := false
	for _, e := range entries {
		if e.ID == out.InboundID {
			after = true
			continue
		}
		if after && e.Message != nil && (len(e.Message.ToolCalls()) > 0 || e.Message.Role == engine.RoleToolResult) {
			return true
		}
	}
	return false
}
