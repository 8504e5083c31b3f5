package gateway

// Exec approvals (docs/design.md §3.7): the table of pending approvals, the
// approver a turn's tools ask through, the owner's decisions (slash commands
// in the session, or the control API from any terminal) and the allowlist
// endpoints.
//
// Choices where the spec was silent:
//   - Only the owner decides, and every decision is explicit: a plain
//     /approve is allow-once; allow-always and elevated must be named.
//     Decisions come from the control API (authorized below the handler:
//     the socket's peer credentials) or from a slash command sent through
//     it; model output is never parsed as a command, so the model can
//     neither approve nor elevate.
//   - /approve and /deny find the approval by id wherever it was raised
//     (another chat, another channel, the CLI's session), as the control
//     API does: every path to them is the owner's (a channel refuses them
//     to anyone else: access.Privileged), and an owner's exec asking in
//     one chat is often answered from another. In a chat they are handled
//     ahead of the chat's queue (channels.dispatch), since the turn that
//     waits for the answer holds that queue.
//   - An approval that was answered, expired or whose turn ended stays in
//     the table for a while as a tombstone, so a late answer gets "expired"
//     or "already answered" rather than a bare "unknown id".
//   - An answer that races the timeout wins if the owner was told it was
//     accepted: both sides settle under the gateway's lock.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/tool"
)

// Allowlist is the persisted per-agent exec allowlist, as the gateway needs
// it: the exec tool checks and adds entries itself (exec.Allowlist is the
// first two methods); the owner lists, adds and removes them through the
// control API. Entries match exactly (tool.AllowEntry).
type Allowlist interface {
	Allowed(agentID string, e tool.AllowEntry) (bool, error)
	Add(agentID string, e tool.AllowEntry) error
	List(agentID string) ([]tool.AllowEntry, error)
	// Remove deletes the entry matching e exactly and returns it; false
	// when there is none.
	Remove(agentID string, e tool.AllowEntry) (tool.AllowEntry, bool, error)
}

// tombstoneTTL is how long an answered or expired approval is remembered.
const tombstoneTTL = 15 * time.Minute

// pendingApproval is one row of the approvals table: an exec waiting for the
// owner, or (closed != "") a tombstone of one.
type pendingApproval struct {
	id        string
	key       engine.SessionKey
	agentID   string
	req       tool.ApprovalRequest
	createdAt time.Time
	expiresAt time.Time
	decision  chan tool.Decision // buffered: decide never blocks

	closed   string    // why it is no longer pending; "" while it is
	closedAt time.Time // when closed was set
}

func (p *pendingApproval) info() api.Approval {
	return api.Approval{
		ID: p.id, SessionKey: string(p.key), AgentID: p.agentID,
		Command: p.req.Command, Argv: p.req.Argv, Resolved: p.req.Resolved, Cwd: p.req.Cwd,
		Env: p.req.Env, Background: p.req.Background, Reason: p.req.Reason,
		CreatedAt: p.createdAt, ExpiresAt: p.expiresAt,
	}
}

// closeLocked turns p into a tombstone. g.mu is held.
func (g *Gateway) closeLocked(p *pendingApproval, why string) {
	p.closed, p.closedAt = why, g.cfg.Now()
	// Drop old tombstones here, the only place that makes them.
	for id, q := range g.pending {
		if q.closed != "" && g.cfg.Now().Sub(q.closedAt) > tombstoneTTL {
			delete(g.pending, id)
		}
	}
}

