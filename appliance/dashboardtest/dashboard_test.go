package dashboardtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/channel/bluebubbles/bbtest"
	"github.com/openclaw-edge/edge/models/openai/openaitest"
)

var binDir string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	binDir = os.Getenv("OPENCLAW_UI_BIN")
	if binDir == "" {
		dir, err := os.MkdirTemp("", "ocui")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		for pkg, name := range map[string]string{"../": "openclaw-gateway", "../../cli": "openclaw"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), pkg)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "build %s: %v\n%s", name, err, out)
				return 1
			}
		}
		binDir = dir
	}
	return m.Run()
}

func chromiumPath(t testing.TB) string {
	for _, p := range []string{os.Getenv("OPENCLAW_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if p == "" {
			continue
		}
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Skip("no chromium: `make test-ui` installs Debian's chromium")
	return ""
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuf) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// box is a running gateway with a paired CLI and its dashboard.
type box struct {
	t       testing.TB
	dir     string
	sock    string
	local   *client.Client
	model   *openaitest.Server
	hook    string // the BlueBubbles webhook listener
	bb      *bbtest.Server
	cliEnv  []string
	gwLog   *lockedBuf
	dashURL string
	device  string // the paired CLI's device id
}

func (b *box) cli(args ...string) ([]byte, error) {
	c := exec.Command(filepath.Join(binDir, "openclaw"), args...)
	c.Env = b.cliEnv
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		return out, fmt.Errorf("openclaw %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return out, nil
}

// withFakes is the shipped defaults with a fake remote model, a
// BlueBubbles bridge (dmPolicy pairing), exec approvals always asked, and
// the TLS listener on loopback.
func withFakes(b *box, port int) string {
	return `{
  // the shipped defaults, with a fake remote model and a BlueBubbles bridge
  models: { providers: { fake: { api: 'openai-completions', baseUrl: '` + b.model.URL + `', models: [{ id: 'echo' }] } } },
  agents: { defaults: { model: 'fake/echo', workspace: '` + filepath.Join(b.dir, "workspace") + `' } },
  tools: { exec: { ask: 'always' } },
  channels: { imessage: { backend: 'bluebubbles', dmPolicy: 'pairing',
    bluebubbles: { serverUrl: '` + b.bb.URL + `', password: '` + bbtest.Password + `', webhookListen: '` + b.hook + `' } } },
  gateway: { bind: '127.0.0.1', port: ` + fmt.Sprint(port) + ` },
}`
}

func startBox(t testing.TB) *box { return startBoxWith(t, withFakes) }

// startBoxWith runs a gateway on the config config returns, and pairs a
// "laptop" with it over TLS.
func startBoxWith(t testing.TB, config func(b *box, port int) string) *box {
	dir, err := os.MkdirTemp("", "ocui") // short: a socket path is limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	b := &box{t: t, dir: dir, sock: filepath.Join(dir, "gw.sock"), gwLog: &lockedBuf{}}
	b.model = openaitest.NewServer()
	t.Cleanup(b.model.Close)
	bb := bbtest.New(t)
	b.bb = bb
	b.hook = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	port := freePort(t)
	cfg := filepath.Join(dir, "openclaw.json")
	conf := config(b, port)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	gw := exec.Command(filepath.Join(binDir, "openclaw-gateway"), "run", "--config", cfg, "--state-dir", filepath.Join(dir, "state"), "--socket", b.sock)
	gw.Env = append(os.Environ(), "HOME="+dir)
	gw.Stdout, gw.Stderr = b.gwLog, b.gwLog
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		gw.Process.Signal(os.Interrupt)
		gw.Wait()
		if t.Failed() {
			t.Logf("gateway log:\n%s", b.gwLog.String())
		}
	})
	b.local = client.New(b.sock)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		st, err := b.local.Status(context.Background())
		if err == nil && st.LAN != nil && len(st.LAN.Addrs) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway not up: %v\n%s", err, b.gwLog.String())
		}
	}
	// Pair this "laptop" over TLS, as a user does.
	home := filepath.Join(dir, "laptop")
	b.cliEnv = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "OPENCLAW_SOCKET=", "OPENCLAW_STATE_DIR=", "OPENCLAW_GATEWAY=", "OPENCLAW_CONFIG_DIR=")
	pc, err := b.local.PairCode(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out, err := b.cli("pair", "--host", fmt.Sprintf("127.0.0.1:%d", port), "--code", pc.Code, "--name", "laptop", "--json")
	if err != nil {
		t.Fatal(err)
	}
	devs, err := b.local.Devices(context.Background())
	if err != nil || len(devs) != 1 {
		t.Fatalf("devices after pairing: %v %v (%s)", devs, err, out)
	}
	b.device = devs[0].ID
	return b
}

