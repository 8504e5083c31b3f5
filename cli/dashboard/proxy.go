// Package dashboard is the browser's side of `openclaw dashboard`: a
// listener on 127.0.0.1 that lets one browser use the gateway's web
// dashboard through this CLI's own connection to the gateway (its Unix
// socket, or mutual TLS with the paired device key). A browser cannot hold
// that key; this proxy holds it for the browser and lets in only the
// browser that opened the link it printed.
//
// What it checks, on every request (docs/dashboard.md):
//   - Host is this listener's own address (127.0.0.1:PORT, as printed):
//     a page on a rebound DNS name is refused (421), so DNS rebinding
//     reaches nothing.
//   - The link is /auth#TOKEN: the one-time token is in the fragment, which
//     a browser never sends in a request, a Referer or a log. The /auth page
//     (served here, not by the gateway) posts it back once from this origin
//     and gets a random session secret, which the page keeps in its
//     origin's localStorage. The same token again is refused, and said on
//     stderr (someone else may have had the link).
//   - Every /v1/ request must carry that secret in the X-OpenClaw-Dashboard
//     header (401 otherwise). Not a cookie: cookies are not kept apart by
//     port, so a cookie for 127.0.0.1 is sent to every other local server
//     the browser visits; localStorage belongs to this origin alone.
//   - A request that changes anything (any method but GET and HEAD) needs
//     an Origin header equal to this listener's origin, a request with any
//     other Origin is refused, and so is any whose Sec-Fetch-Site says
//     cross-site or same-site (another port of 127.0.0.1 is the same site)
//     — except the top-level load of /auth itself, which a browser opened
//     from a file may make. No protocol upgrade (WebSocket) is forwarded.
//   - Only /ui/… (the pages: public files, no secret needed) and /v1/… are
//     forwarded; the browser's cookie, Origin, Referer, Authorization and
//     the session header never reach the gateway, which sees this CLI's
//     device and applies its role. A device revoked on the gateway loses
//     its connections at once, and every later request fails with the
//     gateway's not_paired error: the page stops working then.
//   - A session unused for 12 hours ends.
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

// Header carries the page's session secret on every /v1/ request.
const Header = "X-OpenClaw-Dashboard"

// PathAuth is where the printed link points; the page it serves loads
// PathAuthJS.
const (
	PathAuth   = "/auth"
	PathAuthJS = "/auth.js"
)

// sessionIdle is how long a session may go unused.
const sessionIdle = 12 * time.Hour

// Config is what a Proxy needs.
type Config struct {
	// Transport reaches the gateway (the CLI client's); requests are
	// sent to http://openclaw/… and the transport dials the real thing.
	Transport http.RoundTripper
	// Listen is the address to listen on; "" is 127.0.0.1:0 (a random
	// port). Anything but a loopback address is refused.
	Listen string
	// Log gets what the person running the dashboard should know: a link
	// used twice, a request refused for its Host.
	Log *slog.Logger
	Now func() time.Time
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
	token     string               // the one-time token; "" once used
	usedToken string               // the token after its use: a second use is worth a warning
	sessions  map[string]time.Time // secrets handed out → last used
}

