// Package failover runs one model call through a chain of candidate models
// (an agent's primary and fallbacks, one candidate per auth profile of a
// provider), acting on the error classes of docs/design.md §7:
//
//	auth            the profile cools down 1 h; next candidate (the next
//	                profile of the same model comes next in the chain)
//	billing         the profile cools down 24 h, doubling per strike up to
//	                168 h; next candidate
//	rate_limit      the model cools down 1 min (so the next turn skips it);
//	                next candidate now
//	unreachable     failure recorded; next candidate (a crashed local runner
//	                is restarted, so it gets no long cooldown)
//	timeout         the same candidate once more, then the next
//	no_model        next candidate, no cooldown (a model file not installed
//	                or a model the server lacks: the next one may be there)
//	context_overflow, image_too_large, bad_request, aborted
//	                returned unchanged: another model would fail alike, or
//	                the caller must act (compact and retry, tell the user)
//
// A Chain is itself a model (the agent loop's Model interface), so the loop
// does not know failover exists. Events pass through live, nothing is
// buffered; so once a candidate has produced visible output (a text delta
// or a tool call) for a call, its error is returned as it is: the user has
// seen that output, and a second answer after it would be a different reply.
//
// Cooldowns are kept through a Store (the gateway's bbolt file, through
// JSONStore) so they survive a restart; without one they live in memory.
// Keys: "profile:<provider>@<profile>" (or "profile:<provider>" without auth
// profiles) for auth and billing, which belong to an account and cover every
// model it serves; "model:<ref>[@<profile>]" for rate limits and failures.
//
// Choices made where the spec was silent:
//   - When every candidate that is not cooling down has failed, or all of
//     them are cooling down, the one whose cooldown ends first (and that this
//     call has not tried) is tried once as a last resort: a turn never fails
//     without trying, and a success clears that cooldown. The error of a
//     failed call also lists the candidates left untried and until when they
//     cool down.
//   - Cooldown storage errors are logged, never returned: a cooldown that
//     cannot be read counts as none, one that cannot be written is lost.
//   - Billing strikes count consecutive billing failures of a profile; a
//     successful answer resets them. Failures (unreachable, timeout,
//     internal) are kept with their times over the failure window (1 h) for
//     status displays; they do not cool anything down.
//   - An error of kind internal (a provider bug, an unclassified error) fails
//     over like unreachable: the next model may well answer.
//   - Thinking deltas are not visible output (they are shown only on
//     request): a candidate that fails mid-thought still fails over, and its
//     partial thinking stays in the stream the caller saw.
//   - Skipping a cooling candidate is a switch too (Switch.Skipped), so the
//     gateway can say why a turn was not answered by the primary.
//   - When all tried candidates failed, the error's kind is the last
//     attempt's, and its message lists every attempt in order.
package failover

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openclaw-edge/edge/engine"
)