// Approvals returns the pending approvals, oldest first.
func (g *Gateway) Approvals() []api.Approval {
	now := g.cfg.Now()
	g.mu.Lock()
	out := make([]api.Approval, 0, len(g.pending))
	for _, p := range g.pending {
		if p.closed == "" && now.Before(p.expiresAt) {
			out = append(out, p.info())
		}
	}
	g.mu.Unlock()
	slices.SortFunc(out, func(a, b api.Approval) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// Decide gives the owner's decision d to the approval id. A non-empty key
// limits it to that session's approvals; "" answers any (the control API
// and /approve, both the owner's). The error is an *api.Error.
func (g *Gateway) Decide(key engine.SessionKey, id string, d tool.Decision) (api.Approval, error) {
	if !slices.Contains(api.Decisions, string(d)) {
		return api.Approval{}, badRequest(fmt.Sprintf("unknown decision %q (want %s)", d, strings.Join(api.Decisions, ", ")))
	}
	now := g.cfg.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	p, ok := g.pending[id]
	if !ok || (key != "" && p.key != key) {
		where := ""
		if key != "" {
			where = " in session " + string(key)
		}
		return api.Approval{}, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf(
			"no pending approval %q%s (it may have expired; see `openclaw approvals list`)", api.EscapeControl(id), where)}
	}
	if p.closed == "" && !now.Before(p.expiresAt) {
		g.closeLocked(p, "expired at "+p.expiresAt.Format(time.RFC3339)+" without an answer")
	}
	if p.closed != "" {
		return api.Approval{}, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("approval %s is no longer pending: %s", id, p.closed)}
	}
	g.closeLocked(p, "already answered ("+string(d)+")")
	p.decision <- d // buffered and sent once: never blocks
	return p.info(), nil
}

// pendingApprovalIn returns the id of an approval pending in the session
// key; "" when there is none.
func (g *Gateway) pendingApprovalIn(key engine.SessionKey) string {
	now := g.cfg.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	for id, p := range g.pending {
		if p.key == key && p.closed == "" && now.Before(p.expiresAt) {
			return id
		}
	}
	return ""
}

// approver asks the session's owner through the turn's event stream and
// the approvals table.
type approver struct {
	g       *Gateway
	agentID string
	key     engine.SessionKey
	emit    func(api.Event)
}

var _ tool.Approver = (*approver)(nil)

// Approve registers req, announces it and waits for the owner. A timeout or
// the end of the turn is a denial with an error saying which.
func (a *approver) Approve(ctx context.Context, req tool.ApprovalRequest) (tool.Decision, error) {
	g := a.g
	agentID := a.agentID
	if agentID == "" {
		agentID = a.key.AgentID()
	}
	now := g.cfg.Now()
	wait := g.cfg.ApprovalTimeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
		wait = max(time.Until(dl), 0)
	}
	p := &pendingApproval{
		key: a.key, agentID: agentID, req: req, createdAt: now, expiresAt: now.Add(wait),
		decision: make(chan tool.Decision, 1),
	}
	g.mu.Lock()
	for {
		p.id = engine.NewID(6)
		if _, taken := g.pending[p.id]; !taken {
			break
		}
	}
	g.pending[p.id] = p
	g.mu.Unlock()

	timer := time.NewTimer(wait)
	defer timer.Stop()
	info := p.info()
	a.emit(api.Event{Type: api.EventApproval, Approval: &info})

	// settle closes p for why unless the owner's answer got there first, in
	// which case that answer stands (the owner was told it was taken).
	settle := func(why string) (tool.Decision, bool) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if p.closed == "" {
			g.closeLocked(p, why)
			return tool.DecisionDeny, false
		}
		return <-p.decision, true
	}
	select {
	case d := <-p.decision:
		return d, nil
	case <-ctx.Done():
		why := "its turn ended before an answer"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			why = "expired without an answer"
		}
		if d, ok := settle(why); ok {
			return d, nil
		}
		return tool.DecisionDeny, fmt.Errorf("the turn ended while waiting for approval %s: %w", p.id, ctx.Err())
	case <-timer.C:
		if d, ok := settle("expired at " + p.expiresAt.Format(time.RFC3339) + " without an answer"); ok {
			return d, nil
		}
		return tool.DecisionDeny, fmt.Errorf("no answer to approval %s within %s", p.id, wait.Round(time.Second))
	}
}

