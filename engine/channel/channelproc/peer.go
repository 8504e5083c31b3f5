package channelproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/openclaw-edge/edge/engine/channel"
)

// msg is one JSON value on the pipe: a call (Call set), the reply to a
// call (Reply set, same ID) or a cancel of a running call (Cancel set).
// Each side numbers its own calls; a reply or cancel refers to the
// caller's number.
type msg struct {
	ID     int64           `json:"id"`
	Call   string          `json:"call,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Reply  bool            `json:"reply,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Err    *wireError      `json:"error,omitempty"`
	Cancel bool            `json:"cancel,omitempty"`
}

// wireError carries an error and which of channel's sentinel errors it
// wraps, so the gateway's outbox and supervisor act on it as on an
// in-process adapter's.
type wireError struct {
	Code    string `json:"code,omitempty"` // logged_out, not_connected, permanent, canceled
	Message string `json:"message"`
}

var codes = []struct {
	code string
	err  error
}{
	{"logged_out", channel.ErrLoggedOut},
	{"not_connected", channel.ErrNotConnected},
	{"permanent", channel.ErrPermanent},
	{"canceled", context.Canceled},
}

func toWire(err error) *wireError {
	w := &wireError{Message: err.Error()}
	for _, c := range codes {
		if errors.Is(err, c.err) {
			w.Code = c.code
			break
		}
	}
	return w
}

// remoteError is an error from the other side; it unwraps to the sentinel
// its code names.
type remoteError struct {
	msg  string
	base error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.base }

func fromWire(w *wireError) error {
	e := &remoteError{msg: w.Message}
	for _, c := range codes {
		if c.code == w.Code {
			e.base = c.err
		}
	}
	return e
}

// handler answers one call from the other side.
type handler func(ctx context.Context, method string, params json.RawMessage) (any, error)

// peer is one end of the pipe: it makes calls and answers the other
// side's, each in a goroutine of its own, until the pipe ends.
type peer struct {
	wmu sync.Mutex
	enc *json.Encoder
	dec *json.Decoder

	handle handler
	// stuck, when set, is called when a write has not gone through in
	// writeTimeout (the other side stopped reading).
	stuck func()

	mu      sync.Mutex
	next    int64
	pending map[int64]chan msg
	running map[int64]context.CancelFunc
	closed  error // why the pipe ended; nil while it works

	done chan struct{}
}

func newPeer(r io.Reader, w io.Writer, h handler) *peer {
	return &peer{enc: json.NewEncoder(w), dec: json.NewDecoder(r), handle: h,
		pending: map[int64]chan msg{}, running: map[int64]context.CancelFunc{}, done: make(chan struct{})}
}

func (p *peer) write(m msg) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if p.stuck != nil {
		t := time.AfterFunc(writeTimeout, p.stuck)
		defer t.Stop()
	}
	return p.enc.Encode(m)
}

// writeTimeout is how long one message may take to go through the pipe.
const writeTimeout = 30 * time.Second

// serve reads until the pipe ends, then fails every waiting call and
// cancels every running one. It returns why the pipe ended.
func (p *peer) serve() error {
	var err error
	for {
		var m msg
		if err = p.dec.Decode(&m); err != nil {
			break
		}
		switch {
		case m.Reply:
			p.mu.Lock()
			ch := p.pending[m.ID]
			delete(p.pending, m.ID)
			p.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		case m.Cancel:
			p.mu.Lock()
			if cancel := p.running[m.ID]; cancel != nil {
				cancel()
			}
			p.mu.Unlock()
		case m.Call != "":
			ctx, cancel := context.WithCancel(context.Background())
			p.mu.Lock()
			p.running[m.ID] = cancel
			p.mu.Unlock()
			go func(m msg) {
				defer cancel()
				res, herr := p.handle(ctx, m.Call, m.Params)
				p.mu.Lock()
				delete(p.running, m.ID)
				p.mu.Unlock()
				r := msg{ID: m.ID, Reply: true}
				if herr != nil {
					r.Err = toWire(herr)
				} else if res != nil {
					data, merr := json.Marshal(res)
					if merr != nil {
						r.Err = toWire(merr)
					} else {
						r.Result = data
					}
				}
				_ = p.write(r) // a broken pipe ends serve too
			}(m)
		}
	}
	if errors.Is(err, io.EOF) {
		err = io.EOF
	}
	p.mu.Lock()
	p.closed = err
	for id, ch := range p.pending {
		close(ch)
		delete(p.pending, id)
	}
	for _, cancel := range p.running {
		cancel()
	}
	p.mu.Unlock()
	close(p.done)
	return err
}

// call makes a call and waits for its reply; ctx's end cancels it on the
// other side too (the reply still ends the call).
func (p *peer) call(ctx context.Context, method string, params, result any) error {
	var raw json.RawMessage
	if params != nil {
		data, err := json.Marshal(params)
		if err != nil {
			return err
		}
		raw = data
	}
	ch := make(chan msg, 1)
	p.mu.Lock()
	if p.closed != nil {
		err := p.closed
		p.mu.Unlock()
		return fmt.Errorf("%w: the channel process is gone (%v)", channel.ErrNotConnected, err)
	}
	p.next++
	id := p.next
	p.pending[id] = ch
	p.mu.Unlock()
	if err := p.write(msg{ID: id, Call: method, Params: raw}); err != nil {
		p.mu.Lock()
		delete(p.pending, id)
		p.mu.Unlock()
		return fmt.Errorf("%w: write to the channel process: %v", channel.ErrNotConnected, err)
	}
	var r msg
	var ok bool
	select {
	case r, ok = <-ch:
	case <-ctx.Done():
		// The other side stops the call and replies; a side that does not
		// within cancelWait is given up on.
		_ = p.write(msg{ID: id, Cancel: true})
		select {
		case r, ok = <-ch:
		case <-time.After(cancelWait):
			p.mu.Lock()
			delete(p.pending, id)
			p.mu.Unlock()
			return ctx.Err()
		}
	}
	if !ok {
		return fmt.Errorf("%w: the channel process stopped", channel.ErrNotConnected)
	}
	if r.Err != nil {
		return fromWire(r.Err)
	}
	if result != nil && len(r.Result) > 0 {
		return json.Unmarshal(r.Result, result)
	}
	return nil
}

// cancelWait is how long a cancelled call waits for the other side's reply.
const cancelWait = 10 * time.Second
