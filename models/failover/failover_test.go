package failover

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
)

// fake is a scripted model: call n (0-based) runs steps[min(n, last)].
type fake struct {
	mu     sync.Mutex
	steps  []func(emit func(engine.Event)) error
	calls  int
	models []string // req.Model of each call
}

func (f *fake) Stream(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error {
	f.mu.Lock()
	n := f.calls
	f.calls++
	f.models = append(f.models, req.Model)
	f.mu.Unlock()
	if len(f.steps) == 0 {
		return answer("ok")(emit)
	}
	return f.steps[min(n, len(f.steps)-1)](emit)
}

// script replaces the steps and restarts their count.
func (f *fake) script(steps ...func(func(engine.Event)) error) {
	f.mu.Lock()
	f.steps, f.calls, f.models = steps, 0, nil
	f.mu.Unlock()
}

func (f *fake) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// answer streams text and ends the message.
func answer(text string) func(func(engine.Event)) error {
	return func(emit func(engine.Event)) error {
		emit(engine.Event{Type: engine.EventTextDelta, Text: text})
		emit(engine.Event{Type: engine.EventMessageEnd, StopReason: engine.StopEnd})
		return nil
	}
}

// fail returns err after emitting evs.
func fail(err error, evs ...engine.Event) func(func(engine.Event)) error {
	return func(emit func(engine.Event)) error {
		for _, ev := range evs {
			emit(ev)
		}
		return err
	}
}

func merr(kind engine.ErrorKind, status int, msg string) *engine.ModelError {
	return &engine.ModelError{Kind: kind, Status: status, Message: msg}
}

// clock is a settable fake clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func cand(ref, profile string, m Model) Candidate {
	prov, id, _ := strings.Cut(ref, "/")
	return Candidate{Ref: ref, Provider: prov, Profile: profile, Model: m, ModelID: id}
}

// run streams once, collecting events and switches.
type run struct {
	events   []engine.Event
	switches []Switch
	err      error
}

func stream(t *testing.T, c *Chain, sw *[]Switch) run {
	t.Helper()
	var r run
	n := len(*sw)
	req := &engine.ChatRequest{Model: "caller's", Messages: []engine.Message{engine.UserText("hi")}}
	r.err = c.Stream(context.Background(), req, func(ev engine.Event) { r.events = append(r.events, ev) })
	if req.Model != "caller's" {
		t.Errorf("the caller's request was changed: Model = %q", req.Model)
	}
	r.switches = (*sw)[n:]
	return r
}

func newChain(clk *clock, store Store, cands ...Candidate) (*Chain, *[]Switch) {
	var (
		mu sync.Mutex
		sw []Switch
	)
	c := New(Config{Now: clk.Now, Store: store}, cands, func(s Switch) {
		mu.Lock()
		sw = append(sw, s)
		mu.Unlock()
	})
	return c, &sw
}