// approveCommand handles "/approve <id> [once|always|elevated]" and
// "/deny <id>", for an approval of any session (see the package doc: only
// the owner gets here). from is the session the command was typed in: an
// approval raised elsewhere (a DM, the CLI) is answered without its
// command text, which may be private to that session — a group's members
// read the reply.
func (g *Gateway) approveCommand(name, args string, from engine.SessionKey) (string, error) {
	f := strings.Fields(args)
	usage := "usage: /approve <id> [always|elevated]"
	if name == "deny" {
		usage = "usage: /deny <id>"
	}
	if len(f) == 0 || len(f) > 2 || (name == "deny" && len(f) != 1) {
		return "", badRequest(usage)
	}
	d := tool.DecisionAllowOnce
	if name == "deny" {
		d = tool.DecisionDeny
	} else if len(f) == 2 {
		switch strings.ToLower(f[1]) {
		case "once":
		case "always":
			d = tool.DecisionAllowAlways
		case "elevated":
			d = tool.DecisionElevated
		default:
			return "", badRequest(usage)
		}
	}
	ap, err := g.Decide("", f[0], d)
	if err != nil {
		return "", err
	}
	g.log.Info("exec approval decided by slash command", "id", ap.ID, "session", ap.SessionKey, "decision", string(d))
	if ap.SessionKey != string(from) {
		return decisionText(ap, d, "(its command is shown where it was asked: `openclaw approvals list`)"), nil
	}
	return decisionText(ap, d, NoticeCommand(ap.Command)), nil
}

// MaxNoticeCommand bounds the escaped command in a chat message (a
// notice, a reply to /approve, /status): chats cut or refuse long
// messages, and a cut the owner cannot see is worse than one said.
const MaxNoticeCommand = 2000

// NoticeCommand shows a command in a chat message: backquoted, escaped
// (api.EscapeControl: a newline shows as \n, ESC as \x1b, bidi and
// zero-width characters as \u…), never folded; longer than
// MaxNoticeCommand it is cut with "… (N more bytes)" and a pointer to
// where the whole of it is.
func NoticeCommand(cmd string) string {
	if s := api.EscapeControl(cmd); len(s) <= MaxNoticeCommand {
		return "`" + s + "`"
	}
	return "`" + api.EscapeLimit(cmd, MaxNoticeCommand) + "` (the whole command: `openclaw approvals list`)"
}

// decisionText says what a decision does; cmd is the command as shown
// (NoticeCommand, escaped) or a note where it is not shown.
func decisionText(ap api.Approval, d tool.Decision, cmd string) string {
	switch d {
	case tool.DecisionDeny:
		return fmt.Sprintf("Denied %s: %s will not run.", ap.ID, cmd)
	case tool.DecisionAllowAlways:
		return fmt.Sprintf("Approved %s: %s runs now and is added to agent %s's allowlist (exactly this command; remove it with `openclaw approvals allowlist remove`).", ap.ID, cmd, api.EscapeControl(ap.AgentID))
	case tool.DecisionElevated:
		return fmt.Sprintf("Approved %s elevated: %s runs once OUTSIDE the sandbox.", ap.ID, cmd)
	}
	return fmt.Sprintf("Approved %s: %s runs once, in the sandbox.", ap.ID, cmd)
}

// approvalLines lists the session's pending approvals for /status, escaped.
func (g *Gateway) approvalLines(key engine.SessionKey) string {
	var b strings.Builder
	now := g.cfg.Now()
	for _, ap := range g.Approvals() {
		if ap.SessionKey != string(key) {
			continue
		}
		fmt.Fprintf(&b, "\nPending approval %s: %s (expires in %s; /approve %s [always|elevated] or /deny %s)",
			ap.ID, NoticeCommand(ap.Command), ap.ExpiresAt.Sub(now).Round(time.Second), ap.ID, ap.ID)
	}
	return b.String()
}
