package channelproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/channel"
)

// Open builds the child's adapter from the Init the gateway sent and the
// Store the gateway serves.
type Open func(init json.RawMessage, store channel.Store) (channel.Adapter, error)

// Serve is the child: it answers the gateway's calls on in and out with the
// adapter open builds, until in ends (the gateway let it go) or fails.
func Serve(in io.Reader, out io.Writer, open Open) error {
	s := &server{open: open}
	s.peer = newPeer(in, out, s.handle)
	err := s.peer.serve()
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

type server struct {
	open Open
	peer *peer

	mu sync.Mutex
	a  channel.Adapter
}

func (s *server) adapter() (channel.Adapter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.a == nil {
		return nil, errors.New("the adapter is not open (no init call)")
	}
	return s.a, nil
}

func (s *server) handle(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method == "init" {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.a != nil {
			return nil, errors.New("init twice")
		}
		a, err := s.open(params, remoteStore{s.peer})
		if err != nil {
			return nil, err
		}
		s.a = a
		return nil, nil
	}
	a, err := s.adapter()
	if err != nil {
		return nil, err
	}
	switch method {
	case "run":
		return nil, a.Run(ctx, remoteInbox{s.peer})
	case "send":
		var m channel.Outbound
		if err := json.Unmarshal(params, &m); err != nil {
			return nil, err
		}
		return a.Send(ctx, m)
	case "status":
		return a.Status(), nil
	case "typing":
		var t typing
		if err := json.Unmarshal(params, &t); err != nil {
			return nil, err
		}
		if ty, ok := a.(channel.Typer); ok {
			return nil, ty.Typing(ctx, t.ChatID, t.On)
		}
		return nil, nil
	case "react":
		var r reaction
		if err := json.Unmarshal(params, &r); err != nil {
			return nil, err
		}
		if re, ok := a.(channel.Reactor); ok {
			return nil, re.React(ctx, r.ChatID, r.MessageID, r.Emoji)
		}
		return nil, fmt.Errorf("%w: reactions are not supported", channel.ErrPermanent)
	case "login":
		var opts channel.LoginOptions
		if err := json.Unmarshal(params, &opts); err != nil {
			return nil, err
		}
		l, ok := a.(channel.Linker)
		if !ok {
			return nil, errors.New("this channel has no login")
		}
		return nil, l.Login(ctx, opts, func(ev channel.LoginEvent) {
			_ = s.peer.call(ctx, "loginEvent", ev, nil) // the gateway gone: the login's ctx ends too
		})
	case "logout":
		l, ok := a.(channel.Linker)
		if !ok {
			return nil, errors.New("this channel has no logout")
		}
		return nil, l.Logout(ctx)
	}
	return nil, fmt.Errorf("unknown call %q", method)
}

// remoteInbox delivers to the gateway's inbox.
type remoteInbox struct{ p *peer }

func (r remoteInbox) Deliver(ctx context.Context, m engine.Inbound) error {
	return r.p.call(ctx, "deliver", m, nil)
}

// remoteStore is the adapter's store, kept by the gateway.
type remoteStore struct{ p *peer }

func (r remoteStore) Get(key string, v any) (bool, error) {
	var sv storeValue
	if err := r.p.call(context.Background(), "storeGet", key, &sv); err != nil {
		return false, err
	}
	if !sv.Found {
		return false, nil
	}
	return true, json.Unmarshal(sv.Value, v)
}

func (r remoteStore) Put(key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return r.p.call(context.Background(), "storePut", storePut{Key: key, Value: data}, nil)
}