// TestErrorActions: one row per error class, primary failing that way once
// and a fallback that answers.
func TestErrorActions(t *testing.T) {
	type cool struct {
		key      string
		until    time.Duration // after now; 0 = none
		reason   engine.ErrorKind
		strikes  int
		failures int
	}
	for _, tc := range []struct {
		name        string
		err         error
		primary     int // calls of the primary
		fallback    int // calls of the fallback
		wantErr     bool
		sameErr     bool // the primary's error comes back unchanged
		cool        *cool
		switchKinds []engine.ErrorKind
	}{
		{name: "auth", err: merr(engine.ErrAuth, 401, "invalid api key"), primary: 1, fallback: 1,
			cool: &cool{key: "profile:openai@work", until: time.Hour, reason: engine.ErrAuth}, switchKinds: []engine.ErrorKind{engine.ErrAuth}},
		{name: "billing", err: merr(engine.ErrBilling, 402, "insufficient quota"), primary: 1, fallback: 1,
			cool: &cool{key: "profile:openai@work", until: 24 * time.Hour, reason: engine.ErrBilling, strikes: 1}, switchKinds: []engine.ErrorKind{engine.ErrBilling}},
		{name: "rateLimit", err: merr(engine.ErrRateLimit, 429, "slow down"), primary: 1, fallback: 1,
			cool: &cool{key: "model:openai/gpt-4o@work", until: time.Minute, reason: engine.ErrRateLimit}, switchKinds: []engine.ErrorKind{engine.ErrRateLimit}},
		{name: "unreachable", err: merr(engine.ErrUnreachable, 0, "connection refused"), primary: 1, fallback: 1,
			cool: &cool{key: "model:openai/gpt-4o@work", failures: 1}, switchKinds: []engine.ErrorKind{engine.ErrUnreachable}},
		{name: "internal", err: errors.New("provider bug"), primary: 1, fallback: 1,
			cool: &cool{key: "model:openai/gpt-4o@work", failures: 1}, switchKinds: []engine.ErrorKind{engine.ErrInternal}},
		{name: "timeoutRetriedOnce", err: merr(engine.ErrTimeout, 0, "no answer in 5m"), primary: 2, fallback: 1,
			cool: &cool{key: "model:openai/gpt-4o@work", failures: 2}, switchKinds: []engine.ErrorKind{engine.ErrTimeout}},
		{name: "plainDeadline", err: fmt.Errorf("read: %w", context.DeadlineExceeded), primary: 2, fallback: 1,
			switchKinds: []engine.ErrorKind{engine.ErrTimeout}},
		{name: "contextOverflow", err: merr(engine.ErrContextOverflow, 400, "prompt too long"), primary: 1, wantErr: true, sameErr: true},
		{name: "imageTooLarge", err: merr(engine.ErrImageTooLarge, 400, "image over 5 MB"), primary: 1, wantErr: true, sameErr: true},
		{name: "badRequest", err: merr(engine.ErrBadRequest, 400, "unknown field"), primary: 1, wantErr: true, sameErr: true},
		{name: "aborted", err: merr(engine.ErrAborted, 0, "stopped"), primary: 1, wantErr: true, sameErr: true},
		{name: "plainCanceled", err: context.Canceled, primary: 1, wantErr: true},
		{name: "noModel", err: merr(engine.ErrNoModel, 0, "no such model"), primary: 1, fallback: 1, switchKinds: []engine.ErrorKind{engine.ErrNoModel}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			store := NewMemoryStore()
			primary := &fake{steps: []func(func(engine.Event)) error{fail(tc.err)}}
			fallback := &fake{}
			c, sw := newChain(clk, store, cand("openai/gpt-4o", "work", primary), cand("ollama/llama3.2:3b", "", fallback))
			r := stream(t, c, sw)
			if primary.count() != tc.primary || fallback.count() != tc.fallback {
				t.Errorf("calls: primary %d, fallback %d; want %d, %d", primary.count(), fallback.count(), tc.primary, tc.fallback)
			}
			if slices.ContainsFunc(primary.models, func(m string) bool { return m != "gpt-4o" }) || slices.ContainsFunc(fallback.models, func(m string) bool { return m != "llama3.2:3b" }) {
				t.Errorf("req.Model: primary %q, fallback %q", primary.models, fallback.models)
			}
			if (r.err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", r.err, tc.wantErr)
			}
			if r.err != nil {
				var me *engine.ModelError
				if !errors.As(r.err, &me) || me.Kind != engine.KindOf(tc.err) {
					t.Errorf("err = %#v, want a *engine.ModelError of kind %s", r.err, engine.KindOf(tc.err))
				}
				if tc.sameErr && r.err != tc.err {
					t.Errorf("err = %v, want the primary's error unchanged", r.err)
				}
				if !errors.Is(r.err, tc.err) {
					t.Errorf("err %v does not wrap %v", r.err, tc.err)
				}
			} else if c.Answered() != "ollama/llama3.2:3b" {
				t.Errorf("Answered = %q", c.Answered())
			}
			var kinds []engine.ErrorKind
			for _, s := range r.switches {
				kinds = append(kinds, s.Reason)
				if s.From != "openai/gpt-4o@work" || s.To != "ollama/llama3.2:3b" || s.Skipped || s.Detail == "" {
					t.Errorf("switch = %+v", s)
				}
			}
			if !slices.Equal(kinds, tc.switchKinds) {
				t.Errorf("switch reasons = %q, want %q", kinds, tc.switchKinds)
			}
			if tc.cool != nil {
				cd, ok, _ := store.Cooldown(tc.cool.key)
				var until time.Time
				if tc.cool.until > 0 {
					until = clk.Now().Add(tc.cool.until)
				}
				if !ok || !cd.Until.Equal(until) || cd.Reason != tc.cool.reason || cd.BillingStrikes != tc.cool.strikes || len(cd.Failures) != tc.cool.failures {
					t.Errorf("cooldown %s = %+v, %v; want %+v", tc.cool.key, cd, ok, *tc.cool)
				}
			}
		})
	}
}