// Model streams one model reply; the agent loop's Model, declared here so
// this package does not depend on the loop.
type Model interface {
	Stream(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error
}

// Candidate is one entry of a chain: a model reached with one auth profile.
type Candidate struct {
	Ref      string // "provider/model"
	Provider string // provider id, e.g. "openai"
	Profile  string // auth profile id; "" = none (the provider's own key, or no key)
	Model    Model
	ModelID  string // the provider's model id; goes into ChatRequest.Model
}

// Label is the candidate's name in switches, errors and Answered:
// "ref" or "ref@profile".
func (c Candidate) Label() string {
	if c.Profile == "" {
		return c.Ref
	}
	return c.Ref + "@" + c.Profile
}

func (c Candidate) profileKey() string {
	if c.Profile == "" {
		return "profile:" + c.Provider
	}
	return "profile:" + c.Provider + "@" + c.Profile
}

func (c Candidate) modelKey() string { return "model:" + c.Label() }

// Cooldown is the persisted state of one key.
type Cooldown struct {
	// Until is when the key may be tried again; zero or past = now.
	Until time.Time `json:"until,omitzero"`
	// Reason is the error kind that set Until.
	Reason engine.ErrorKind `json:"reason,omitempty"`
	// BillingStrikes counts consecutive billing failures (for doubling).
	BillingStrikes int `json:"billingStrikes,omitempty"`
	// Failures are the times of recent failures, within the failure window.
	Failures []time.Time `json:"failures,omitempty"`
}

// Store persists cooldowns. Implementations must be safe for concurrent use.
type Store interface {
	Cooldown(key string) (Cooldown, bool, error)
	PutCooldown(key string, c Cooldown) error
}

// Updater is an optional Store extension: a read-modify-write of one record
// in one transaction (fn gets the record, zero if missing, and reports
// whether to store it). Without it a Chain reads and writes separately,
// which is only safe while one Chain owns the store.
type Updater interface {
	UpdateCooldown(key string, fn func(*Cooldown) bool) error
}

// Defaults of Config's zero fields.
const (
	DefaultBillingBackoff    = 24 * time.Hour
	DefaultBillingMax        = 168 * time.Hour
	DefaultFailureWindow     = time.Hour
	DefaultAuthCooldown      = time.Hour
	DefaultRateLimitCooldown = time.Minute
)

// maxFailures bounds the failures kept per key, so a record stays small.
const maxFailures = 64

// Config configures a Chain. Zero fields take the defaults above.
type Config struct {
	BillingBackoff    time.Duration // first billing cooldown; doubles per strike
	BillingMax        time.Duration // cap of the billing cooldown
	FailureWindow     time.Duration // how long failures are remembered
	AuthCooldown      time.Duration // a profile whose key was refused
	RateLimitCooldown time.Duration // a model that answered 429
	Now               func() time.Time
	// Store keeps cooldowns; nil keeps them in memory, in this Chain only
	// (share a MemoryStore between chains to share them).
	Store Store
	// Logger receives cooldown writes that failed (nil: discarded). They do
	// not fail the call: the user is owed an answer, not a storage error.
	Logger *slog.Logger
}

// Switch reports that the call left one candidate for another.
type Switch struct {
	From, To string // candidate labels: "ref" or "ref@profile"
	Reason   engine.ErrorKind
	Detail   string // what went wrong, safe to show
	// Skipped: From was not tried, it is cooling down (Reason is the kind
	// that set the cooldown, Detail says until when).
	Skipped bool
}

// Chain is a failover chain. It is safe for concurrent use; Answered then
// reports whichever call succeeded last, so build a Chain per turn (it is
// cheap) over a shared Store when the answer must be attributed to a turn.
type Chain struct {
	cfg      Config
	chain    []Candidate
	onSwitch func(Switch)

	mu       sync.Mutex // serializes read-modify-write of cooldowns
	answered string
}

// New returns a chain trying candidates in order. onSwitch may be nil.
func New(cfg Config, chain []Candidate, onSwitch func(Switch)) *Chain {
	if cfg.BillingBackoff <= 0 {
		cfg.BillingBackoff = DefaultBillingBackoff
	}
	if cfg.BillingMax <= 0 {
		cfg.BillingMax = DefaultBillingMax
	}
	cfg.BillingMax = max(cfg.BillingMax, cfg.BillingBackoff)
	if cfg.FailureWindow <= 0 {
		cfg.FailureWindow = DefaultFailureWindow
	}
	if cfg.AuthCooldown <= 0 {
		cfg.AuthCooldown = DefaultAuthCooldown
	}
	if cfg.RateLimitCooldown <= 0 {
		cfg.RateLimitCooldown = DefaultRateLimitCooldown
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Store == nil {
		cfg.Store = NewMemoryStore()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Chain{cfg: cfg, chain: slices.Clone(chain), onSwitch: onSwitch}
}

// Answered returns the label ("ref" or "ref@profile") of the candidate that
// produced the last successful answer, or "" before any.
func (c *Chain) Answered() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.answered
}

var _ Model = (*Chain)(nil)

// attempt is one failed try, for the joined error.
type attempt struct {
	label string
	err   *engine.ModelError
}

// Stream calls the candidates in turn until one answers (see the package
// documentation for the actions per error kind). Every error returned is an
// *engine.ModelError.
func (c *Chain) Stream(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error {
	if len(c.chain) == 0 {
		return &engine.ModelError{Kind: engine.ErrNoModel, Message: "the failover chain has no models"}
	}
	var (
		attempts   []attempt
		passed     []skip // cooling candidates passed over (and reported)
		tried      = make([]bool, len(c.chain))
		from       = -1 // the candidate last left, for the next Switch
		why        Switch
		lastResort bool
	)
	leave := func(to int) {
		if from >= 0 {
			c.switched(Switch{From: c.chain[from].Label(), To: c.chain[to].Label(), Reason: why.Reason, Detail: why.Detail, Skipped: why.Skipped})
		}
	}
	for !lastResort {
		p := c.next(tried)
		for _, s := range p.skipped {
			if slices.ContainsFunc(passed, func(o skip) bool { return o.i == s.i }) {
				continue // passed over, and reported, in an earlier round
			}
			passed = append(passed, s)
			leave(s.i)
			from, why = s.i, Switch{Reason: s.cd.Reason, Detail: "cooling down until " + s.cd.Until.UTC().Format(time.RFC3339), Skipped: true}
		}
		if p.i < 0 {
			break
		}
		lastResort = p.lastResort
		cand := c.chain[p.i]
		leave(p.i)
		tried[p.i] = true
		me, final := c.try(ctx, cand, req, emit)
		if me == nil {
			return nil
		}
		attempts = append(attempts, attempt{label: cand.Label(), err: me})
		if final {
			return me
		}
		from, why = p.i, Switch{Reason: me.Kind, Detail: detail(me)}
	}
	if len(attempts) == 0 { // cannot happen: a non-empty chain always has a pick
		return &engine.ModelError{Kind: engine.ErrNoModel, Message: "no model of the failover chain could be tried"}
	}
	var untried []string
	for i, cand := range c.chain {
		if cd, err := c.cooling(cand); !tried[i] && err == nil && !cd.Until.IsZero() {
			untried = append(untried, cand.Label()+": not tried, cooling down until "+
				cd.Until.UTC().Format(time.RFC3339)+" ("+string(cd.Reason)+")")
		}
	}
	if len(attempts) == 1 && len(untried) == 0 {
		return attempts[0].err
	}
	var (
		parts []string
		errs  []error
	)
	for _, a := range attempts {
		parts = append(parts, a.label+": "+string(a.err.Kind)+" ("+detail(a.err)+")")
		errs = append(errs, a.err)
	}
	parts = append(parts, untried...)
	return &engine.ModelError{
		Kind:    attempts[len(attempts)-1].err.Kind,
		Message: "every model failed: " + strings.Join(parts, "; "),
		Err:     errors.Join(errs...),
	}
}

// try runs one candidate, retrying a timeout once. It returns nil on
// success, else the error and whether it ends the call (no failover).
func (c *Chain) try(ctx context.Context, cand Candidate, req *engine.ChatRequest, emit func(engine.Event)) (*engine.ModelError, bool) {
	if cand.Model == nil {
		return &engine.ModelError{Kind: engine.ErrNoModel, Provider: cand.Provider, Model: cand.ModelID,
			Message: "model " + cand.Label() + " is not available"}, false
	}
	r := *req // the caller's request is not changed
	r.Model = cand.ModelID
	for retry := 0; ; retry++ {
		if err := ctx.Err(); err != nil {
			return asModelError(err, cand), true
		}
		var visible atomic.Bool
		err := cand.Model.Stream(ctx, &r, func(ev engine.Event) {
			if ev.Type == engine.EventTextDelta && ev.Text != "" || ev.Type == engine.EventToolCall {
				visible.Store(true)
			}
			if emit != nil {
				emit(ev)
			}
		})
		if err == nil {
			c.succeeded(cand)
			return nil, false
		}
		me := asModelError(err, cand)
		if visible.Load() || ctx.Err() != nil {
			return me, true
		}
		switch me.Kind {
		case engine.ErrAuth:
			c.coolDown(cand.profileKey(), me.Kind, c.cfg.AuthCooldown)
		case engine.ErrBilling:
			c.billing(cand.profileKey())
		case engine.ErrRateLimit:
			c.coolDown(cand.modelKey(), me.Kind, c.cfg.RateLimitCooldown)
		case engine.ErrTimeout:
			c.failed(cand.modelKey())
			if retry == 0 {
				continue
			}
		case engine.ErrUnreachable, engine.ErrInternal:
			c.failed(cand.modelKey())
		case engine.ErrNoModel:
			// Nothing to cool down: installing the model fixes it at once.
		default: // context_overflow, image_too_large, bad_request, aborted
			return me, true
		}
		return me, false
	}
}

// skip is a candidate passed over because it is cooling down.
type skip struct {
	i  int
	cd Cooldown
}

// pick is what to try next.
type pick struct {
	i          int    // candidate index; < 0: nothing left to try
	skipped    []skip // cooling candidates passed over before i, in chain order
	lastResort bool   // i is cooling down itself
}

// next picks the next candidate not yet tried: the first that is not
// cooling down, else (last resort) the cooling one whose cooldown ends
// first.
func (c *Chain) next(tried []bool) pick {
	var cooling []skip
	for j, cand := range c.chain {
		if tried[j] {
			continue
		}
		cd, err := c.cooling(cand)
		if err != nil {
			// An unreadable cooldown does not keep a model from answering.
			c.cfg.Logger.Warn("failover: cooldown not read", "candidate", cand.Label(), "err", err)
		}
		if cd.Until.IsZero() {
			return pick{i: j, skipped: cooling}
		}
		cooling = append(cooling, skip{j, cd})
	}
	if len(cooling) == 0 {
		return pick{i: -1}
	}
	best := slices.MinFunc(cooling, func(a, b skip) int { return a.cd.Until.Compare(b.cd.Until) })
	before := slices.DeleteFunc(slices.Clone(cooling), func(s skip) bool { return s.i >= best.i })
	return pick{i: best.i, skipped: before, lastResort: true}
}

// cooling returns the cooldown in force for cand (the later of its profile
// and model cooldowns), with a zero Until when it may be tried now.
func (c *Chain) cooling(cand Candidate) (Cooldown, error) {
	now := c.cfg.Now()
	var out Cooldown
	for _, key := range []string{cand.profileKey(), cand.modelKey()} {
		cd, ok, err := c.cfg.Store.Cooldown(key)
		if err != nil {
			return Cooldown{}, fmt.Errorf("read cooldown %s: %w", key, err)
		}
		if ok && cd.Until.After(now) && cd.Until.After(out.Until) {
			out = Cooldown{Until: cd.Until, Reason: cd.Reason}
		}
	}
	return out, nil
}

// update applies fn to the record at key under the chain's lock. Store
// errors are not the user's problem mid-turn: they are logged, and the
// call goes on without that cooldown.
func (c *Chain) update(key string, fn func(*Cooldown, time.Time) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if u, ok := c.cfg.Store.(Updater); ok {
		now := c.cfg.Now()
		if err := u.UpdateCooldown(key, func(cd *Cooldown) bool { return fn(cd, now) }); err != nil {
			c.cfg.Logger.Warn("failover: cooldown not saved", "key", key, "err", err)
		}
		return
	}
	cd, _, err := c.cfg.Store.Cooldown(key)
	if err != nil {
		c.cfg.Logger.Warn("failover: cooldown not updated", "key", key, "err", err)
		return
	}
	if fn(&cd, c.cfg.Now()) {
		if err := c.cfg.Store.PutCooldown(key, cd); err != nil {
			c.cfg.Logger.Warn("failover: cooldown not saved", "key", key, "err", err)
		}
	}
}

func (c *Chain) coolDown(key string, kind engine.ErrorKind, d time.Duration) {
	c.update(key, func(cd *Cooldown, now time.Time) bool {
		if until := now.Add(d); until.After(cd.Until) {
			cd.Until = until
			cd.Reason = kind
		}
		return true
	})
}

func (c *Chain) billing(key string) {
	c.update(key, func(cd *Cooldown, now time.Time) bool {
		cd.BillingStrikes++
		d := c.cfg.BillingBackoff
		for range cd.BillingStrikes - 1 {
			if d *= 2; d >= c.cfg.BillingMax {
				break
			}
		}
		cd.Until = now.Add(min(d, c.cfg.BillingMax))
		cd.Reason = engine.ErrBilling
		return true
	})
}

func (c *Chain) failed(key string) {
	c.update(key, func(cd *Cooldown, now time.Time) bool {
		cd.Failures = append(recent(cd.Failures, now.Add(-c.cfg.FailureWindow)), now)
		if n := len(cd.Failures); n > maxFailures {
			cd.Failures = cd.Failures[n-maxFailures:]
		}
		return true
	})
}

// succeeded records an answer: billing strikes and any cooldown of the
// candidate (tried as a last resort) are cleared. Nothing is written when
// there is nothing to clear, so a normal turn only reads.
func (c *Chain) succeeded(cand Candidate) {
	for _, key := range []string{cand.profileKey(), cand.modelKey()} {
		c.update(key, func(cd *Cooldown, now time.Time) bool {
			if cd.BillingStrikes == 0 && !cd.Until.After(now) {
				return false
			}
			cd.BillingStrikes, cd.Until, cd.Reason = 0, time.Time{}, ""
			return true
		})
	}
	c.mu.Lock()
	c.answered = cand.Label()
	c.mu.Unlock()
}

func (c *Chain) switched(s Switch) {
	if c.onSwitch != nil {
		c.onSwitch(s)
	}
}

// recent returns the times after since.
func recent(ts []time.Time, since time.Time) []time.Time {
	out := ts[:0:0]
	for _, t := range ts {
		if t.After(since) {
			out = append(out, t)
		}
	}
	return out
}

// asModelError classifies err as a *engine.ModelError naming cand.
func asModelError(err error, cand Candidate) *engine.ModelError {
	var me *engine.ModelError
	if errors.As(err, &me) {
		return me
	}
	return &engine.ModelError{Kind: engine.KindOf(err), Provider: cand.Provider, Model: cand.ModelID, Err: err}
}

// detail is the short text of me for switches and the joined error.
func detail(me *engine.ModelError) string {
	msg := me.Message
	if msg == "" && me.Err != nil {
		msg = me.Err.Error()
	}
	switch {
	case me.Status != 0 && msg != "":
		return fmt.Sprintf("HTTP %d: %s", me.Status, msg)
	case me.Status != 0:
		return fmt.Sprintf("HTTP %d", me.Status)
	case msg == "":
		return "no details"
	}
	return msg
}
