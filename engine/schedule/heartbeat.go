package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/delivery"
	"github.com/openclaw-edge/edge/engine/gateway"
	"github.com/openclaw-edge/edge/engine/prompt"
	"github.com/openclaw-edge/edge/engine/session"
	"github.com/openclaw-edge/edge/engine/transcript"
)

// The heartbeat is OpenClaw's periodic check-in: every so often (default
// 30 minutes) the agent reads its checklist, HEARTBEAT.md, and either says
// something worth sending or answers HEARTBEAT_OK, which is never sent
// and leaves no trace in the main session's context (the turn is moved
// off the session's active branch with a leaf entry, as OpenClaw prunes
// it). Nothing runs — and no model is woken — when the checklist is
// missing or has no tasks, outside active hours, or (skipWhenBusy) while
// the session is answering.

// HeartbeatOK is the reply that means "nothing to report".
const HeartbeatOK = "HEARTBEAT_OK"

// DefaultHeartbeatPrompt is OpenClaw's heartbeat prompt.
const DefaultHeartbeatPrompt = "Read HEARTBEAT.md if it exists (workspace context). Follow it strictly. Do not infer or repeat old tasks from prior chats. If nothing needs attention, reply HEARTBEAT_OK."

// DefaultAckMaxChars: a reply that is HEARTBEAT_OK plus at most this much
// other text counts as HEARTBEAT_OK (OpenClaw's ackMaxChars).
const DefaultAckMaxChars = 300

// Skip reasons.
const (
	SkipQuietHours = "quiet-hours"
	SkipBusy       = "busy"
	SkipEmptyFile  = "empty-heartbeat-file"
	SkipDisabled   = "disabled"
	SkipNoTarget   = "no-target"
)

// HeartbeatAgent is one agent's heartbeat (agents.defaults.heartbeat and
// agents.list[].heartbeat, resolved by the wiring).
type HeartbeatAgent struct {
	AgentID string
	Every   time.Duration // 0: off
	// Target: "none", "last" (the owner's last contact) or a channel.
	Target, To, Account string
	ActiveHours         *ActiveHours
	Model               string // "" the agent's, or DefaultModel's
	// DefaultModel, if set, picks the model of a beat when Model is ""
	// (the wiring: the smallest installed local chat model when the
	// agent's own is remote — a beat every 30 minutes should not bill an
	// API); "" keeps the agent's.
	DefaultModel    func(agentModel string) string
	LightContext    bool
	IsolatedSession bool
	SkipWhenBusy    bool
	Prompt          string
	AckMaxChars     int
}

// ActiveHours is the window a heartbeat may run in: [Start, End) minutes
// after local midnight in Loc; End < Start wraps past midnight.
type ActiveHours struct {
	Start, End int
	Loc        *time.Location
}

// ParseActiveHours reads OpenClaw's activeHours {start: "08:00", end:
// "22:00", timezone}; end "24:00" is midnight.
func ParseActiveHours(start, end string, loc *time.Location) (*ActiveHours, error) {
	parse := func(field, s string) (int, error) {
		var h, m int
		if _, err := fmt.Sscanf(s, "%d:%d", &h, &m); err != nil || len(s) != 5 || h < 0 || m < 0 || m > 59 || h > 24 || h == 24 && m != 0 {
			return 0, fmt.Errorf("activeHours.%s: %q is not a time HH:MM (00:00 to 24:00)", field, s)
		}
		return h*60 + m, nil
	}
	a, err := parse("start", start)
	if err != nil {
		return nil, err
	}
	b, err := parse("end", end)
	if err != nil {
		return nil, err
	}
	if a == b {
		return nil, fmt.Errorf("activeHours: start and end are both %s: the heartbeat would never run", start)
	}
	if loc == nil {
		loc = time.Local
	}
	return &ActiveHours{Start: a, End: b, Loc: loc}, nil
}

// Contains reports whether t is inside the window.
func (w *ActiveHours) Contains(t time.Time) bool {
	lt := t.In(w.Loc)
	m := lt.Hour()*60 + lt.Minute()
	if w.Start < w.End {
		return m >= w.Start && m < w.End
	}
	return m >= w.Start || m < w.End
}

// HeartbeatConfig is what NewHeartbeat needs.
type HeartbeatConfig struct {
	Agents  []HeartbeatAgent
	G       *gateway.Gateway
	Targets Targets // nil: nothing is delivered
	Records engine.Records
	Logger  *slog.Logger
	Now     func() time.Time
}

// Heartbeat runs the agents' heartbeats.
type Heartbeat struct {
	cfg    HeartbeatConfig
	log    *slog.Logger
	agents map[string]*HeartbeatAgent

	mu     sync.Mutex
	last   map[string]*api.HeartbeatRun
	next   map[string]time.Time
	timers map[string]*time.Timer
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	runMu  sync.Mutex // one heartbeat at a time
}