// dashboard starts `openclaw dashboard --no-open --json` and returns its
// link; it stops at the end of the test.
func (b *box) dashboard(t testing.TB) string {
	link, stop := b.startDashboard(t)
	t.Cleanup(stop)
	return link
}

// startDashboard is dashboard with its stop.
func (b *box) startDashboard(t testing.TB) (string, func()) {
	cmd := exec.Command(filepath.Join(binDir, "openclaw"), "dashboard", "--no-open", "--json")
	cmd.Env = b.cliEnv
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuf
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }
	rd := bufio.NewReader(stdout)
	line, err := rd.ReadString('\n')
	if err != nil {
		t.Fatalf("openclaw dashboard: %v\n%s", err, stderr.String())
	}
	var v struct{ URL string }
	if err := json.Unmarshal([]byte(line), &v); err != nil || !strings.HasPrefix(v.URL, "http://127.0.0.1:") {
		rest, _ := io.ReadAll(rd)
		stop()
		t.Fatalf("first line %q: %v\n%s%s", line, err, rest, stderr.String())
	}
	return v.URL, stop
}

// browser starts headless chromium. rebind maps a made-up host name to
// 127.0.0.1, as a DNS-rebinding attacker's name would resolve.
func browser(t testing.TB) context.Context {
	ctx, cancel := startBrowser(t)
	t.Cleanup(cancel)
	return ctx
}

// startBrowser is browser with its stop.
func startBrowser(t testing.TB) (context.Context, context.CancelFunc) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, // root in CI
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("host-resolver-rules", "MAP rebind.test 127.0.0.1, MAP attacker.test 127.0.0.1"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(400, 800), // a phone-sized window
	)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel2 := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	ctx, cancel3 := context.WithTimeout(ctx, 3*time.Minute)
	stop := func() { cancel3(); cancel2(); cancel() }
	// The first call starts the browser, for the life of ctx (a shorter
	// context there would stop the browser with it).
	if err := chromedp.Do(ctx); err != nil {
		stop()
		t.Fatalf("start chromium: %v", err)
	}
	return ctx, stop
}

func must(t testing.TB, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, actions...); err != nil {
		t.Fatalf("%s: %v\npage text:\n%s", what, err, text(t, ctx, "body"))
	}
}

// openPage goes to a page of the dashboard as a person does on a phone:
// the menu, then the page's link.
func openPage(name string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.Click(chromedp.ID("menu")),
		chromedp.Click(chromedp.CSS(`nav a[href="#/`+name+`"]`)),
		chromedp.WaitNotVisible(chromedp.ID("nav")))
}

// text is an element's text ("" when there is none).
func text(t testing.TB, ctx context.Context, css string) string {
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, _ := chromedp.Run(tctx, chromedp.Text(chromedp.CSS(css)))
	return s
}

