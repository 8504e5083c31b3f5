package dashboard

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
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

func newProxy(t *testing.T) (*Proxy, *gateway) {
	t.Helper()
	g := &gateway{}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}}
	p, err := New(Config{Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Serve(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return p, g
}

// do sends one request with the given headers; it never follows redirects.
func do(t *testing.T, p *Proxy, method, path string, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, p.Origin()+path, strings.NewReader("{}"))
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
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

// login trades the link's token for the session cookie.
func login(t *testing.T, p *Proxy) string {
	t.Helper()
	u, _ := url.Parse(p.URL())
	res := do(t, p, "GET", u.RequestURI(), nil)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ui/" {
		t.Fatalf("login: %d %v", res.StatusCode, res.Header)
	}
	for _, c := range res.Cookies() {
		if c.Name == CookieName {
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" {
				t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/", c)
			}
			return CookieName + "=" + c.Value
		}
	}
	t.Fatal("no session cookie")
	return ""
}

func TestProxyChecks(t *testing.T) {
	p, g := newProxy(t)
	link := p.URL()
	cookie := login(t, p)
	u, _ := url.Parse(link)
	port := u.Port()
	origin := p.Origin()

	tests := []struct {
		name   string
		method string
		path   string
		hdr    map[string]string
		want   int
	}{
		{"page with the cookie", "GET", "/ui/", map[string]string{"Cookie": cookie}, 200},
		{"api read", "GET", "/v1/status", map[string]string{"Cookie": cookie}, 200},
		{"root goes to the page", "GET", "/", map[string]string{"Cookie": cookie}, 303},
		{"localhost name", "GET", "/v1/status", map[string]string{"Cookie": cookie, "Host": "localhost:" + port}, 200},
		{"no cookie", "GET", "/v1/status", nil, 401},
		{"wrong cookie", "GET", "/v1/status", map[string]string{"Cookie": CookieName + "=guess"}, 401},
		{"rebound DNS name", "GET", "/v1/status", map[string]string{"Cookie": cookie, "Host": "evil.example:" + port}, 421},
		{"other port in Host", "GET", "/v1/status", map[string]string{"Cookie": cookie, "Host": "127.0.0.1:1"}, 421},
		{"no Host port", "GET", "/v1/status", map[string]string{"Cookie": cookie, "Host": "127.0.0.1"}, 421},
		{"post from the page", "POST", "/v1/messages", map[string]string{"Cookie": cookie, "Origin": origin}, 200},
		{"post without Origin", "POST", "/v1/messages", map[string]string{"Cookie": cookie}, 403},
		{"post from another origin", "POST", "/v1/messages", map[string]string{"Cookie": cookie, "Origin": "http://evil.example"}, 403},
		{"post from another port of 127.0.0.1", "POST", "/v1/messages", map[string]string{"Cookie": cookie, "Origin": "http://127.0.0.1:1"}, 403},
		{"post with Origin null", "POST", "/v1/messages", map[string]string{"Cookie": cookie, "Origin": "null"}, 403},
		{"delete from another origin", "DELETE", "/v1/approvals/allowlist", map[string]string{"Cookie": cookie, "Origin": "http://evil.example"}, 403},
		{"cross-site fetch metadata", "GET", "/v1/status", map[string]string{"Cookie": cookie, "Sec-Fetch-Site": "cross-site"}, 403},
		{"same-site (other port) fetch metadata", "GET", "/v1/status", map[string]string{"Cookie": cookie, "Sec-Fetch-Site": "same-site"}, 403},
		{"same-origin fetch metadata", "GET", "/v1/status", map[string]string{"Cookie": cookie, "Sec-Fetch-Site": "same-origin"}, 200},
		{"pairing codes stay on the box", "POST", "/v1/pair/code", map[string]string{"Cookie": cookie, "Origin": origin}, 403},
		{"nothing else is forwarded", "GET", "/debug/pprof/", map[string]string{"Cookie": cookie}, 404},
		{"link used again", "GET", u.RequestURI(), nil, 403},
		{"a wrong token", "GET", "/auth?token=x", nil, 403},
		{"link used again, same browser", "GET", u.RequestURI(), map[string]string{"Cookie": cookie}, 303},
		{"token by POST", "POST", u.RequestURI(), map[string]string{"Origin": origin}, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(g.seen)
			res := do(t, p, tt.method, tt.path, tt.hdr)
			if res.StatusCode != tt.want {
				t.Fatalf("%s %s: got %d, want %d", tt.method, tt.path, res.StatusCode, tt.want)
			}
			if res.Header.Get("X-Frame-Options") != "DENY" || len(res.Header.Values("Content-Security-Policy")) != 1 {
				t.Errorf("headers: %v", res.Header)
			}
			if res.Header.Get("Set-Cookie") != "" && !strings.HasPrefix(tt.path, "/auth") {
				t.Errorf("a Set-Cookie reached the browser: %q", res.Header.Get("Set-Cookie"))
			}
			g.mu.Lock()
			forwarded := len(g.seen) > before
			g.mu.Unlock()
			if forwarded != (tt.want == 200) {
				t.Errorf("forwarded to the gateway: %v", forwarded)
			}
		})
	}
	// What the gateway saw carries none of the browser's credentials.
	r := g.last()
	if r == nil {
		t.Fatal("nothing forwarded")
	}
	for _, h := range []string{"Cookie", "Origin", "Referer", "Sec-Fetch-Site"} {
		if r.Header.Get(h) != "" {
			t.Errorf("forwarded %s: %q", h, r.Header.Get(h))
		}
	}
	if r.Host != "openclaw" {
		t.Errorf("forwarded Host %q", r.Host)
	}
}

func TestProxyListenLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", ":0", "example.com:0"} {
		if _, err := New(Config{Transport: http.DefaultTransport, Listen: addr}); err == nil {
			t.Errorf("listen %q: no error", addr)
		}
	}
}