const bucketHeartbeat = "heartbeat" // <agent id> → api.HeartbeatRun, the last tick

// NewHeartbeat returns the heartbeats of cfg.Agents; Start runs them.
func NewHeartbeat(cfg HeartbeatConfig) *Heartbeat {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	h := &Heartbeat{cfg: cfg, log: cfg.Logger.With("part", "heartbeat"), agents: map[string]*HeartbeatAgent{},
		last: map[string]*api.HeartbeatRun{}, next: map[string]time.Time{}, timers: map[string]*time.Timer{}}
	for i := range cfg.Agents {
		a := &cfg.Agents[i]
		if a.AckMaxChars <= 0 {
			a.AckMaxChars = DefaultAckMaxChars
		}
		if a.Prompt == "" {
			a.Prompt = DefaultHeartbeatPrompt
		}
		h.agents[a.AgentID] = a
	}
	return h
}

// Start arms a timer per agent whose heartbeat is on. The first beat
// comes one interval after the last one recorded (or after start).
func (h *Heartbeat) Start(ctx context.Context) {
	h.mu.Lock()
	h.ctx, h.cancel = context.WithCancel(ctx)
	h.mu.Unlock()
	for id, a := range h.agents {
		var last api.HeartbeatRun
		found := false
		if h.cfg.Records != nil {
			_ = h.cfg.Records.ViewRecords(func(tx engine.RecordTx) error {
				var err error
				found, err = tx.Get(bucketHeartbeat, id, &last)
				return err
			})
		}
		h.mu.Lock()
		if found {
			h.last[id] = &last
		}
		h.mu.Unlock()
		if a.Every <= 0 {
			continue
		}
		next := h.cfg.Now().Add(a.Every)
		if found {
			if t := time.UnixMilli(last.AtMs).Add(a.Every); t.Before(next) {
				next = t
			}
		}
		h.arm(a, next)
	}
}

// arm sets a's next beat. A timer, not a goroutine that waits: an idle
// box runs (and keeps resident) nothing of the heartbeat until a beat is
// due.
func (h *Heartbeat) arm(a *HeartbeatAgent, next time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ctx.Err() != nil {
		return
	}
	h.next[a.AgentID] = next
	wait := max(next.Sub(h.cfg.Now()), 0)
	h.timers[a.AgentID] = time.AfterFunc(wait, func() { h.fire(a) })
}

// fire is a's timer: the beat, then the next one armed.
func (h *Heartbeat) fire(a *HeartbeatAgent) {
	h.mu.Lock()
	if h.ctx.Err() != nil {
		h.mu.Unlock()
		return
	}
	h.wg.Add(1) // under the lock, so Stop's Wait never races an Add
	next := h.next[a.AgentID]
	h.mu.Unlock()
	defer h.wg.Done()
	now := h.cfg.Now()
	if now.Before(next) { // a clock that moved: not due yet
		h.arm(a, next)
		return
	}
	next = now.Add(a.Every)
	h.mu.Lock()
	h.next[a.AgentID] = next
	h.mu.Unlock()
	h.beat(h.ctx, a, false)
	h.arm(a, next)
}

// Stop stops the timers and waits for a beat in flight.
func (h *Heartbeat) Stop() {
	h.mu.Lock()
	if h.cancel != nil {
		h.cancel()
	}
	for _, t := range h.timers {
		t.Stop()
	}
	h.mu.Unlock()
	h.wg.Wait()
}

// Status is an agent's heartbeat ("" the default agent).
func (h *Heartbeat) Status(agentID string) (api.HeartbeatStatus, error) {
	a, err := h.agent(agentID)
	if err != nil {
		return api.HeartbeatStatus{}, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	st := api.HeartbeatStatus{AgentID: a.AgentID, Enabled: a.Every > 0, EveryMs: a.Every.Milliseconds(), Target: a.Target}
	if n := h.next[a.AgentID]; !n.IsZero() {
		st.NextRunAtMs = n.UnixMilli()
	}
	if l := h.last[a.AgentID]; l != nil {
		c := *l
		st.Last = &c
	}
	return st, nil
}

// RunNow runs one beat of the agent now (whatever its interval) and
// returns the status after it.
func (h *Heartbeat) RunNow(ctx context.Context, agentID string) (api.HeartbeatStatus, error) {
	a, err := h.agent(agentID)
	if err != nil {
		return api.HeartbeatStatus{}, err
	}
	h.beat(ctx, a, true)
	return h.Status(a.AgentID)
}

func (h *Heartbeat) agent(id string) (*HeartbeatAgent, error) {
	if id == "" && h.cfg.G != nil {
		id = h.cfg.G.DefaultAgent()
	}
	a := h.agents[id]
	if a == nil {
		return nil, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("agent %q has no heartbeat configured", id)}
	}
	return a, nil
}

