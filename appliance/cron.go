package main

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/config"
	"github.com/openclaw-edge/edge/engine/schedule"
)

// testClockEnv shifts the gateway's clock (a Go duration, e.g. "1m55s")
// in a test binary run as the gateway (cron_e2e_test.go sets
// testClockHook): end-to-end tests restart a real gateway a little before
// a reminder is due instead of waiting minutes. A gateway built by `make
// build` has no hook and ignores it.
const testClockEnv = "OPENCLAW_TEST_CLOCK_OFFSET"

// testClockHook is set by the tests; nil in the gateway.
var testClockHook func() func() time.Time

// testClock returns the shifted clock testClockEnv asks for; nil: none.
func testClock() func() time.Time {
	if testClockHook == nil {
		return nil
	}
	return testClockHook()
}

// buildScheduler wires the scheduler and the heartbeat over the gateway
// and the channel side, and adds the agent's cron tool.
func (m *Main) buildScheduler(wr *wiring) error {
	cfg, log, gw := m.Config, wr.log, m.Gateway
	loc := func(agentID string) *time.Location {
		if ag := gw.Agent(agentID); ag != nil && ag.Location != nil {
			return ag.Location
		}
		return time.Local
	}
	hb := schedule.NewHeartbeat(schedule.HeartbeatConfig{
		Agents:  heartbeatAgents(cfg, log, loc, cheapLocalModel(wr)),
		G:       gw,
		Targets: m.Inbound,
		Records: m.DB,
		Logger:  log,
		Now:     m.Now,
	})
	sch, err := schedule.New(schedule.Config{
		Records:       m.DB,
		Runner:        &schedule.Turns{G: gw, Targets: m.Inbound, Logger: log, Now: m.Now},
		Enabled:       cfg.Cron.IsEnabled(),
		MaxConcurrent: cfg.Cron.MaxConcurrentRuns,
		DefaultAgent:  cfg.DefaultAgentID(),
		HasAgent:      func(id string) bool { return gw.Agent(id) != nil },
		Location:      loc,
		MainKey:       gw.MainKey(),
		CheckDelivery: m.Inbound.CheckDelivery,
		Heartbeat:     hb,
		Retention:     cfg.Cron.Retention(),
		DropTranscript: func(agentID, key, sessionID string) error {
			return m.DB.DeleteTranscript(agentID, engine.SessionKey(key), sessionID)
		},
		Logger: log,
		Now:    m.Now,
	})
	if err != nil {
		return err
	}
	wr.reg.Add(sch.Tool())
	wr.sched, wr.heartbeat = sch, hb
	return nil
}

// startScheduler resumes the runs a crash left and starts the loops
// (after READY: nothing of it is needed to answer).
func (m *Main) startScheduler(wr *wiring) {
	ctx, stop := context.WithCancel(context.Background())
	wr.stopSched = stop
	wr.atExit(stop)
	if err := wr.sched.Start(ctx); err != nil {
		wr.log.Error("the scheduler could not start; no cron job runs until the next start", "err", err)
	}
	wr.heartbeat.Start(ctx)
}

// heartbeatAgents resolves each agent's heartbeat. OpenClaw's rule: when
// any agent has a heartbeat block of its own, only those agents beat.
func heartbeatAgents(cfg *config.Config, log *slog.Logger, loc func(string) *time.Location, pick func(string) string) []schedule.HeartbeatAgent {
	var out []schedule.HeartbeatAgent
	own := false
	ids := cfg.AgentIDs()
	for _, id := range ids {
		if ra, ok := cfg.Agent(id); ok && ra.HeartbeatOwn {
			own = true
		}
	}
	for _, id := range ids {
		ra, ok := cfg.Agent(id)
		if !ok || own && !ra.HeartbeatOwn {
			continue
		}
		h := ra.Heartbeat
		every := 30 * time.Minute
		if h.Every != "" {
			d, err := config.ParseDuration(h.Every)
			if err != nil {
				log.Warn("heartbeat.every is not a duration; the heartbeat is off", "agent", id, "err", err)
				d = 0
			}
			every = d
		}
		target := h.Target
		if target == "" {
			target = "last"
		}
		a := schedule.HeartbeatAgent{
			AgentID: id, Every: every, Target: target, To: h.To, Account: h.AccountID,
			Model: h.Model, LightContext: h.LightContext, IsolatedSession: h.IsolatedSession,
			SkipWhenBusy: h.SkipWhenBusy == nil || *h.SkipWhenBusy,
			DefaultModel: pick,
			Prompt:       strings.TrimSpace(h.Prompt), AckMaxChars: h.AckMaxChars,
		}
		if ah := h.ActiveHours; ah != nil {
			l := loc(id)
			if ah.Timezone != "" {
				if z, err := time.LoadLocation(ah.Timezone); err == nil {
					l = z
				}
			}
			w, err := schedule.ParseActiveHours(ah.Start, ah.End, l)
			if err != nil {
				log.Warn("heartbeat.activeHours ignored", "agent", id, "err", err)
			} else {
				a.ActiveHours = w
			}
		}
		out = append(out, a)
	}
	return out
}

// cheapLocalModel is the heartbeat's default model: when the agent's model
// is remote and a local chat model is installed, the smallest one (a
// check-in every 30 minutes should not bill an API or wait on the
// network); else the agent's own. Asked at each beat: a model pulled
// later counts.
func cheapLocalModel(wr *wiring) func(agentModel string) string {
	return func(agentModel string) string {
		if wr.registry == nil || strings.HasPrefix(agentModel, "local/") {
			return ""
		}
		best := ""
		var size int64
		for _, e := range wr.registry.List() {
			if !e.HasChatTemplate || e.Architecture == "bert" {
				continue // an embedding model, or one that cannot chat
			}
			if best == "" || e.Size < size {
				best, size = e.Name, e.Size
			}
		}
		if best == "" {
			return ""
		}
		return "local/" + best
	}
}