func TestTimeoutRetrySucceeds(t *testing.T) {
	primary := &fake{steps: []func(func(engine.Event)) error{fail(merr(engine.ErrTimeout, 0, "slow")), answer("second try")}}
	fallback := &fake{}
	c, sw := newChain(newClock(), nil, cand("local/qwen3-1.7b", "", primary), cand("openai/gpt-4o-mini", "", fallback))
	r := stream(t, c, sw)
	if r.err != nil || primary.count() != 2 || fallback.count() != 0 || len(r.switches) != 0 || c.Answered() != "local/qwen3-1.7b" {
		t.Errorf("err %v, calls %d/%d, switches %+v, answered %q", r.err, primary.count(), fallback.count(), r.switches, c.Answered())
	}
}

// TestNoFailoverAfterVisibleOutput: once the user has seen text or a tool
// call, the error comes back as it is, even for kinds that fail over.
func TestNoFailoverAfterVisibleOutput(t *testing.T) {
	text := engine.Event{Type: engine.EventTextDelta, Text: "Hel"}
	call := engine.Event{Type: engine.EventToolCall, ToolCall: &engine.ToolCall{ID: "1", Name: "read", Arguments: []byte(`{}`)}}
	thinking := engine.Event{Type: engine.EventThinkingDelta, Text: "hmm"}
	empty := engine.Event{Type: engine.EventTextDelta}
	for _, tc := range []struct {
		name     string
		events   []engine.Event
		kind     engine.ErrorKind
		primary  int
		failover bool
	}{
		{"textThenUnreachable", []engine.Event{text}, engine.ErrUnreachable, 1, false},
		{"toolCallThenRateLimit", []engine.Event{call}, engine.ErrRateLimit, 1, false},
		{"textThenTimeoutNoRetry", []engine.Event{text}, engine.ErrTimeout, 1, false},
		{"textThenAuth", []engine.Event{thinking, text}, engine.ErrAuth, 1, false},
		{"thinkingOnly", []engine.Event{thinking}, engine.ErrUnreachable, 1, true},
		{"emptyDelta", []engine.Event{empty}, engine.ErrUnreachable, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := merr(tc.kind, 0, "runner crashed")
			primary := &fake{steps: []func(func(engine.Event)) error{fail(want, tc.events...)}}
			fallback := &fake{}
			c, sw := newChain(newClock(), nil, cand("local/qwen3-1.7b", "", primary), cand("openai/gpt-4o-mini", "", fallback))
			r := stream(t, c, sw)
			if primary.count() != tc.primary {
				t.Errorf("primary called %d times, want %d", primary.count(), tc.primary)
			}
			if tc.failover {
				if r.err != nil || fallback.count() != 1 || len(r.switches) != 1 {
					t.Errorf("err %v, fallback calls %d, switches %+v; want a failover", r.err, fallback.count(), r.switches)
				}
				return
			}
			if r.err != want || fallback.count() != 0 || len(r.switches) != 0 {
				t.Errorf("err %v, fallback calls %d, switches %+v; want the error unchanged and no failover", r.err, fallback.count(), r.switches)
			}
			// The events were passed through live, before the error.
			if len(r.events) != len(tc.events) {
				t.Errorf("events %+v, want %+v", r.events, tc.events)
			}
		})
	}
}