// beat is one heartbeat tick: skipped, or a turn.
func (h *Heartbeat) beat(ctx context.Context, a *HeartbeatAgent, manual bool) {
	h.runMu.Lock()
	defer h.runMu.Unlock()
	now := h.cfg.Now()
	run := api.HeartbeatRun{AtMs: now.UnixMilli()}
	defer func() { h.record(a.AgentID, run) }()
	g := h.cfg.G
	ag := g.Agent(a.AgentID)
	if ag == nil {
		run.Status, run.Error = "error", "agent not configured"
		return
	}
	if !manual && a.ActiveHours != nil && !a.ActiveHours.Contains(now) {
		run.Status, run.Reason = "skipped", SkipQuietHours
		return
	}
	checklist, err := readChecklist(ag.Workspace)
	if err != nil {
		run.Status, run.Error = "error", err.Error()
		return
	}
	if checklist == "" {
		run.Status, run.Reason = "skipped", SkipEmptyFile
		return
	}
	key := engine.AgentSessionKey(ag.ID, g.MainKey())
	if a.IsolatedSession {
		key = engine.AgentSessionKey(ag.ID, "heartbeat")
	}
	if a.SkipWhenBusy && g.Busy(key) {
		run.Status, run.Reason = "skipped", SkipBusy
		return
	}
	if a.Target != "" && a.Target != "none" {
		// Nobody to tell: no model is woken for a beat whose news could
		// not be sent.
		if h.cfg.Targets == nil {
			run.Status, run.Reason = "skipped", SkipNoTarget+": no channel is configured"
			return
		}
		if _, _, err := h.cfg.Targets.Announce(api.CronDelivery{Mode: api.DeliveryAnnounce, Channel: a.Target, To: a.To, Account: a.Account}); err != nil {
			run.Status, run.Reason = "skipped", SkipNoTarget+": "+err.Error()
			return
		}
	}
	model := a.Model
	if model == "" && a.DefaultModel != nil {
		model = a.DefaultModel(ag.Model)
	}
	if model != "" && model != ag.Model {
		// The agent's own chain stays behind it: a beat fails over like
		// a turn.
		c := *ag
		c.Model = model
		c.Fallbacks = append([]string{ag.Model}, ag.Fallbacks...)
		ag = &c
	}
	text := a.Prompt
	if a.LightContext {
		// Only the checklist: a small prompt for a small model.
		c := *ag
		c.PromptMode = prompt.ModeMinimal
		ag = &c
		text += "\n\nHEARTBEAT.md:\n" + checklist
	}
	var (
		ack    bool
		label  string
		notice error
	)
	reply := func(r delivery.Reply) ([]session.Record, error) {
		if IsAck(r.Text, a.AckMaxChars) {
			ack = true
			return nil, nil
		}
		if a.Target == "" || a.Target == "none" || h.cfg.Targets == nil {
			return nil, nil
		}
		l, fn, err := h.cfg.Targets.Announce(api.CronDelivery{Mode: api.DeliveryAnnounce, Channel: a.Target, To: a.To, Account: a.Account})
		if err != nil {
			notice = err
			return nil, nil // the reply stays in the session
		}
		label = l
		return fn(r)
	}
	dedup := fmt.Sprintf("heartbeat:%s:%d:%s", ag.ID, now.UnixMilli(), engine.NewID(6))
	// The main session keeps its own channel and name.
	var hbMeta session.Meta
	if a.IsolatedSession {
		hbMeta = session.Meta{ChatType: string(engine.ChatDirect), Channel: "heartbeat", DisplayName: "heartbeat"}
	}
	o := &gateway.Origin{
		In: engine.Inbound{Channel: "heartbeat", ChatType: engine.ChatDirect, ChatID: "heartbeat", SenderID: "heartbeat",
			SenderName: "Heartbeat", MessageID: dedup, Text: text, Timestamp: now},
		Trusted: prompt.Trusted{Channel: "heartbeat", Provider: "heartbeat", ChatType: engine.ChatDirect},
		Meta:    hbMeta,
		Main:    key == engine.AgentSessionKey(ag.ID, g.MainKey()),
		Owner:   true,
		Reply:   reply,
	}
	res, err := g.RunTurn(ctx, ag, key, o, dedup, notices(h.cfg.Targets))
	if h.cfg.Targets != nil && label != "" {
		h.cfg.Targets.Wake()
	}
	if err != nil {
		run.Status, run.Error = "error", err.Error()
		return
	}
	run.Reply = cut(res.Reply, 300)
	switch {
	case ack || res.Suppressed:
		run.Status = "ok"
		if !a.IsolatedSession {
			if err := h.prune(ctx, ag.ID, key, dedup); err != nil {
				h.log.Warn("could not take the HEARTBEAT_OK turn off the session's context", "err", err)
			}
		}
	case label != "":
		run.Status, run.Delivered = "sent", label
	default:
		run.Status = "ok"
		if notice != nil {
			run.Reason = "not delivered: " + notice.Error()
		} else {
			run.Reason = "no-target"
		}
	}
}