func TestDashboard(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end, in a browser")
	}
	chromiumPath(t)
	b := startBox(t)
	link := b.dashboard(t)
	u, _ := url.Parse(link)
	ctx := browser(t)

	// The link opens the dashboard at the chat page.
	must(t, ctx, "open the link", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("chat-input")))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(loc, "token") {
		t.Errorf("the token stays in the address bar: %s", loc)
	}

	t.Run("chat with an exec approval answered by a click", func(t *testing.T) {
		// The call adds an environment variable whose value hides a
		// right-to-left override: the card lists it, escaped.
		args, _ := json.Marshal(map[string]any{"command": "echo dashboard-was-here", "env": map[string]string{"GREETING": "hi\u202eevil"}})
		b.model.Push(
			openaitest.Reply{ToolCalls: []engine.ToolCall{{Name: "exec", Arguments: args}}},
			openaitest.Reply{Text: "All done, the command ran."},
		)
		must(t, ctx, "send a message",
			chromedp.SendKeys(chromedp.ID("chat-input"), "please run the echo\n"),
			// The buttons are enabled a second after the card appears.
			chromedp.WaitVisible(chromedp.CSS(`.approval[data-ready="1"] button[data-decision="allow-once"]`)))
		if cmdText := text(t, ctx, ".approval pre"); cmdText != "echo dashboard-was-here" {
			t.Errorf("approval shows %q", cmdText)
		}
		if card := text(t, ctx, ".approval"); !strings.Contains(card, "GREETING=") || !strings.Contains(card, `hi\u202eevil`) || strings.ContainsRune(card, '\u202e') {
			t.Errorf("approval does not show the environment escaped: %q", card)
		}
		must(t, ctx, "approve",
			chromedp.Click(chromedp.CSS(`.approval[data-ready="1"] button[data-decision="allow-once"]`)),
			chromedp.WaitVisible(chromedp.Search(`//div[contains(@class,"msg")][contains(., "All done, the command ran.")]`)),
			chromedp.WaitVisible(chromedp.Search(`//div[contains(@class,"tool")][contains(., "dashboard-was-here")]`)))
	})

	t.Run("a stranger's pairing request approved", func(t *testing.T) {
		const stranger = "+15550009999"
		b.bb.Post(t, b.hook, stranger, "hello, who is this?")
		var code string
		for deadline := time.Now().Add(30 * time.Second); code == ""; time.Sleep(50 * time.Millisecond) {
			reqs, err := b.local.Pairing(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			if len(reqs) == 1 {
				code = reqs[0].Code
			}
			if time.Now().After(deadline) {
				t.Fatalf("no pairing request\n%s", b.gwLog.String())
			}
		}
		approve := fmt.Sprintf(`#pairing-table button[data-action="approve"][data-id=%q]`, code)
		must(t, ctx, "approve in the channels page",
			openPage("channels"),
			chromedp.WaitVisible(chromedp.CSS(approve)),
			chromedp.Click(chromedp.CSS(approve)))
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			reqs, err := b.local.Pairing(context.Background(), "")
			if err == nil && len(reqs) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("still waiting for approval: %v %v", reqs, err)
			}
		}
		// Approved: the stranger is answered by the model now.
		b.model.Push(openaitest.Reply{Text: "Hi, I am the assistant."})
		b.bb.Post(t, b.hook, stranger, "hello again")
		b.bb.WaitText(t, "iMessage;-;"+stranger, "Hi, I am the assistant.")
	})

	t.Run("a model uploaded", func(t *testing.T) {
		model, err := filepath.Abs("../../../shared/models/stories260K.gguf")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(model); err != nil {
			t.Skipf("the small test model is not here: %v", err)
		}
		must(t, ctx, "upload in the models page",
			openPage("models"),
			chromedp.WaitVisible(chromedp.ID("models-upload-go")),
			chromedp.SetUploadFiles(chromedp.ID("models-upload-file"), []string{model}),
			chromedp.SetValue(chromedp.ID("models-upload-name"), "stories-up"),
			chromedp.Click(chromedp.ID("models-upload-go")),
			chromedp.WaitVisible(chromedp.CSS(`#models-installed-table tr[data-name="stories-up"]`)))
		models, err := b.local.Models(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range models {
			if m.Name == "stories-up" {
				if !m.Installed || m.SHA256 == "" {
					t.Errorf("uploaded model: %+v", m)
				}
				return
			}
		}
		t.Errorf("no model stories-up after the upload: %+v", models)
	})

	t.Run("a cross-site POST is refused", func(t *testing.T) {
		// A page on another port of 127.0.0.1 (same site, so the
		// SameSite=Strict cookie goes along) posts a message.
		calls := len(b.model.Requests())
		evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<!doctype html><form id=f method=POST enctype=text/plain action="%s/v1/messages"><input name='{"text":"pwned","x":"' value='"}'></form><script>
fetch(%q, {method:'POST', credentials:'include', mode:'no-cors', headers:{'Content-Type':'text/plain'}, body:'{"text":"pwned"}'}).finally(()=>document.getElementById('f').submit())</script>`, "http://127.0.0.1:"+u.Port(), "http://127.0.0.1:"+u.Port()+"/v1/messages")
		}))
		defer evil.Close()
		must(t, ctx, "the attacker's page", chromedp.Navigate(evil.URL),
			chromedp.WaitVisible(chromedp.Search(`//*[contains(., "cross-site request refused")]`)))
		if body := text(t, ctx, "body"); !strings.Contains(body, "cross-site request refused") {
			t.Errorf("the form post was not refused: %q", body)
		}
		hist, err := b.local.History(context.Background(), "agent:main:main")
		if err != nil {
			t.Fatal(err)
		}
		if h, _ := json.Marshal(hist); bytes.Contains(h, []byte("pwned")) {
			t.Error("the cross-site post reached the session")
		}
		if len(b.model.Requests()) != calls {
			t.Error("the cross-site post ran a turn")
		}
	})

	t.Run("a wrong Host is refused", func(t *testing.T) {
		must(t, ctx, "a rebound name", chromedp.Navigate("http://rebind.test:"+u.Port()+"/v1/status"))
		if body := text(t, ctx, "body"); !strings.Contains(body, "Wrong address") {
			t.Errorf("rebound name answered: %q", body)
		}
	})

	t.Run("the link works once", func(t *testing.T) {
		// What the /auth page does with the link's token, done again by
		// another client: refused, the browser's session unharmed.
		req, _ := http.NewRequest("POST", u.Scheme+"://"+u.Host+"/auth", strings.NewReader(`{"token":"`+u.Fragment+`"}`))
		req.Header.Set("Origin", u.Scheme+"://"+u.Host)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("the link used a second time, in another client: %d", res.StatusCode)
		}
		// Nor does a plain request without the page's secret get in.
		res, err = http.Get(u.Scheme + "://" + u.Host + "/v1/status")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("/v1/status without the session secret: %d", res.StatusCode)
		}
	})

	t.Run("a session deleted", func(t *testing.T) {
		del := `#sessions-table button[data-action="delete"][data-key="agent:main:main"]`
		must(t, ctx, "the sessions page", chromedp.Navigate(u.Scheme+"://"+u.Host+"/ui/#/sessions"), chromedp.WaitVisible(chromedp.CSS(del)))
		// The page asks first; a person says yes.
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(window.confirm = () => true, true)`)); err != nil {
			t.Fatal(err)
		}
		must(t, ctx, "delete", chromedp.Click(chromedp.CSS(del)), chromedp.WaitNotPresent(chromedp.CSS(del)))
		if _, err := b.local.History(context.Background(), "agent:main:main"); err == nil {
			t.Error("the session's history is still there")
		}
	})

	t.Run("a revoked device's page stops at once", func(t *testing.T) {
		must(t, ctx, "back to the dashboard", chromedp.Navigate(u.Scheme+"://"+u.Host+"/ui/#/status"), chromedp.WaitVisible(chromedp.ID("main")))
		if _, err := b.local.RevokeDevice(context.Background(), b.device); err != nil {
			t.Fatal(err)
		}
		must(t, ctx, "the page says so",
			openPage("sessions"),
			chromedp.WaitVisible(chromedp.Search(`//div[@id="banner"][contains(., "revoked")]`)))
		must(t, ctx, "a reload says so too", chromedp.Reload())
		if body := text(t, ctx, "body"); !strings.Contains(body, "not paired") {
			t.Errorf("reloaded after the revoke: %q", body)
		}
	})
}

