package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Limits every control API listener gets (the Unix socket today, the LAN
// TLS listener later), so a slow, stuck or greedy client can hold neither a
// turn nor the gateway: stream writes have per-event deadlines
// (engine/gateway), bodies must keep arriving, idle connections close, and
// connections beyond the cap wait in the kernel's accept queue.
const (
	maxConns          = 64
	maxConnsPerHost   = 16 // LAN listener: what one address may hold of maxConns
	readHeaderTimeout = 10 * time.Second
	// bodyReadTimeout bounds reading a request body; the import handler
	// replaces it with a rolling deadline renewed as data arrives.
	bodyReadTimeout = 30 * time.Second
	idleTimeout     = 90 * time.Second
)

// apiServer returns the HTTP server for the control API on any listener.
// There is no server-wide WriteTimeout: a turn's stream may last minutes,
// and each of its events gets its own write deadline instead.
func apiServer(h http.Handler, log *slog.Logger, base context.Context) *http.Server {
	return &http.Server{
		Handler:           bodyDeadline(h, bodyReadTimeout),
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return base },
	}
}

// bodyDeadline gives a request with a body d to send it. The deadline is
// lifted once the body is read to its end: net/http then keeps reading in
// the background to notice a client that hangs up, and a deadline passing
// there would cancel the request's context in the middle of a long turn.
func bodyDeadline(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(d)) == nil {
				r.Body = &liftAtEOF{ReadCloser: r.Body, rc: rc}
			}
		}
		h.ServeHTTP(w, r)
	})
}

type liftAtEOF struct {
	io.ReadCloser
	rc     *http.ResponseController
	lifted bool
}

func (b *liftAtEOF) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.lifted {
		b.lifted = true
		_ = b.rc.SetReadDeadline(time.Time{}) // the connection is gone if this fails
	}
	return n, err
}

// limitListener accepts at most n connections at a time; more wait in the
// kernel's accept queue (and are refused by it once that is full) until one
// closes. Accept blocks meanwhile, so a flood of idle connections cannot
// exhaust the gateway's goroutines or file descriptors.
func limitListener(l net.Listener, n int) net.Listener {
	return &limited{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

type limited struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (l *limited) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limited) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// lanListener caps the LAN TLS listener: total connections in all, and
// perHost from any one remote address. Without the second cap one host
// could take every slot: a stranger is refused only after its handshake
// and one request, and can simply reconnect. (An attacker who claims many
// addresses still can; so can one who floods the LAN.)
func lanListener(ln net.Listener, total, perHost int) net.Listener {
	return limitListener(&perHostListener{Listener: ln, max: perHost, open: map[string]int{}}, total)
}

type perHostListener struct {
	net.Listener
	max  int
	mu   sync.Mutex
	open map[string]int
}

func (l *perHostListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host := c.RemoteAddr().String()
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		l.mu.Lock()
		if l.open[host] >= l.max {
			l.mu.Unlock()
			c.Close() // over its share: refused without taking a slot
			continue
		}
		l.open[host]++
		l.mu.Unlock()
		return &limitedConn{Conn: c, release: func() {
			l.mu.Lock()
			if l.open[host]--; l.open[host] <= 0 {
				delete(l.open, host)
			}
			l.mu.Unlock()
		}}, nil
	}
}