func (h *Heartbeat) record(agentID string, run api.HeartbeatRun) {
	h.mu.Lock()
	h.last[agentID] = &run
	h.mu.Unlock()
	h.log.Info("heartbeat", "agent", agentID, "status", run.Status, "reason", run.Reason, "delivered", run.Delivered, "err", run.Error)
	if h.cfg.Records == nil {
		return
	}
	if err := h.cfg.Records.UpdateRecords(func(tx engine.RecordTx) error { return tx.Put(bucketHeartbeat, agentID, run) }); err != nil {
		h.log.Warn("could not record the heartbeat", "err", err)
	}
}

// prune moves the session's active leaf back to before the heartbeat's
// message, if nothing else was said after it: HEARTBEAT_OK leaves no
// trace in what the model reads next, nor in the session's history.
func (h *Heartbeat) prune(ctx context.Context, agentID string, key engine.SessionKey, dedup string) error {
	g := h.cfg.G
	release, err := g.Lane(ctx, key)
	if err != nil {
		return err
	}
	defer release()
	out, ok, err := g.Sessions().Outcome(dedup)
	if err != nil || !ok {
		return err
	}
	_, entries, err := g.Sessions().History(agentID, key)
	if err != nil {
		return err
	}
	path := transcript.Path(entries, transcript.ActiveLeaf(entries))
	at := -1
	for i, e := range path {
		if e.ID == out.InboundID {
			at = i
		}
	}
	if at < 0 {
		return errors.New("the heartbeat's message is not on the session's branch")
	}
	for _, e := range path[at+1:] {
		if e.Type != transcript.EntryMessage && e.Type != transcript.EntryCustom {
			return nil // a compaction or a reset followed: leave it
		}
		if e.Message != nil && e.Message.Role == engine.RoleUser {
			return nil // someone spoke after it
		}
		if e.Message != nil && (len(e.Message.ToolCalls()) > 0 || e.Message.Role == engine.RoleToolResult) {
			return nil // it acted: what it did stays in the history
		}
	}
	target, _ := json.Marshal(path[at].ParentID)
	if path[at].ParentID == "" {
		target = []byte("null")
	}
	_, err = g.Sessions().AppendEntries(agentID, key, transcript.Entry{Type: transcript.EntryLeaf, Extra: map[string]json.RawMessage{"targetId": target}})
	return err
}

// IsAck reports whether a heartbeat reply means "nothing to report":
// HEARTBEAT_OK at its start or end, with at most maxOther characters
// besides (markup around the token allowed).
func IsAck(text string, maxOther int) bool {
	t := strings.TrimSpace(text)
	t = strings.Trim(t, "*_`\"' ")
	if !strings.HasPrefix(t, HeartbeatOK) && !strings.HasSuffix(t, HeartbeatOK) {
		return false
	}
	rest := strings.TrimSpace(strings.Replace(t, HeartbeatOK, "", 1))
	return len([]rune(rest)) <= maxOther
}

// emptyLine is compiled on first use: every start would pay for it.
var emptyLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\s*(#.*|[-*+]\s*(\[[ xX]?\])?\s*|<!--.*-->)?\s*$`)
})

// readChecklist reads HEARTBEAT.md from the workspace; "" when it is
// missing or holds nothing but headings, empty list items and comments
// (OpenClaw's "effectively empty").
func readChecklist(workspace string) (string, error) {
	// Inside the workspace only (a link out of it is not followed), a
	// regular file only (a FIFO would block the beat, /dev/zero would
	// fill memory), and at most 16 KiB read.
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return "", fmt.Errorf("open the workspace: %w", err)
	}
	defer root.Close()
	f, err := root.OpenFile("HEARTBEAT.md", os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read HEARTBEAT.md: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", errors.New("HEARTBEAT.md is not a regular file")
	}
	const maxChecklist = 16 << 10
	data, err := io.ReadAll(io.LimitReader(f, maxChecklist))
	if err != nil {
		return "", fmt.Errorf("read HEARTBEAT.md: %w", err)
	}
	text := string(data)
	for _, line := range strings.Split(text, "\n") {
		if !emptyLine().MatchString(line) {
			return strings.TrimSpace(text), nil
		}
	}
	return "", nil
}
