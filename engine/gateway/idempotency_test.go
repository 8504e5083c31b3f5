package gateway_test

import (
	"context"
	"errors"
	"github.com/openclaw-edge/edge/engine/gateway"
	"github.com/openclaw-edge/edge/engine/gateway/gatewaytest"
	"github.com/openclaw-edge/edge/engine/localapi"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/session"
	"github.com/openclaw-edge/edge/engine/store/bolt"
	"github.com/openclaw-edge/edge/engine/tool"
	"github.com/openclaw-edge/edge/engine/transcript"
)

// recStore is the real bbolt store, recording what each Commit wrote and
// failing commits on demand (a full disk).
type recStore struct {
	*bolt.DB
	mu      sync.Mutex
	commits []commitRec
	fail    atomic.Bool
}

type commitRec struct {
	roles    []string // the roles of the message entries written
	openTurn string   // the entry's OpenTurn after the commit
}

var errDiskFull = errors.New("write state.db: no space left on device")

func (s *recStore) Commit(agentID string, key engine.SessionKey, c session.Commit) (session.Entry, []transcript.Entry, error) {
	if s.fail.Load() {
		return session.Entry{}, nil, errDiskFull
	}
	e, stored, err := s.DB.Commit(agentID, key, c)
	if err == nil {
		rec := commitRec{openTurn: e.OpenTurn}
		for _, te := range stored {
			if te.Message != nil {
				rec.roles = append(rec.roles, string(te.Message.Role))
			}
		}
		s.mu.Lock()
		s.commits = append(s.commits, rec)
		s.mu.Unlock()
	}
	return e, stored, err
}

// idemHarness is a gateway over a recStore.
func idemHarness(t *testing.T, steps ...gatewaytest.Step) (*gatewaytest.Harness, *recStore) {
	t.Helper()
	dir := t.TempDir()
	db, _ := gatewaytest.State(t, dir)
	st := &recStore{DB: db}
	h := gatewayOver(t, st, db, dir, steps...)
	return h, st
}