// BenchmarkFirstPaint: from opening the link (`openclaw dashboard` → the
// gateway over mutual TLS, all on loopback) to the chat page's first
// contentful paint and to its composer being usable, in a fresh browser
// profile each time (nothing cached). Target (docs/design.md §11): first
// paint ≤ 300 ms.
func BenchmarkFirstPaint(b *testing.B) {
	chromiumPath(b)
	bx := startBox(b)
	var fcp, ready float64
	for b.Loop() {
		b.StopTimer()
		// Each round its own dashboard and browser, stopped after it: a
		// person has one of each.
		link, stopDash := bx.startDashboard(b)
		ctx, stopBrowser := startBrowser(b)
		// A browser already running, as a person's is: its first tab's
		// renderer is not the dashboard's cost.
		must(b, ctx, "blank", chromedp.Navigate("about:blank"))
		b.StartTimer()
		start := time.Now()
		must(b, ctx, "open", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("chat-input")))
		ready += float64(time.Since(start).Microseconds()) / 1000
		v, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`(performance.getEntriesByName('first-contentful-paint')[0] || {startTime: -1}).startTime`))
		if err != nil || v < 0 {
			b.Fatalf("no first-contentful-paint entry: %v %v", v, err)
		}
		fcp += v
		b.StopTimer()
		stopBrowser()
		stopDash()
		b.StartTimer()
	}
	b.ReportMetric(fcp/float64(b.N), "fcp-ms")
	b.ReportMetric(ready/float64(b.N), "ready-ms")
}