func TestEventsPassThroughInOrder(t *testing.T) {
	think := engine.Event{Type: engine.EventThinkingDelta, Text: "let me think"}
	primary := &fake{steps: []func(func(engine.Event)) error{fail(merr(engine.ErrUnreachable, 0, "down"), think)}}
	fallback := &fake{steps: []func(func(engine.Event)) error{answer("Hello")}}
	c, sw := newChain(newClock(), nil, cand("local/a", "", primary), cand("openai/b", "", fallback))
	var got []string
	err := c.Stream(context.Background(), &engine.ChatRequest{}, func(ev engine.Event) {
		got = append(got, string(ev.Type)+":"+ev.Text)
		if ev.Type == engine.EventTextDelta && len(*sw) != 1 {
			t.Error("the switch was not reported before the fallback's first event")
		}
	})
	want := []string{"thinking_delta:let me think", "text_delta:Hello", "message_end:"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("events %q, %v; want %q", got, err, want)
	}
}

func TestJoinedError(t *testing.T) {
	crash := merr(engine.ErrUnreachable, 0, "runner crashed")
	limited := merr(engine.ErrRateLimit, 429, "slow down")
	local := &fake{steps: []func(func(engine.Event)) error{fail(crash)}}
	remote := &fake{steps: []func(func(engine.Event)) error{fail(limited)}}
	c, sw := newChain(newClock(), nil, cand("local/qwen3-1.7b", "", local), cand("openai/gpt-4o-mini", "", remote))
	r := stream(t, c, sw)
	want := "rate_limit: every model failed: local/qwen3-1.7b: unreachable (runner crashed); openai/gpt-4o-mini: rate_limit (HTTP 429: slow down)"
	if r.err == nil || r.err.Error() != want {
		t.Fatalf("err:\n%v\nwant:\n%s", r.err, want)
	}
	var me *engine.ModelError
	if !errors.As(r.err, &me) || me.Kind != engine.ErrRateLimit || !errors.Is(r.err, crash) || !errors.Is(r.err, limited) {
		t.Errorf("joined error %#v does not classify or wrap both attempts", r.err)
	}
	if c.Answered() != "" {
		t.Errorf("Answered = %q after a failure", c.Answered())
	}
	wantSw := []Switch{{From: "local/qwen3-1.7b", To: "openai/gpt-4o-mini", Reason: engine.ErrUnreachable, Detail: "runner crashed"}}
	if !slices.Equal(r.switches, wantSw) {
		t.Errorf("switches %+v, want %+v", r.switches, wantSw)
	}
}

// TestLocalUnreachableRemoteChain is the chain: local → unreachable
// remote → working remote.
func TestLocalUnreachableRemoteChain(t *testing.T) {
	local := &fake{steps: []func(func(engine.Event)) error{fail(merr(engine.ErrUnreachable, 0, "runner crashed"))}}
	down := &fake{steps: []func(func(engine.Event)) error{fail(merr(engine.ErrUnreachable, 0, "dial tcp 127.0.0.1:1: connection refused"))}}
	up := &fake{steps: []func(func(engine.Event)) error{answer("from the cloud")}}
	c, sw := newChain(newClock(), nil, cand("local/qwen3-1.7b", "", local), cand("ollama/llama3.2:3b", "", down), cand("anthropic/claude-sonnet-4-5", "main", up))
	r := stream(t, c, sw)
	if r.err != nil || c.Answered() != "anthropic/claude-sonnet-4-5@main" {
		t.Fatalf("err %v, answered %q", r.err, c.Answered())
	}
	want := []Switch{
		{From: "local/qwen3-1.7b", To: "ollama/llama3.2:3b", Reason: engine.ErrUnreachable, Detail: "runner crashed"},
		{From: "ollama/llama3.2:3b", To: "anthropic/claude-sonnet-4-5@main", Reason: engine.ErrUnreachable, Detail: "dial tcp 127.0.0.1:1: connection refused"},
	}
	if !slices.Equal(r.switches, want) {
		t.Errorf("switches:\n%+v\nwant:\n%+v", r.switches, want)
	}
	// Unreachable cools nothing down: the next turn tries local first again.
	local.steps = []func(func(engine.Event)) error{answer("local again")}
	r = stream(t, c, sw)
	if r.err != nil || c.Answered() != "local/qwen3-1.7b" || len(r.switches) != 0 {
		t.Errorf("next turn: err %v, answered %q, switches %+v", r.err, c.Answered(), r.switches)
	}
}

