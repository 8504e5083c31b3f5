package dashboard

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// gateway is a stand-in for the gateway's mux that records what reached it.
type gateway struct {
	mu   sync.Mutex
	seen []*http.Request
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	g.seen = append(g.seen, r.Clone(context.Background()))
	g.mu.Unlock()
	w.Header().Set("Set-Cookie", "evil=1")
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"ok":true}`)
}

func (g *gateway) last() *http.Request {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.seen) == 0 {
		return nil
	}
	return g.seen[len(g.seen)-1]
}

func newProxy(t *testing.T, now ...func() time.Time) (*Proxy, *gateway) {
	t.Helper()
	g := &gateway{}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}}
	cfg := Config{Transport: tr}
	if len(now) > 0 {
		cfg.Now = now[0]
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Serve(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return p, g
}

// do sends one request with the given headers and body; it never follows
// redirects.
func do(t *testing.T, p *Proxy, method, path, body string, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, p.Origin()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	res.Body = io.NopCloser(strings.NewReader(string(b)))
	return res
}

// login does what the /auth page does: posts the link's token back.
func login(t *testing.T, p *Proxy) string {
	t.Helper()
	u, _ := url.Parse(p.URL())
	if u.Path != PathAuth || u.RawQuery != "" || len(u.Fragment) < 40 {
		t.Fatalf("link %s: want the token in the fragment of /auth", p.URL())
	}
	page := do(t, p, "GET", PathAuth, "", map[string]string{"Sec-Fetch-Site": "cross-site"}) // opened from a file
	if page.StatusCode != 200 || !strings.Contains(page.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("the /auth page: %d", page.StatusCode)
	}
	res := do(t, p, "POST", PathAuth, `{"token":"`+u.Fragment+`"}`, map[string]string{"Origin": p.Origin(), "Content-Type": "application/json"})
	var v struct{ Secret string }
	if err := json.NewDecoder(res.Body).Decode(&v); err != nil || res.StatusCode != 200 || len(v.Secret) < 40 {
		t.Fatalf("login: %d %v %+v", res.StatusCode, err, v)
	}
	if res.Header.Get("Set-Cookie") != "" {
		t.Errorf("a cookie was set: cookies reach every port of 127.0.0.1")
	}
	return v.Secret
}

func TestProxyChecks(t *testing.T) {
	p, g := newProxy(t)
	link := p.URL()
	secret := login(t, p)
	u, _ := url.Parse(link)
	port := u.Port()
	origin := p.Origin()
	token := `{"token":"` + u.Fragment + `"}`
	s := map[string]string{Header: secret}
	with := func(kv ...string) map[string]string {
		m := map[string]string{Header: secret}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}

	tests := []struct {
		name         string
		method, path string
		body         string
		hdr          map[string]string
		want         int
		forwarded    bool
	}{
		{"the pages need no secret", "GET", "/ui/", "", nil, 200, true},
		{"api read", "GET", "/v1/status", "", s, 200, true},
		{"root goes to the page", "GET", "/", "", nil, 303, false},
		{"no secret", "GET", "/v1/status", "", nil, 401, false},
		{"a wrong secret", "GET", "/v1/status", "", map[string]string{Header: "guess"}, 401, false},
		{"a cookie is no secret", "GET", "/v1/status", "", map[string]string{"Cookie": "openclaw_dashboard=" + secret}, 401, false},
		{"rebound DNS name", "GET", "/v1/status", "", with("Host", "evil.example:"+port), 421, false},
		{"localhost is another origin", "GET", "/v1/status", "", with("Host", "localhost:"+port), 421, false},
		{"other port in Host", "GET", "/v1/status", "", with("Host", "127.0.0.1:1"), 421, false},
		{"no Host port", "GET", "/v1/status", "", with("Host", "127.0.0.1"), 421, false},
		{"post from the page", "POST", "/v1/messages", "{}", with("Origin", origin), 200, true},
		{"post without Origin", "POST", "/v1/messages", "{}", s, 403, false},
		{"post from another origin", "POST", "/v1/messages", "{}", with("Origin", "http://evil.example"), 403, false},
		{"post from another port of 127.0.0.1", "POST", "/v1/messages", "{}", with("Origin", "http://127.0.0.1:1"), 403, false},
		{"post with Origin null", "POST", "/v1/messages", "{}", with("Origin", "null"), 403, false},
		{"a GET from another origin", "GET", "/v1/status", "", with("Origin", "http://127.0.0.1:1"), 403, false},
		{"delete from another origin", "DELETE", "/v1/approvals/allowlist", "", with("Origin", "http://evil.example"), 403, false},
		{"cross-site fetch metadata", "GET", "/v1/status", "", with("Sec-Fetch-Site", "cross-site"), 403, false},
		{"same-site (other port) fetch metadata", "GET", "/v1/status", "", with("Sec-Fetch-Site", "same-site"), 403, false},
		{"same-origin fetch metadata", "GET", "/v1/status", "", with("Sec-Fetch-Site", "same-origin"), 200, true},
		{"a WebSocket upgrade", "GET", "/v1/logs", "", with("Upgrade", "websocket", "Connection", "Upgrade"), 403, false},
		{"writing to the pages", "POST", "/ui/index.html", "", map[string]string{"Origin": origin}, 403, false},
		{"pairing codes stay on the box", "POST", "/v1/pair/code", "", with("Origin", origin), 403, false},
		{"nothing else is forwarded", "GET", "/debug/pprof/", "", s, 404, false},
		{"the link used again", "POST", PathAuth, token, map[string]string{"Origin": origin}, 403, false},
		{"a wrong token", "POST", PathAuth, `{"token":"x"}`, map[string]string{"Origin": origin}, 403, false},
		{"the token from another origin", "POST", PathAuth, token, map[string]string{"Origin": "http://127.0.0.1:1"}, 403, false},
		{"the token in the query is nothing", "GET", "/v1/status?token=" + u.Fragment, "", nil, 401, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g.mu.Lock()
			before := len(g.seen)
			g.mu.Unlock()
			res := do(t, p, tt.method, tt.path, tt.body, tt.hdr)
			if res.StatusCode != tt.want {
				t.Fatalf("%s %s: got %d, want %d", tt.method, tt.path, res.StatusCode, tt.want)
			}
			if res.Header.Get("X-Frame-Options") != "DENY" || len(res.Header.Values("Content-Security-Policy")) != 1 {
				t.Errorf("headers: %v", res.Header)
			}
			if res.Header.Get("Set-Cookie") != "" {
				t.Errorf("a Set-Cookie reached the browser: %q", res.Header.Get("Set-Cookie"))
			}
			g.mu.Lock()
			forwarded := len(g.seen) > before
			g.mu.Unlock()
			if forwarded != tt.forwarded {
				t.Errorf("forwarded to the gateway: %v", forwarded)
			}
		})
	}
	// What the gateway saw carries none of the browser's credentials.
	r := g.last()
	if r == nil {
		t.Fatal("nothing forwarded")
	}
	for _, h := range []string{"Cookie", "Origin", "Referer", "Sec-Fetch-Site", Header} {
		if r.Header.Get(h) != "" {
			t.Errorf("forwarded %s: %q", h, r.Header.Get(h))
		}
	}
	if r.Host != "openclaw" {
		t.Errorf("forwarded Host %q", r.Host)
	}
}

// TestProxySessionIdle: a session unused for 12 hours ends.
func TestProxySessionIdle(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	p, _ := newProxy(t, func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	secret := login(t, p)
	if res := do(t, p, "GET", "/v1/status", "", map[string]string{Header: secret}); res.StatusCode != 200 {
		t.Fatalf("fresh: %d", res.StatusCode)
	}
	mu.Lock()
	now = now.Add(sessionIdle + time.Minute)
	mu.Unlock()
	if res := do(t, p, "GET", "/v1/status", "", map[string]string{Header: secret}); res.StatusCode != 401 {
		t.Fatalf("after 12 h idle: %d", res.StatusCode)
	}
}

func TestProxyListenLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", ":0", "example.com:0"} {
		if _, err := New(Config{Transport: http.DefaultTransport, Listen: addr}); err == nil {
			t.Errorf("listen %q: no error", addr)
		}
	}
}