// TestDashboardFirstVisit: a box on the shipped defaults, whose default
// model is not installed, opens at the onboarding steps; the owner and the
// time zone set there land in the gateway's config file, comments kept.
func TestDashboardFirstVisit(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end, in a browser")
	}
	chromiumPath(t)
	b := startBoxWith(t, func(b *box, port int) string {
		return `// my box
{
  agents: { defaults: { workspace: '` + filepath.Join(b.dir, "workspace") + `' } },
  gateway: { bind: '127.0.0.1', port: ` + fmt.Sprint(port) + ` }, // for the laptop
}`
	})
	link := b.dashboard(t)
	ctx := browser(t)
	must(t, ctx, "the first visit is the onboarding", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("onboard-step-model")))
	must(t, ctx, "the owner",
		chromedp.SetValue(chromedp.ID("onboard-owner-channel"), "whatsapp"),
		chromedp.SendKeys(chromedp.ID("onboard-owner-handle"), "+15551234567"),
		chromedp.Click(chromedp.ID("onboard-owner-go")),
		chromedp.WaitVisible(chromedp.Search(`//*[@id="onboard-step-owner"]//li[contains(., "commands.ownerAllowFrom")]`)))
	must(t, ctx, "the time zone",
		chromedp.SetValue(chromedp.ID("onboard-tz"), "Europe/Madrid"),
		chromedp.Click(chromedp.ID("onboard-tz-go")),
		chromedp.WaitVisible(chromedp.Search(`//*[@id="onboard-step-tz"]//li[contains(., "userTimezone")]`)))
	raw, err := os.ReadFile(filepath.Join(b.dir, "openclaw.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"// my box", "// for the laptop", `"whatsapp:+15551234567"`, `"Europe/Madrid"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("config file lacks %s:\n%s", want, raw)
		}
	}
}