func TestCooldownSkipsAndExpires(t *testing.T) {
	clk := newClock()
	primary := &fake{steps: []func(func(engine.Event)) error{fail(merr(engine.ErrRateLimit, 429, "slow down")), answer("back")}}
	fallback := &fake{}
	c, sw := newChain(clk, nil, cand("openai/gpt-4o", "", primary), cand("ollama/qwen3", "", fallback))
	stream(t, c, sw)

	clk.Add(30 * time.Second)
	r := stream(t, c, sw)
	until := time.Date(2026, 11, 3, 9, 1, 0, 0, time.UTC)
	want := []Switch{{From: "openai/gpt-4o", To: "ollama/qwen3", Reason: engine.ErrRateLimit, Detail: "cooling down until 2026-11-03T09:01:00Z", Skipped: true}}
	if r.err != nil || primary.count() != 1 || fallback.count() != 2 || !slices.Equal(r.switches, want) {
		t.Errorf("while cooling: err %v, calls %d/%d, switches %+v", r.err, primary.count(), fallback.count(), r.switches)
	}
	st, err := c.States()
	if err != nil || len(st) != 2 || !st[0].Until.Equal(until) || st[0].Reason != engine.ErrRateLimit || !st[1].Until.IsZero() {
		t.Errorf("States = %+v, %v", st, err)
	}

	clk.Add(31 * time.Second)
	r = stream(t, c, sw)
	if r.err != nil || primary.count() != 2 || c.Answered() != "openai/gpt-4o" || len(r.switches) != 0 {
		t.Errorf("after the cooldown: err %v, calls %d, answered %q, switches %+v", r.err, primary.count(), c.Answered(), r.switches)
	}
}

// TestBillingBackoff: 24 h doubling per strike to the 168 h cap; an answer
// resets the strikes.
func TestBillingBackoff(t *testing.T) {
	clk := newClock()
	store := NewMemoryStore()
	billing := fail(merr(engine.ErrBilling, 402, "insufficient quota"))
	primary := &fake{steps: []func(func(engine.Event)) error{billing}}
	c, sw := newChain(clk, store, cand("anthropic/claude", "", primary), cand("local/qwen3-1.7b", "", &fake{}))
	const key = "profile:anthropic"
	for i, want := range []time.Duration{24, 48, 96, 168, 168} {
		r := stream(t, c, sw)
		cd, _, _ := store.Cooldown(key)
		if r.err != nil || cd.BillingStrikes != i+1 || !cd.Until.Equal(clk.Now().Add(want*time.Hour)) {
			t.Fatalf("strike %d: err %v, cooldown %+v; want %d h", i+1, r.err, cd, want)
		}
		// Skipped until the cooldown ends.
		clk.Add(want*time.Hour - time.Second)
		calls := primary.count()
		if stream(t, c, sw); primary.count() != calls {
			t.Fatalf("strike %d: called while cooling down", i+1)
		}
		clk.Add(time.Second)
	}
	primary.script(answer("paid"), billing)
	if r := stream(t, c, sw); r.err != nil || c.Answered() != "anthropic/claude" {
		t.Fatalf("after the cooldown: %v, %q", r.err, c.Answered())
	}
	if cd, _, _ := store.Cooldown(key); cd.BillingStrikes != 0 || !cd.Until.IsZero() {
		t.Errorf("after an answer: %+v, want the strikes reset", cd)
	}
	stream(t, c, sw)
	if cd, _, _ := store.Cooldown(key); cd.BillingStrikes != 1 || !cd.Until.Equal(clk.Now().Add(24*time.Hour)) {
		t.Errorf("first strike after the reset: %+v", cd)
	}
}

func TestBillingConfig(t *testing.T) {
	clk := newClock()
	store := NewMemoryStore()
	primary := &fake{steps: []func(func(engine.Event)) error{fail(merr(engine.ErrBilling, 402, ""))}}
	c := New(Config{BillingBackoff: time.Hour, BillingMax: 3 * time.Hour, Now: clk.Now, Store: store},
		[]Candidate{cand("a/x", "", primary), cand("b/y", "", &fake{})}, nil)
	for _, want := range []time.Duration{1, 2, 3, 3} {
		if err := c.Stream(context.Background(), &engine.ChatRequest{}, nil); err != nil {
			t.Fatal(err)
		}
		cd, _, _ := store.Cooldown("profile:a")
		if !cd.Until.Equal(clk.Now().Add(want * time.Hour)) {
			t.Fatalf("cooldown until %v, want +%d h", cd.Until, want)
		}
		clk.Add(want * time.Hour)
	}
}