func gatewayOver(t *testing.T, st session.Store, db *bolt.DB, dir string, steps ...gatewaytest.Step) *gatewaytest.Harness {
	t.Helper()
	ws := filepath.Join(dir, "workspace")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	m := &gatewaytest.Model{Steps: steps}
	sessions := session.NewManager(st, session.Config{DailyResetHour: new(-1)})
	g, err := gateway.New(gateway.Config{
		Agents:   []gateway.Agent{{ID: "main", Name: "Claw", Workspace: ws, Model: "fake/model", MaxTurns: 5}},
		Sessions: sessions,
		Tools:    tool.NewRegistry(),
		Models:   gatewaytest.Models{M: m},
		Version:  "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	return &gatewaytest.Harness{G: g, Model: m, Workspace: ws, Sessions: sessions, DB: db}
}

// collect returns an emit func and the events it got.
func collect() (func(api.Event), func() []api.Event) {
	var (
		mu  sync.Mutex
		evs []api.Event
	)
	return func(ev api.Event) {
			mu.Lock()
			evs = append(evs, ev)
			mu.Unlock()
		}, func() []api.Event {
			mu.Lock()
			defer mu.Unlock()
			return append([]api.Event(nil), evs...)
		}
}

func types(evs []api.Event) string {
	var s []string
	for _, ev := range evs {
		s = append(s, string(ev.Type))
	}
	return strings.Join(s, " ")
}

// The final reply is committed in the same transaction as the end of the
// turn; intermediate assistant messages (tool calls) and tool results in
// their own.
func TestReplyCommitsWithEndOfTurn(t *testing.T) {
	h, st := idemHarness(t, gatewaytest.CallTool("ls", map[string]string{"path": "."}), gatewaytest.Reply("all done"))
	res, _, err := h.Send(t, "look around")
	if err != nil {
		t.Fatal(err)
	}
	if res.Reply != "all done" {
		t.Fatalf("reply %q", res.Reply)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var got []string
	for _, c := range st.commits {
		s := strings.Join(c.roles, "+")
		if c.openTurn != "" {
			s += "(open)"
		} else {
			s += "(closed)"
		}
		got = append(got, s)
	}
	want := "user(open) assistant(open) toolResult(open) assistant(closed)"
	if strings.Join(got, " ") != want {
		t.Errorf("commits = %s, want %s", strings.Join(got, " "), want)
	}
}

// A failed model call closes the turn with its error entry in one commit,
// and a retry of its key gets the error, not a second turn.
func TestFailedTurnRetry(t *testing.T) {
	h, _ := idemHarness(t, gatewaytest.Fail(&engine.ModelError{Kind: engine.ErrUnreachable, Message: "connection refused"}))
	req := api.SendRequest{Text: "hello", IdempotencyKey: "k-fail"}
	_, err1 := h.G.Send(context.Background(), req, nil)
	_, err2 := h.G.Send(context.Background(), req, nil)
	var a1, a2 *api.Error
	if !errors.As(err1, &a1) || !errors.As(err2, &a2) || a1.Code != api.CodeModelFailed || a2.Code != api.CodeModelFailed {
		t.Fatalf("errors %v / %v", err1, err2)
	}
	if !strings.Contains(a2.Message, "connection refused") {
		t.Errorf("retry's error = %q", a2.Message)
	}
	if n := len(h.Model.Requests()); n != 1 {
		t.Errorf("model called %d times", n)
	}
}

// The accepted event comes after the inbound message is committed and
// before the model is called.
func TestAcceptedAfterCommit(t *testing.T) {
	var h *gatewaytest.Harness
	var modelCalled atomic.Bool
	h, _ = idemHarness(t, func(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error {
		modelCalled.Store(true)
		return gatewaytest.Reply("hi")(ctx, req, emit)
	})
	var checked bool
	_, err := h.G.Send(context.Background(), api.SendRequest{Text: "hello", IdempotencyKey: "k1"}, func(ev api.Event) {
		if ev.Type != api.EventAccepted {
			return
		}
		checked = true
		if modelCalled.Load() {
			t.Error("accepted after the model call")
		}
		if ev.Accepted == nil || ev.Accepted.IdempotencyKey != "k1" || ev.Accepted.SessionKey != "agent:main:main" || ev.Accepted.SessionID == "" {
			t.Errorf("accepted = %+v", ev.Accepted)
		}
		e, ok, err := h.Sessions.Get("main", "agent:main:main")
		if err != nil || !ok || e.OpenTurn == "" {
			t.Errorf("inbound not committed at accepted: %+v %v %v", e, ok, err)
		}
	})
	if err != nil || !checked {
		t.Fatalf("err %v, accepted seen %v", err, checked)
	}
}

// A retry with a known key never starts a second turn, whatever state the
// first one is in.
func TestIdempotentRetry(t *testing.T) {
	t.Run("running: attaches and streams the rest", func(t *testing.T) {
		release := make(chan struct{})
		started := make(chan struct{})
		h, _ := idemHarness(t, func(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error {
			emit(engine.Event{Type: engine.EventTextDelta, Text: "first "})
			close(started)
			<-release
			emit(engine.Event{Type: engine.EventTextDelta, Text: "second"})
			emit(engine.Event{Type: engine.EventMessageEnd, StopReason: engine.StopEnd})
			return nil
		})
		req := api.SendRequest{Text: "slow", IdempotencyKey: "k-run"}
		var wg sync.WaitGroup
		var res1 *api.Result
		var err1 error
		wg.Go(func() { res1, err1 = h.G.Send(context.Background(), req, nil) })
		<-started
		emit2, evs2 := collect()
		var res2 *api.Result
		var err2 error
		attached := make(chan struct{})
		wg.Go(func() {
			res2, err2 = h.G.Send(context.Background(), req, func(ev api.Event) {
				emit2(ev)
				if ev.Type == api.EventDelta && ev.Text == "first " {
					close(attached)
				}
			})
		})
		<-attached
		close(release)
		wg.Wait()
		if err1 != nil || err2 != nil {
			t.Fatalf("errors %v / %v", err1, err2)
		}
		if res1.Reply != "first second" || res2.Reply != "first second" {
			t.Errorf("replies %q / %q", res1.Reply, res2.Reply)
		}
		evs := evs2()
		if got := types(evs); got != "accepted delta delta" {
			t.Errorf("retry's events = %s", got)
		}
		for i, ev := range evs {
			if ev.Seq != i+1 || ev.Turn == "" || ev.Turn != evs[0].Turn {
				t.Errorf("event %d numbered %s/%d", i, ev.Turn, ev.Seq)
			}
		}
		if n := len(h.Model.Requests()); n != 1 {
			t.Errorf("model called %d times", n)
		}
	})

	t.Run("finished: the recorded reply", func(t *testing.T) {
		h, _ := idemHarness(t, gatewaytest.Reply("the answer"))
		req := api.SendRequest{Text: "q", IdempotencyKey: "k-done"}
		if _, err := h.G.Send(context.Background(), req, nil); err != nil {
			t.Fatal(err)
		}
		emit, evs := collect()
		res, err := h.G.Send(context.Background(), req, emit)
		if err != nil {
			t.Fatal(err)
		}
		if res.Reply != "the answer" || !res.Replayed || res.SessionID == "" || res.Model != "fake/model" {
			t.Errorf("replayed result = %+v", res)
		}
		if got := types(evs()); got != "accepted" {
			t.Errorf("events = %s", got)
		}
		if n := len(h.Model.Requests()); n != 1 {
			t.Errorf("model called %d times", n)
		}
		if got := strings.Join(h.EntryRoles(t), " "); got != "user assistant" {
			t.Errorf("transcript = %s", got)
		}
	})

	t.Run("after a restart: the recorded reply", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "state.db")
		db, err := bolt.Open(path, bolt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		h := gatewayOver(t, db, db, dir, gatewaytest.Reply("kept"))
		req := api.SendRequest{Text: "q", IdempotencyKey: "k-restart"}
		if _, err := h.G.Send(context.Background(), req, nil); err != nil {
			t.Fatal(err)
		}
		db.Close()
		db, err = bolt.Open(path, bolt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		h2 := gatewayOver(t, db, db, dir)
		res, err := h2.G.Send(context.Background(), req, nil)
		if err != nil || res.Reply != "kept" || !res.Replayed {
			t.Fatalf("after restart: %+v, %v", res, err)
		}
		if n := len(h2.Model.Requests()); n != 0 {
			t.Errorf("model called %d times", n)
		}
	})

	t.Run("crash closed it: the interrupted note", func(t *testing.T) {
		h, _ := idemHarness(t)
		// What a SIGKILL after the inbound commit leaves.
		if _, err := h.Sessions.BeginTurn("main", "agent:main:main", session.Meta{}, gateway.IdemDedupKey("k-crash"), engine.UserText("lost?")); err != nil {
			t.Fatal(err)
		}
		if n, err := h.G.RecoverInterrupted(); n != 1 || err != nil {
			t.Fatalf("recovered %d, %v", n, err)
		}
		_, err := h.G.Send(context.Background(), api.SendRequest{Text: "lost?", IdempotencyKey: "k-crash"}, nil)
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != api.CodeInterrupted || ae.Message != gateway.InterruptedNote {
			t.Fatalf("retry = %v", err)
		}
		if n := len(h.Model.Requests()); n != 0 {
			t.Errorf("model called %d times", n)
		}
		if got := strings.Join(h.EntryRoles(t), " "); got != "user assistant" {
			t.Errorf("transcript = %s", got)
		}
	})

	t.Run("crash left it open: the interrupted note", func(t *testing.T) {
		h, _ := idemHarness(t)
		if _, err := h.Sessions.BeginTurn("main", "agent:main:main", session.Meta{}, gateway.IdemDedupKey("k-open"), engine.UserText("lost?")); err != nil {
			t.Fatal(err)
		}
		_, err := h.G.Send(context.Background(), api.SendRequest{Text: "lost?", IdempotencyKey: "k-open"}, nil)
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != api.CodeInterrupted {
			t.Fatalf("retry = %v", err)
		}
		if n := len(h.Model.Requests()); n != 0 {
			t.Errorf("model called %d times", n)
		}
	})
}

// A turn that cannot be closed at start-up (disk full) is not fatal: it is
// reported by status and closed before the next turn of its session.
func TestRecoverInterruptedDiskFull(t *testing.T) {
	h, st := idemHarness(t)
	if _, err := h.Sessions.BeginTurn("main", "agent:main:main", session.Meta{}, gateway.IdemDedupKey("k"), engine.UserText("lost?")); err != nil {
		t.Fatal(err)
	}
	st.fail.Store(true)
	n, err := h.G.RecoverInterrupted()
	if n != 0 || !errors.Is(err, errDiskFull) {
		t.Fatalf("recovered %d, %v", n, err)
	}
	s := h.G.Status()
	if s.InterruptedOpen != 1 || !strings.Contains(s.InterruptedError, "no space left") {
		t.Errorf("status: %d open, %q", s.InterruptedOpen, s.InterruptedError)
	}
	if txt := h.G.StatusText(h.G.Agent("main"), "agent:main:main"); !strings.Contains(txt, "Interrupted turns not closed yet: 1") {
		t.Errorf("/status does not say so:\n%s", txt)
	}
	// Space again: the next message closes the old turn first.
	st.fail.Store(false)
	res, _, err := h.Send(t, "again")
	if err != nil || res.Reply != "echo: again" {
		t.Fatalf("%+v, %v", res, err)
	}
	if got := strings.Join(h.EntryRoles(t), " "); got != "user assistant user assistant" {
		t.Errorf("transcript = %s", got)
	}
	if s := h.G.Status(); s.InterruptedOpen != 0 {
		t.Errorf("still %d open", s.InterruptedOpen)
	}
}

// Over HTTP: the client's connection drops mid-reply; SendRetry re-attaches
// with the same key, shows each delta once and gets one reply.
func TestSendRetryOverHTTP(t *testing.T) {
	release := make(chan struct{})
	h, _ := idemHarness(t, func(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error {
		emit(engine.Event{Type: engine.EventTextDelta, Text: "one "})
		<-release
		emit(engine.Event{Type: engine.EventTextDelta, Text: "two"})
		emit(engine.Event{Type: engine.EventMessageEnd, StopReason: engine.StopEnd})
		return nil
	})
	dir, err := os.MkdirTemp("", "gw")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	// The first request's connection is cut after its first delta.
	var cuts atomic.Int32
	handler := localapi.New(h.G, nil, localapi.Config{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == api.PathMessages {
			if cuts.Add(1) == 1 {
				handler.ServeHTTP(&cutWriter{ResponseWriter: w, after: "one "}, r)
				return
			}
			// The retry: let the model go on once it has attached.
			go func() {
				for !h.G.Followed() {
					time.Sleep(time.Millisecond)
				}
				close(release)
			}()
		}
		handler.ServeHTTP(w, r)
	}))
	srv.Listener = ln
	srv.Start()
	defer srv.Close()

	var deltas []string
	var retries int
	res, err := client.New(sock).SendRetry(context.Background(), api.SendRequest{Text: "count"}, func(ev api.Event) {
		if ev.Type == api.EventDelta {
			deltas = append(deltas, ev.Text)
		}
	}, client.Retry{Backoff: 10 * time.Millisecond, OnRetry: func(int, error, time.Duration) { retries++ }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reply != "one two" || strings.Join(deltas, "|") != "one |two" || retries != 1 {
		t.Errorf("reply %q, deltas %q, %d retries", res.Reply, deltas, retries)
	}
	if n := len(h.Model.Requests()); n != 1 {
		t.Errorf("model called %d times", n)
	}
}

// cutWriter hijacks and closes the connection once a delta with the text
// after has been written: a dropped connection, as when a laptop sleeps.
type cutWriter struct {
	http.ResponseWriter
	after string
	cut   bool
}

func (c *cutWriter) Write(p []byte) (int, error) {
	if c.cut {
		return 0, errors.New("connection cut")
	}
	n, err := c.ResponseWriter.Write(p)
	if strings.Contains(string(p), `"text":"`+c.after+`"`) {
		c.ResponseWriter.(http.Flusher).Flush()
		conn, _, herr := http.NewResponseController(c.ResponseWriter).Hijack()
		if herr != nil {
			panic(herr)
		}
		conn.Close()
		c.cut = true
	}
	return n, err
}

func (c *cutWriter) Flush() {
	if !c.cut {
		c.ResponseWriter.(http.Flusher).Flush()
	}
}
