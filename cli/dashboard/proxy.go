// Package dashboard is the browser's side of `openclaw dashboard`: a
// listener on 127.0.0.1 that lets one browser use the gateway's web
// dashboard through this CLI's own connection to the gateway (its Unix
// socket, or mutual TLS with the paired device key). A browser cannot hold
// that key; this proxy holds it for the browser and lets in only the
// browser that opened the link it printed.
//
// What it checks, on every request (docs/dashboard.md):
//   - Host is this listener's own address (127.0.0.1:PORT, localhost:PORT
//     or [::1]:PORT): a page on a rebound DNS name is refused (421), so
//     DNS rebinding reaches nothing.
//   - The link carries a one-time token (/auth?token=…). Used once, it
//     becomes a random session cookie (HttpOnly, SameSite=Strict, Path=/)
//     and the browser is sent on without it; the same link again is
//     refused (403) unless that browser already holds the cookie.
//   - Every other request needs the cookie (401 otherwise).
//   - A request that changes anything (any method but GET and HEAD) needs
//     an Origin header equal to this listener's origin; any request whose
//     Sec-Fetch-Site says cross-site or same-site is refused. SameSite
//     alone would let another port of 127.0.0.1 (same site, other origin)
//     post with the cookie.
//   - Only /ui/… and /v1/… are forwarded; the browser's cookie, Origin,
//     Referer and Authorization never reach the gateway, which sees this
//     CLI's device and applies its role. A device revoked on the gateway
//     loses its connections at once, and every later request fails with
//     the gateway's not_paired error: the page stops working then.
//
// There is no password and no listener a stranger on the LAN can reach.
package dashboard

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"time"
)

// CookieName is the session cookie's name.
const CookieName = "openclaw_dashboard"

// PathAuth is where the printed link points.
const PathAuth = "/auth"

// Config is what a Proxy needs.
type Config struct {
	// Transport reaches the gateway (the CLI client's); requests are
	// sent to http://openclaw/… and the transport dials the real thing.
	Transport http.RoundTripper
	// Listen is the address to listen on; "" is 127.0.0.1:0 (a random
	// port). Anything but a loopback address is refused.
	Listen string
	Log    *slog.Logger
}

// Proxy is one running dashboard listener.
type Proxy struct {
	cfg    Config
	ln     net.Listener
	srv    *http.Server
	rp     *httputil.ReverseProxy
	origin string   // http://127.0.0.1:PORT
	hosts  []string // the Host values accepted

	mu        sync.Mutex
	token     string // the one-time token; "" once used
	usedToken string
	sessions  map[string]bool // cookie values handed out
}

// New listens and returns the proxy; Serve runs it.
func New(cfg Config) (*Proxy, error) {
	if cfg.Transport == nil {
		return nil, errors.New("dashboard: no connection to the gateway")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	addr := cfg.Listen
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dashboard listen address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("dashboard listen address %q: only a loopback address is allowed (the dashboard is for this machine's browser)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for the dashboard on %s: %w", addr, err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	p := &Proxy{
		cfg:      cfg,
		ln:       ln,
		origin:   fmt.Sprintf("http://127.0.0.1:%d", port),
		sessions: map[string]bool{},
		token:    randomToken(),
	}
	p.hosts = []string{fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("localhost:%d", port), fmt.Sprintf("[::1]:%d", port)}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = "openclaw"
			pr.Out.Host = "openclaw"
			for _, h := range []string{"Cookie", "Origin", "Referer", "Authorization", "Proxy-Authorization"} {
				pr.Out.Header.Del(h)
			}
			for k := range pr.Out.Header {
				if strings.HasPrefix(k, "Sec-") {
					pr.Out.Header.Del(k)
				}
			}
		},
		Transport:     cfg.Transport,
		FlushInterval: -1, // event streams (a reply, logs, progress) flush at once
		ModifyResponse: func(r *http.Response) error {
			r.Header.Del("Set-Cookie")
			setHeaders(r.Header)
			if r.Header.Get("Content-Security-Policy") == "" {
				r.Header.Set("Content-Security-Policy", ownCSP)
			}
			if r.StatusCode >= 400 && strings.HasPrefix(r.Request.URL.Path, "/ui/") {
				errorPage(r) // a page load that failed reads as a page, not JSON
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) {
				return // the browser went away
			}
			cfg.Log.Info("dashboard: gateway request failed", "path", r.URL.Path, "err", err)
			writeJSONError(w, http.StatusBadGateway, "gateway_down", "cannot reach the gateway: "+err.Error())
		},
	}
	p.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	return p, nil
}

// URL is the link to open: it carries the one-time token.
func (p *Proxy) URL() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.origin + PathAuth + "?token=" + p.token
}

// Origin is the listener's origin (http://127.0.0.1:PORT).
func (p *Proxy) Origin() string { return p.origin }

// Serve serves until ctx is done, then closes the listener and every
// connection (event streams included).
func (p *Proxy) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- p.srv.Serve(p.ln) }()
	select {
	case <-ctx.Done():
		p.srv.Close()
		<-errc
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("dashboard listener: %w", err)
	}
}