// TestAuthRotatesProfiles: the chain lists one candidate per profile; a
// refused key cools its profile for every model it serves.
func TestAuthRotatesProfiles(t *testing.T) {
	clk := newClock()
	refused := &fake{steps: []func(func(engine.Event)) error{fail(merr(engine.ErrAuth, 401, "invalid x-api-key"))}}
	second := &fake{}
	mini := &fake{}
	c, sw := newChain(clk, nil,
		cand("openai/gpt-4o", "personal", refused),
		cand("openai/gpt-4o", "work", second),
		cand("openai/gpt-4o-mini", "personal", mini))
	r := stream(t, c, sw)
	if r.err != nil || c.Answered() != "openai/gpt-4o@work" || refused.count() != 1 {
		t.Fatalf("err %v, answered %q", r.err, c.Answered())
	}
	want := []Switch{{From: "openai/gpt-4o@personal", To: "openai/gpt-4o@work", Reason: engine.ErrAuth, Detail: "HTTP 401: invalid x-api-key"}}
	if !slices.Equal(r.switches, want) {
		t.Errorf("switches %+v, want %+v", r.switches, want)
	}
	// The work key is now rate limited: gpt-4o-mini@personal is skipped (its
	// profile is cooling down), and gpt-4o@personal, whose cooldown ends as
	// early and comes first, is the last resort.
	second.script(fail(merr(engine.ErrRateLimit, 429, "slow down")))
	clk.Add(time.Minute)
	r = stream(t, c, sw)
	wantErr := "auth: every model failed: openai/gpt-4o@work: rate_limit (HTTP 429: slow down); " +
		"openai/gpt-4o@personal: auth (HTTP 401: invalid x-api-key); " +
		"openai/gpt-4o-mini@personal: not tried, cooling down until 2026-11-03T10:01:00Z (auth)"
	if r.err == nil || r.err.Error() != wantErr || refused.count() != 2 || mini.count() != 0 {
		t.Errorf("err:\n%v\nwant:\n%s\ncalls %d/%d", r.err, wantErr, refused.count(), mini.count())
	}
	want = []Switch{
		{From: "openai/gpt-4o@personal", To: "openai/gpt-4o@work", Reason: engine.ErrAuth, Detail: "cooling down until 2026-11-03T10:00:00Z", Skipped: true},
		{From: "openai/gpt-4o@work", To: "openai/gpt-4o@personal", Reason: engine.ErrRateLimit, Detail: "HTTP 429: slow down"},
	}
	if !slices.Equal(r.switches, want) {
		t.Errorf("switches:\n%+v\nwant:\n%+v", r.switches, want)
	}
}

// TestAllCooling: when every candidate is cooling down, the one whose
// cooldown ends first is tried; the others are listed in the error.
func TestAllCooling(t *testing.T) {
	clk := newClock()
	store := NewMemoryStore()
	now := clk.Now()
	store.PutCooldown("profile:a", Cooldown{Until: now.Add(10 * time.Minute), Reason: engine.ErrAuth})
	store.PutCooldown("model:b/y", Cooldown{Until: now.Add(5 * time.Minute), Reason: engine.ErrRateLimit})
	a := &fake{}
	b := &fake{steps: []func(func(engine.Event)) error{answer("still here"), fail(merr(engine.ErrRateLimit, 429, "again"))}}
	c, sw := newChain(clk, store, cand("a/x", "", a), cand("b/y", "", b))

	r := stream(t, c, sw)
	if r.err != nil || a.count() != 0 || b.count() != 1 || c.Answered() != "b/y" {
		t.Fatalf("err %v, calls %d/%d, answered %q", r.err, a.count(), b.count(), c.Answered())
	}
	want := []Switch{{From: "a/x", To: "b/y", Reason: engine.ErrAuth, Detail: "cooling down until 2026-11-03T09:10:00Z", Skipped: true}}
	if !slices.Equal(r.switches, want) {
		t.Errorf("switches %+v, want %+v", r.switches, want)
	}
	// The answer cleared b's cooldown; put one back and fail the last resort.
	store.PutCooldown("model:b/y", Cooldown{Until: now.Add(5 * time.Minute), Reason: engine.ErrRateLimit})
	r = stream(t, c, sw)
	wantErr := "rate_limit: every model failed: b/y: rate_limit (HTTP 429: again); a/x: not tried, cooling down until 2026-11-03T09:10:00Z (auth)"
	if r.err == nil || r.err.Error() != wantErr || a.count() != 0 {
		t.Errorf("err:\n%v\nwant:\n%s", r.err, wantErr)
	}
}