// New listens and returns the proxy; Serve runs it.
func New(cfg Config) (*Proxy, error) {
	if cfg.Transport == nil {
		return nil, errors.New("dashboard: no connection to the gateway")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
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
	// The origin is the address really listened on: a link naming another
	// address could be answered by whoever squats that one.
	hostport := ln.Addr().String()
	p := &Proxy{
		cfg:      cfg,
		ln:       ln,
		origin:   "http://" + hostport,
		hosts:    []string{hostport},
		sessions: map[string]time.Time{},
		token:    randomToken(),
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = "openclaw"
			pr.Out.Host = "openclaw"
			for _, h := range []string{"Cookie", "Origin", "Referer", "Authorization", "Proxy-Authorization", Header} {
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

// URL is the link to open: it carries the one-time token in its fragment.
func (p *Proxy) URL() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.origin + PathAuth + "#" + p.token
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
	topAuth := r.Method == http.MethodGet && r.URL.Path == PathAuth
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" && !topAuth {
		writeForbidden(w, "cross-site request refused")
		return
	}
	origin := r.Header.Get("Origin")
	if origin != "" && origin != p.origin || r.Method != http.MethodGet && r.Method != http.MethodHead && origin != p.origin {
		writeForbidden(w, "cross-site request refused: the request did not come from the dashboard's own page")
		return
	}
	if r.Header.Get("Upgrade") != "" {
		writeForbidden(w, "no protocol upgrade here")
		return
	}
	switch {
	case r.URL.Path == PathAuth:
		p.serveAuth(w, r)
	case r.URL.Path == PathAuthJS && r.Method == http.MethodGet:
		w.Header().Set("Content-Security-Policy", authCSP)
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, authJS) //nolint:errcheck // the browser went away
	case r.URL.Path == "/":
		toPage(w, r)
	case strings.HasPrefix(r.URL.Path, "/ui/"):
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			writeForbidden(w, "the pages are only read")
			return
		}
		p.rp.ServeHTTP(w, r)
	case strings.HasPrefix(r.URL.Path, "/v1/"):
		if !p.hasSession(r) {
			writeJSONError(w, http.StatusUnauthorized, "signed_out", "This dashboard session is not signed in (or it ended). Run `openclaw dashboard` again for a new link.")
			return
		}
		if r.URL.Path == "/v1/pair/code" {
			// Pairing codes are for the box's own console.
			writeForbidden(w, "pairing codes are made on the box itself")
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

// hasSession reports whether r carries a live session secret, and marks
// it used.
func (p *Proxy) hasSession(r *http.Request) bool {
	secret := r.Header.Get(Header)
	if secret == "" {
		return false
	}
	now := p.cfg.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	last, ok := p.sessions[secret]
	if !ok {
		return false
	}
	if now.Sub(last) > sessionIdle {
		delete(p.sessions, secret)
		return false
	}
	p.sessions[secret] = now
	return true
}

// serveAuth serves the page the link opens (GET) and trades the one-time
// token that page posts back for a session secret (POST, from this origin
// only: checked above).
func (p *Proxy) serveAuth(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		w.Header().Set("Content-Security-Policy", authCSP)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, authPage) //nolint:errcheck // the browser went away
		return
	case http.MethodPost:
	default:
		writeForbidden(w, "open the link in a browser")
		return
	}
	var req struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 4<<10)).Decode(&req); err != nil {
		writeJSONError(w, http.StatusBadRequest, "bad_request", "want {\"token\"}")
		return
	}
	p.mu.Lock()
	valid := req.Token != "" && p.token != "" && subtle.ConstantTimeCompare([]byte(req.Token), []byte(p.token)) == 1
	reused := !valid && req.Token != "" && p.usedToken != "" && subtle.ConstantTimeCompare([]byte(req.Token), []byte(p.usedToken)) == 1
	var secret string
	if valid {
		p.usedToken, p.token = p.token, ""
		secret = randomToken()
		p.sessions[secret] = p.cfg.Now()
	}
	p.mu.Unlock()
	if !valid {
		if reused {
			p.cfg.Log.Warn("the dashboard link was used a second time and refused: if that was not you, someone else had the link (stop this dashboard with Ctrl-C)")
		}
		writeJSONError(w, http.StatusForbidden, "link_used", "A dashboard link works once. Run `openclaw dashboard` again for a new one.")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", ownCSP)
	json.NewEncoder(w).Encode(map[string]string{"secret": secret}) //nolint:errcheck // the browser went away
}

// authCSP lets the /auth page run its one script and post the token back.
const authCSP = "default-src 'none'; script-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// authPage is what the link opens; authJS trades the token in its
// fragment for a session secret and goes on to the dashboard.
const authPage = `<!doctype html><meta charset=utf-8><meta name=viewport content="width=device-width"><title>OpenClaw — signing in</title><p id=m>Signing in…</p><script src="/auth.js"></script>
`

const authJS = `(async () => {
  const token = location.hash.slice(1);
  history.replaceState(null, '', '/auth');
  const say = m => { document.getElementById('m').textContent = m; };
  if (!token) { say('This link has no token. Run openclaw dashboard again for a new one.'); return; }
  try {
    const res = await fetch('/auth', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ token }) });
    const v = await res.json();
    if (!res.ok) { say(v.message || 'Refused.'); return; }
    localStorage.setItem('openclaw-dashboard', v.secret);
    location.replace('/ui/');
  } catch (e) { say('Could not sign in: ' + e.message); }
})();
`

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

func writeForbidden(w http.ResponseWriter, msg string) {
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
	io.WriteString(w, page(title, msg)) //nolint:errcheck // best effort
}

// page is a minimal page with a heading and one paragraph, escaped.
func page(title, msg string) string {
	t, m := html.EscapeString(title), html.EscapeString(msg)
	return "<!doctype html><meta charset=utf-8><meta name=viewport content=\"width=device-width\"><title>OpenClaw — " + t + "</title><h1>" + t + "</h1><p>" + m + "</p>\n"
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
	b := page("The gateway refused", e.Message)
	r.Body = io.NopCloser(strings.NewReader(b))
	r.ContentLength = int64(len(b))
	r.Header.Set("Content-Length", fmt.Sprint(len(b)))
	r.Header.Set("Content-Type", "text/html; charset=utf-8")
	r.Header.Del("Content-Encoding")
	r.Header.Set("Content-Security-Policy", ownCSP)
}

// toPage sends the browser on to the dashboard.
func toPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", ownCSP)
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}