func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b) //nolint:errcheck // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// ServeHTTP applies the checks in the package doc, then forwards.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setHeaders(w.Header())
	if !p.hostOK(r.Host) {
		p.cfg.Log.Warn("dashboard: refused a request for another host (DNS rebinding?)", "host", r.Host)
		writePage(w, http.StatusMisdirectedRequest, "Wrong address", "This dashboard answers only at "+p.origin+". Open the link `openclaw dashboard` printed.")
		return
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		writeForbidden(w, r, "cross-site request refused")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if r.Header.Get("Origin") != p.origin {
			writeForbidden(w, r, "cross-site request refused: the request did not come from the dashboard's own page")
			return
		}
	}
	if r.URL.Path == PathAuth {
		p.serveAuth(w, r)
		return
	}
	if !p.hasSession(r) {
		writePage(w, http.StatusUnauthorized, "Not signed in", "Open the dashboard with the link `openclaw dashboard` prints; a link works once.")
		return
	}
	switch {
	case r.URL.Path == "/":
		toPage(w, r)
	case strings.HasPrefix(r.URL.Path, "/ui/"), strings.HasPrefix(r.URL.Path, "/v1/"):
		if r.URL.Path == "/v1/pair/code" {
			// Pairing codes are for the box's own console.
			writeForbidden(w, r, "pairing codes are made on the box itself")
			return
		}
		p.rp.ServeHTTP(w, r)
	default:
		writeJSONError(w, http.StatusNotFound, "not_found", "no such page: "+r.URL.Path)
	}
}

func (p *Proxy) hostOK(h string) bool {
	for _, ok := range p.hosts {
		if strings.EqualFold(h, ok) {
			return true
		}
	}
	return false
}

func (p *Proxy) hasSession(r *http.Request) bool {
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sessions[c.Value]
}

// serveAuth trades the one-time token for a session cookie.
func (p *Proxy) serveAuth(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeForbidden(w, r, "open the link in a browser")
		return
	}
	tok := r.URL.Query().Get("token")
	p.mu.Lock()
	valid := tok != "" && p.token != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(p.token)) == 1
	if valid {
		p.usedToken, p.token = p.token, ""
	}
	p.mu.Unlock()
	if !valid {
		if p.hasSession(r) {
			// This browser already came in with it (a reload, the
			// history): no need to refuse it.
			toPage(w, r)
			return
		}
		p.cfg.Log.Warn("dashboard: refused a used or wrong link")
		writePage(w, http.StatusForbidden, "This link was already used", "A dashboard link works once. Run `openclaw dashboard` again for a new one.")
		return
	}
	sess := randomToken()
	p.mu.Lock()
	p.sessions[sess] = true
	p.mu.Unlock()
	http.SetCookie(w, &http.Cookie{
		Name:     CookieName,
		Value:    sess,
		Path:     "/",
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
	})
	toPage(w, r)
}

// ownCSP is the policy of what the proxy answers itself (and of a gateway
// answer that has none): nothing loads, nothing frames it.
const ownCSP = "default-src 'none'; frame-ancestors 'none'"

// setHeaders: no framing, no sniffing, no referrer (the link's token). The
// Content-Security-Policy is set once per answer, by whoever writes it:
// two policies would both apply, and the stricter one would block the
// dashboard's own API calls.
func setHeaders(h http.Header) {
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}

func writeForbidden(w http.ResponseWriter, r *http.Request, msg string) {
	writeJSONError(w, http.StatusForbidden, "forbidden", msg)
}

func writeJSONError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Security-Policy", ownCSP)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"code": code, "message": msg}) //nolint:errcheck // best effort
}

func writePage(w http.ResponseWriter, status int, title, msg string) {
	w.Header().Set("Content-Security-Policy", ownCSP)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><meta charset=utf-8><meta name=viewport content=\"width=device-width\"><title>OpenClaw — %s</title><h1>%s</h1><p>%s</p>\n",
		html.EscapeString(title), html.EscapeString(title), html.EscapeString(msg))
}

// errorPage turns the gateway's JSON error for a page load (a revoked
// device reloading the dashboard) into a page that says the same.
func errorPage(r *http.Response) {
	var e struct{ Code, Message string }
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	r.Body.Close()
	if json.Unmarshal(body, &e) != nil || e.Message == "" {
		e.Message = strings.TrimSpace(string(body))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html><meta charset=utf-8><meta name=viewport content=\"width=device-width\"><title>OpenClaw — the gateway refused</title><h1>The gateway refused</h1><p>%s</p>\n", html.EscapeString(e.Message))
	r.Body = io.NopCloser(strings.NewReader(b.String()))
	r.ContentLength = int64(b.Len())
	r.Header.Set("Content-Length", fmt.Sprint(b.Len()))
	r.Header.Set("Content-Type", "text/html; charset=utf-8")
	r.Header.Del("Content-Encoding")
	r.Header.Set("Content-Security-Policy", ownCSP)
}

// toPage sends the browser on to the dashboard.
func toPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", ownCSP)
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}
