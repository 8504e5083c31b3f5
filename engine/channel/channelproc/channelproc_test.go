package channelproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/channel"
)

// The child is this test binary with CHANNELPROC_CHILD=1 serving fakeAdapter
// over real pipes, as openclaw-whatsapp serves the WhatsApp adapter.
func TestMain(m *testing.M) {
	if os.Getenv("CHANNELPROC_CHILD") == "1" {
		err := Serve(os.Stdin, os.Stdout, func(init json.RawMessage, store channel.Store) (channel.Adapter, error) {
			var cfg struct{ Account string }
			if err := json.Unmarshal(init, &cfg); err != nil {
				return nil, err
			}
			if cfg.Account == "bad" {
				return nil, errors.New("channels.fake: bad account")
			}
			return &fakeAdapter{account: cfg.Account, store: store}, nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type fakeAdapter struct {
	account string
	store   channel.Store
}

func (f *fakeAdapter) Channel() string { return "fake" }
func (f *fakeAdapter) Account() string { return f.account }
func (f *fakeAdapter) Run(ctx context.Context, in channel.Inbox) error {
	var n int
	if _, err := f.store.Get("cursor", &n); err != nil {
		return err
	}
	if err := in.Deliver(ctx, engine.Inbound{Channel: "fake", Account: f.account, ChatID: "c1", SenderID: "+1555", Text: fmt.Sprintf("hello %d", n), MessageID: "m1"}); err != nil {
		return err
	}
	if err := f.store.Put("cursor", n+1); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}
func (f *fakeAdapter) Send(ctx context.Context, m channel.Outbound) (channel.Receipt, error) {
	switch m.ChatID {
	case "perm":
		return channel.Receipt{}, fmt.Errorf("%w: unknown recipient", channel.ErrPermanent)
	case "down":
		return channel.Receipt{}, fmt.Errorf("%w: link down", channel.ErrNotConnected)
	}
	return channel.Receipt{MessageID: "sent-" + m.Text}, f.store.Put("sent", m)
}
func (f *fakeAdapter) Status() channel.Status {
	return channel.Status{Channel: "fake", Account: f.account, State: channel.StateLinked, Self: "+1000"}
}
func (f *fakeAdapter) Login(ctx context.Context, opts channel.LoginOptions, emit func(channel.LoginEvent)) error {
	emit(channel.LoginEvent{QR: "qr-1"})
	emit(channel.LoginEvent{Done: true, Self: opts.Phone})
	return nil
}
func (f *fakeAdapter) Logout(ctx context.Context) error { return channel.ErrLoggedOut }

type memStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *memStore) Get(key string, v any) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.m[key]
	if !ok {
		return false, nil
	}
	return true, json.Unmarshal(d, v)
}
func (s *memStore) Put(key string, v any) error {
	d, err := json.Marshal(v)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = d
	return err
}

type inbox chan engine.Inbound

func (in inbox) Deliver(ctx context.Context, m engine.Inbound) error { in <- m; return nil }

func newAdapter(account string, last **exec.Cmd) (*Adapter, *memStore) {
	st := &memStore{m: map[string][]byte{}}
	return New(Config{Channel: "fake", Account: account, Store: st, Init: map[string]string{"Account": account}, MaxMediaBytes: 7,
		Command: func() *exec.Cmd {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), "CHANNELPROC_CHILD=1")
			if last != nil {
				*last = cmd
			}
			return cmd
		}}), st
}

func TestAdapterInChild(t *testing.T) {
	a, st := newAdapter("default", nil)
	if a.Status().State != channel.StateStopped {
		t.Fatalf("before Run: %+v", a.Status())
	}
	if _, err := a.Send(context.Background(), channel.Outbound{ChatID: "c1", Text: "x"}); !errors.Is(err, channel.ErrNotConnected) {
		t.Fatalf("Send before Run: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := make(inbox, 4)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, in) }()
	select {
	case m := <-in:
		if m.Text != "hello 0" || m.ChatID != "c1" || m.SenderID != "+1555" {
			t.Fatalf("delivered %+v", m)
		}
	case err := <-done:
		t.Fatalf("Run ended: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("nothing delivered")
	}
	if st := a.Status(); st.State != channel.StateLinked || st.Self != "+1000" {
		t.Fatalf("status %+v", st)
	}
	r, err := a.Send(context.Background(), channel.Outbound{Channel: "fake", ChatID: "c1", Text: "hi"})
	if err != nil || r.MessageID != "sent-hi" {
		t.Fatalf("send: %+v %v", r, err)
	}
	var sent channel.Outbound
	if ok, _ := st.Get("sent", &sent); !ok || sent.Text != "hi" {
		t.Fatalf("the child's store write: %+v", sent)
	}
	if _, err := a.Send(context.Background(), channel.Outbound{ChatID: "perm"}); !errors.Is(err, channel.ErrPermanent) {
		t.Fatalf("permanent: %v", err)
	}
	if _, err := a.Send(context.Background(), channel.Outbound{ChatID: "down"}); !errors.Is(err, channel.ErrNotConnected) {
		t.Fatalf("not connected: %v", err)
	}
	if a.MaxMediaBytes() != 7 {
		t.Fatal("MaxMediaBytes")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	if a.running() != nil {
		t.Fatal("the child outlived Run")
	}
	if _, err := a.Send(context.Background(), channel.Outbound{ChatID: "c1"}); !errors.Is(err, channel.ErrNotConnected) {
		t.Fatalf("Send after Run: %v", err)
	}
	var cursor int
	if ok, _ := st.Get("cursor", &cursor); !ok || cursor != 1 {
		t.Fatalf("cursor %d", cursor)
	}
}

func TestLoginLogoutInChild(t *testing.T) {
	a, _ := newAdapter("default", nil)
	var evs []channel.LoginEvent
	if err := a.Login(context.Background(), channel.LoginOptions{Phone: "+1222"}, func(ev channel.LoginEvent) { evs = append(evs, ev) }); err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].QR != "qr-1" || !evs[1].Done || evs[1].Self != "+1222" {
		t.Fatalf("events %+v", evs)
	}
	if err := a.Logout(context.Background()); !errors.Is(err, channel.ErrLoggedOut) {
		t.Fatalf("logout: %v", err)
	}
	if a.running() != nil {
		t.Fatal("the child outlived Login and Logout")
	}
}

// TestChildDies: a child killed under Run fails Run (the supervisor
// restarts it); the next Run starts a new child.
func TestChildDies(t *testing.T) {
	var last *exec.Cmd
	a, _ := newAdapter("default", &last)
	in := make(inbox, 4)
	done := make(chan error, 1)
	go func() { done <- a.Run(context.Background(), in) }()
	<-in
	if err := last.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil || !errors.Is(err, channel.ErrNotConnected) {
			t.Fatalf("Run after the kill: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not end")
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- a.Run(ctx, in) }()
	select {
	case m := <-in:
		if m.Text != "hello 0" && m.Text != "hello 1" { // killed before or after its cursor write
			t.Fatalf("second run delivered %+v", m)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no second run")
	}
	cancel()
	<-done
}

func TestBadInit(t *testing.T) {
	a, _ := newAdapter("bad", nil)
	err := a.Run(context.Background(), make(inbox))
	if err == nil || err.Error() != "fake process: channels.fake: bad account" {
		t.Fatalf("Run with a bad config: %v", err)
	}
	if a.running() != nil {
		t.Fatal("a child left behind")
	}
}