// TestLastResortAfterFailures: the only candidate not cooling down fails,
// so the cooling one is tried rather than failing the turn.
func TestLastResortAfterFailures(t *testing.T) {
	clk := newClock()
	store := NewMemoryStore()
	store.PutCooldown("profile:openai", Cooldown{Until: clk.Now().Add(time.Hour), Reason: engine.ErrBilling, BillingStrikes: 1})
	local := &fake{steps: []func(func(engine.Event)) error{fail(merr(engine.ErrUnreachable, 0, "runner crashed"))}}
	remote := &fake{}
	c, sw := newChain(clk, store, cand("openai/gpt-4o-mini", "", remote), cand("local/qwen3-1.7b", "", local))
	r := stream(t, c, sw)
	if r.err != nil || local.count() != 1 || remote.count() != 1 || c.Answered() != "openai/gpt-4o-mini" {
		t.Fatalf("err %v, calls %d/%d, answered %q", r.err, local.count(), remote.count(), c.Answered())
	}
	want := []Switch{
		{From: "openai/gpt-4o-mini", To: "local/qwen3-1.7b", Reason: engine.ErrBilling, Detail: "cooling down until 2026-11-03T10:00:00Z", Skipped: true},
		{From: "local/qwen3-1.7b", To: "openai/gpt-4o-mini", Reason: engine.ErrUnreachable, Detail: "runner crashed"},
	}
	if !slices.Equal(r.switches, want) {
		t.Errorf("switches:\n%+v\nwant:\n%+v", r.switches, want)
	}
	if cd, _, _ := store.Cooldown("profile:openai"); !cd.Until.IsZero() || cd.BillingStrikes != 0 {
		t.Errorf("the answer did not clear the cooldown: %+v", cd)
	}
}

func TestFailureWindow(t *testing.T) {
	clk := newClock()
	store := NewMemoryStore()
	down := &fake{steps: []func(func(engine.Event)) error{fail(merr(engine.ErrUnreachable, 0, "down"))}}
	c, sw := newChain(clk, store, cand("a/x", "", down), cand("b/y", "", &fake{}))
	for range 3 {
		stream(t, c, sw)
		clk.Add(20 * time.Minute)
	}
	st, _ := c.States()
	if st[0].Failures != 2 || !st[0].Until.IsZero() { // the first is 60 min old
		t.Errorf("state = %+v, want 2 failures in the window and no cooldown", st[0])
	}
	stream(t, c, sw)
	if cd, _, _ := store.Cooldown("model:a/x"); len(cd.Failures) != 3 {
		t.Errorf("stored failures = %v, want the old one pruned", cd.Failures)
	}
	for range maxFailures + 5 {
		stream(t, c, sw)
	}
	if cd, _, _ := store.Cooldown("model:a/x"); len(cd.Failures) != maxFailures {
		t.Errorf("stored %d failures, want at most %d", len(cd.Failures), maxFailures)
	}
}

func TestContextCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a := &fake{}
	c := New(Config{}, []Candidate{cand("a/x", "", a)}, nil)
	err := c.Stream(ctx, &engine.ChatRequest{}, nil)
	if engine.KindOf(err) != engine.ErrAborted || a.count() != 0 {
		t.Errorf("canceled before: %v, %d calls", err, a.count())
	}

	// Canceled during a call that then reports unreachable: no failover.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	first := &fake{steps: []func(func(engine.Event)) error{func(func(engine.Event)) error {
		cancel()
		return merr(engine.ErrUnreachable, 0, "connection reset")
	}}}
	second := &fake{}
	c = New(Config{}, []Candidate{cand("a/x", "", first), cand("b/y", "", second)}, nil)
	if err := c.Stream(ctx, &engine.ChatRequest{}, nil); engine.KindOf(err) != engine.ErrUnreachable || second.count() != 0 {
		t.Errorf("canceled during: %v, fallback calls %d", err, second.count())
	}
}

func TestEmptyAndBrokenChains(t *testing.T) {
	err := New(Config{}, nil, nil).Stream(context.Background(), &engine.ChatRequest{}, nil)
	if engine.KindOf(err) != engine.ErrNoModel {
		t.Errorf("empty chain: %v", err)
	}
	ok := &fake{}
	c := New(Config{}, []Candidate{{Ref: "x/missing", Provider: "x", ModelID: "missing"}, cand("b/y", "", ok)}, nil)
	if err := c.Stream(context.Background(), &engine.ChatRequest{}, nil); err != nil || ok.count() != 1 {
		t.Errorf("nil model: %v, %d calls", err, ok.count())
	}
}

type brokenStore struct{}

func (brokenStore) Cooldown(string) (Cooldown, bool, error) {
	return Cooldown{}, false, errors.New("disk on fire")
}
func (brokenStore) PutCooldown(string, Cooldown) error { return errors.New("disk on fire") }

func TestStoreErrors(t *testing.T) {
	// Unreadable cooldowns count as none: the model still answers.
	var log strings.Builder
	a := &fake{}
	c := New(Config{Store: brokenStore{}, Logger: slog.New(slog.NewTextHandler(&log, nil))}, []Candidate{cand("a/x", "", a)}, nil)
	if err := c.Stream(context.Background(), &engine.ChatRequest{}, nil); err != nil || a.count() != 1 {
		t.Errorf("broken store: %v, %d calls", err, a.count())
	}
	if !strings.Contains(log.String(), "cooldown not read") || !strings.Contains(log.String(), "disk on fire") {
		t.Errorf("log = %q", log.String())
	}
	if _, err := c.States(); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("States with a broken store: %v", err)
	}

	// A cooldown that cannot be saved is logged; the call still fails over.
	log.Reset()
	ro := JSONStore(func(string, any) (bool, error) { return false, nil }, func(string, any) error { return errors.New("read-only") })
	limited := &fake{steps: []func(func(engine.Event)) error{fail(merr(engine.ErrRateLimit, 429, ""))}}
	c = New(Config{Store: ro, Logger: slog.New(slog.NewTextHandler(&log, nil))}, []Candidate{cand("a/x", "", limited), cand("b/y", "", &fake{})}, nil)
	if err := c.Stream(context.Background(), &engine.ChatRequest{}, nil); err != nil || c.Answered() != "b/y" {
		t.Errorf("read-only store: %v, answered %q", err, c.Answered())
	}
	if !strings.Contains(log.String(), "cooldown not saved") || !strings.Contains(log.String(), "read-only") {
		t.Errorf("log = %q", log.String())
	}

	put := errors.New("read-only")
	js := JSONStore(func(string, any) (bool, error) { return false, nil }, func(string, any) error { return put })
	if err := js.PutCooldown("k", Cooldown{}); !errors.Is(err, put) || err.Error() != "cooldown k: read-only" {
		t.Errorf("JSONStore put error = %v", err)
	}
}

// TestConcurrentStreams: one chain shared by parallel turns (run with -race).
func TestConcurrentStreams(t *testing.T) {
	flaky := &fake{steps: []func(func(engine.Event)) error{fail(merr(engine.ErrRateLimit, 429, "")), answer("ok")}}
	c := New(Config{}, []Candidate{cand("a/x", "", flaky), cand("b/y", "", &fake{})}, func(Switch) {})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := c.Stream(context.Background(), &engine.ChatRequest{}, func(engine.Event) {}); err != nil {
				t.Error(err)
			}
			_ = c.Answered()
		})
	}
	wg.Wait()
}
