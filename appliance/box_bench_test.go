package main

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/channel/email/emailtest"
	"github.com/openclaw-edge/edge/engine/channel/imessage/imsgtest"
	"github.com/openclaw-edge/edge/models/openai/openaitest"
)

// The fake imsg re-executes this test binary (see imsgtest.Main); the
// iMessage end-to-end test's file hooks it in too, but not under
// -tags noimessage, and without it the re-executed binary would run the
// tests instead of serving imsg. A second call is a no-op.
func init() { imsgtest.Main() }

// BenchmarkBox measures what a user of a small box feels, process by
// process, on the real binaries (issue 24; docs/design.md §11's spec bars):
// the gateway as `make build` builds it (CGO_ENABLED=0, -s -w, no tags),
// openclaw-memindex beside it where that program exists, and the openclaw
// CLI. It prints the figures as a Markdown table (boxTable) and reports
// each as a metric.
//
//   - spawn → ready: from starting the process until the control API first
//     answers a status call (polled every 0.5 ms), on a fresh state dir
//     (the first start) and on the same dir again (warm); the median of
//     several. READY=1 on $NOTIFY_SOCKET (sd_notify, what systemd waits
//     for; sent after the channels started) is reported beside it.
//   - idle RSS: VmRSS after the gateway is ready, answered a status call and
//     sat idle 1 s, plus its own child processes (openclaw-memindex, a
//     runner; not the fake imsg, which stands in for Apple's own program).
//     With the shipped defaults (no config file: memory search on, keyword
//     only as no embedding model is installed); with a 10k-chunk memory
//     index (384-d embeddings from an OpenAI-compatible server on loopback,
//     a second start on the built index); with an iMessage channel (the
//     fake imsg) and an e-mail channel (a test dovecot on loopback, or,
//     without dovecot, a closed loopback port, which the table says); and
//     with both.
//   - RSS after 200 turns through the control API against a fake
//     OpenAI-compatible model on loopback (echo replies), after 1 s idle.
//   - `openclaw status` end to end (the CLI process against the running
//     gateway), `openclaw --version` and `openclaw-gateway --version`: the
//     median wall time of 20 runs each.
//   - the floors under those: `/bin/true`, a hello-world Go program and the
//     smallest Go program that asks the same status (testdata/floor), timed
//     the same way. On a VM where a page fault costs ~12 µs they are far
//     from zero, and a target below them cannot be met by any Go program.
//
// $OPENCLAW_BENCH_BIN=dir measures the binaries in dir (e.g. bin/ after
// `make build`) instead of building them.
//
//	go test -run '^$' -bench BenchmarkBox -benchtime 1x ./appliance/
func BenchmarkBox(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("reads /proc: Linux only")
	}
	bx := newBoxBench(b)
	var s boxSamples
	for range b.N {
		bx.measure(b, &s)
	}
	s.report(b)
	// Rows of other benchmarks of this package (BenchmarkUncachedTokens'
	// uncached tokens belong here) go through the same table, e.g.
	//
	//	box.add("uncached tokens, first turn after a restart", float64(u.Input), "tokens", float64(msgTokens+64), "")
	//	box.flush(os.Stdout, "Box figures (issue 24): tokens a turn evaluates")
	//
	// They run after this one (file order) and so print a table of their
	// own; one flush at the end of cleanupM.Run would join them.
	box.flush(os.Stdout, fmt.Sprintf("Box figures (issue 24): the real binaries on this machine (%d CPUs, %s/%s)", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH))
}

// boxTable collects rows of the "box" table — issue 24's figures beside
// their targets — from the benchmarks of this package and prints them as
// Markdown. A benchmark adds its rows and flushes; each flush prints the
// rows added since the last one under the header.
type boxTable struct {
	mu   sync.Mutex
	rows []boxRow
}

// boxRow is one figure: its value in unit, the target it must not exceed
// (0: none), and a note printed after the value.
type boxRow struct {
	figure string
	value  float64
	unit   string
	target float64
	note   string
}

// box is the package's one table.
var box boxTable

// add appends a row: figure measured value unit, against target (≤; 0 =
// no target), with note (may be "") in parentheses after the value.
func (t *boxTable) add(figure string, value float64, unit string, target float64, note string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rows = append(t.rows, boxRow{figure, value, unit, target, note})
}

// flush writes title and the rows added since the last flush as a
// Markdown table, and forgets them.
func (t *boxTable) flush(w io.Writer, title string) {
	t.mu.Lock()
	rows := t.rows
	t.rows = nil
	t.mu.Unlock()
	if len(rows) == 0 {
		return
	}
	var sb strings.Builder
	sb.WriteString("\n" + title + "\n\n| figure | measured | target | met |\n|---|---|---|---|\n")
	for _, r := range rows {
		measured := formatBoxValue(r.value, r.unit)
		if r.note != "" {
			measured += " (" + r.note + ")"
		}
		target, met := "—", ""
		if r.target > 0 {
			target = "≤ " + formatBoxValue(r.target, r.unit)
			met = "yes"
			if r.value > r.target {
				met = "**no**"
			}
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %s |\n", r.figure, measured, target, met)
	}
	sb.WriteString("\n")
	_, _ = io.WriteString(w, sb.String())
}

// formatBoxValue prints v in unit with the precision the unit needs.
func formatBoxValue(v float64, unit string) string {
	switch unit {
	case "ms", "MB":
		return strconv.FormatFloat(v, 'f', 1, 64) + " " + unit
	default:
		return strconv.FormatFloat(v, 'f', -1, 64) + " " + unit
	}
}

// boxSamples are the raw measurements of every iteration.
type boxSamples struct {
	readyFresh, readyWarm, notifyFresh, notifyWarm []time.Duration
	status, cliVersion, gwVersion                  []time.Duration
	floorTrue, floorHello, floorStatus             []time.Duration // what any program, any Go program, any Go status client costs here
	// RSS figures by row, in MB, with the share of child processes.
	idle, index, channels, both, turns []boxRSS
	indexBuild                         time.Duration
	emailNote                          string
}

// boxRSS is a process tree's resident memory: the gateway's own VmRSS and
// that of its child processes, in MB, with the children's names.
type boxRSS struct {
	gateway, children float64
	names             []string
	waited            time.Duration // for openclaw-memindex to leave
}

func (r boxRSS) total() float64 { return r.gateway + r.children }

func (r boxRSS) note() string {
	var parts []string
	if len(r.names) > 0 {
		parts = append(parts, fmt.Sprintf("gateway %.1f MB + %s %.1f MB", r.gateway, strings.Join(r.names, ", "), r.children))
	}
	if r.waited > 0 {
		parts = append(parts, fmt.Sprintf("after openclaw-memindex left (%.0f s idle)", r.waited.Seconds()+1))
	}
	return strings.Join(parts, "; ")
}

// memindexRunning reports whether openclaw-memindex runs under pid.
func memindexRunning(pid int) bool {
	for _, c := range descendants(pid) {
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", c)); err == nil && filepath.Base(exe) == "openclaw-memindex" {
			return true
		}
	}
	return false
}

// report reports the medians as metrics and adds the table's rows.
func (s *boxSamples) report(b *testing.B) {
	ms := func(ds []time.Duration) float64 { return float64(medianDuration(ds)) / float64(time.Millisecond) }
	b.ReportMetric(ms(s.readyFresh), "ready-fresh-ms")
	b.ReportMetric(ms(s.readyWarm), "ready-warm-ms")
	b.ReportMetric(ms(s.notifyWarm), "ready-warm-sdnotify-ms")
	box.add(fmt.Sprintf("spawn → API answers, first start (fresh state dir; median of %d)", len(s.readyFresh)),
		ms(s.readyFresh), "ms", 0, fmt.Sprintf("READY=1 at %.1f ms", ms(s.notifyFresh)))
	box.add(fmt.Sprintf("spawn → API answers, warm (second start, same state dir; median of %d)", len(s.readyWarm)),
		ms(s.readyWarm), "ms", 15, fmt.Sprintf("READY=1 at %.1f ms", ms(s.notifyWarm)))

	rss := func(name, figure string, rs []boxRSS, target float64, extra string) {
		if len(rs) == 0 {
			return
		}
		r := rs[len(rs)-1] // one per iteration; the last is as good as any
		b.ReportMetric(r.total(), name)
		note := r.note()
		if extra != "" {
			note = strings.TrimPrefix(note+"; "+extra, "; ")
		}
		box.add(figure, r.total(), "MB", target, note)
	}
	rss("idle-defaults-MB", "idle RSS, shipped defaults (no config file)", s.idle, 20, "")
	rss("idle-10k-index-MB", "idle RSS, memory search with a 10k-chunk index", s.index, 0,
		fmt.Sprintf("index built in %.0f s on the first start", s.indexBuild.Seconds()))
	rss("idle-2-channels-MB", "idle RSS, iMessage + e-mail channels", s.channels, 0, s.emailNote)
	rss("idle-channels-index-MB", "idle RSS, iMessage + e-mail + 10k-chunk index", s.both, 24, s.emailNote)
	rss("after-200-turns-MB", "RSS after 200 turns (fake model on loopback), 1 s idle", s.turns, 0, "")

	b.ReportMetric(ms(s.status), "cli-status-ms")
	b.ReportMetric(ms(s.cliVersion), "cli-version-ms")
	b.ReportMetric(ms(s.gwVersion), "gateway-version-ms")
	box.add(fmt.Sprintf("`openclaw status` end to end (median of %d)", len(s.status)), ms(s.status), "ms", 10, "")
	box.add(fmt.Sprintf("`openclaw --version` (median of %d)", len(s.cliVersion)), ms(s.cliVersion), "ms", 0, "")
	box.add(fmt.Sprintf("`openclaw-gateway --version` (median of %d)", len(s.gwVersion)), ms(s.gwVersion), "ms", 5, "")
	// The floors: what the figures above cannot go below on this machine.
	b.ReportMetric(ms(s.floorHello), "floor-hello-ms")
	b.ReportMetric(ms(s.floorStatus), "floor-status-ms")
	box.add("floor: `/bin/true` (a process, no Go)", ms(s.floorTrue), "ms", 0, "")
	box.add("floor: hello-world Go program (testdata/floor/hello)", ms(s.floorHello), "ms", 0, "")
	box.add("floor: smallest Go status client (testdata/floor/statusprobe: net/http on the socket, one JSON decode)", ms(s.floorStatus), "ms", 0, "")
}

// boxBench holds the binaries and the environment they run in.
type boxBench struct {
	dir     string // scratch: state dirs, sockets, logs, home
	gateway string
	cli     string
	env     []string // the children's environment, without the caller's OPENCLAW_*
	self    string   // this test binary (the fake imsg runs it)
	hello   string   // floor programs (testdata/floor): a hello-world Go program
	probe   string   // and the smallest Go status client
	starts  int
}

// newBoxBench builds the binaries (or takes them from
// $OPENCLAW_BENCH_BIN) into a scratch directory removed at cleanup.
func newBoxBench(b *testing.B) *boxBench {
	b.Helper()
	dir, err := os.MkdirTemp("", "ocbox") // short: socket paths
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	bx := &boxBench{dir: dir}
	if bx.self, err = os.Executable(); err != nil {
		b.Fatal(err)
	}
	if bin := os.Getenv("OPENCLAW_BENCH_BIN"); bin != "" {
		bx.gateway, bx.cli = filepath.Join(bin, "openclaw-gateway"), filepath.Join(bin, "openclaw")
	} else {
		bx.gateway, bx.cli = filepath.Join(dir, "bin", "openclaw-gateway"), filepath.Join(dir, "bin", "openclaw")
		// As `make build` builds them, with one version string for both (a
		// CLI that differs from its gateway says so in status).
		ld := "-s -w -X main.version=box-bench"
		goBuild(b, []string{"CGO_ENABLED=0"}, ld, bx.gateway, ".")
		goBuild(b, []string{"CGO_ENABLED=0"}, ld, bx.cli, "../cli")
		// The memory index's own process, where this tree has it: the
		// gateway finds it beside its executable.
		if _, err := os.Stat("memindex"); err == nil {
			goBuild(b, []string{"CGO_ENABLED=0"}, ld, filepath.Join(dir, "bin", "openclaw-memindex"), "./memindex")
		}
	}
	// The floors the start-up figures stand on, built like the gateway.
	bx.hello, bx.probe = filepath.Join(dir, "floor", "hello"), filepath.Join(dir, "floor", "statusprobe")
	goBuild(b, []string{"CGO_ENABLED=0"}, "-s -w", bx.hello, "./testdata/floor/hello")
	goBuild(b, []string{"CGO_ENABLED=0"}, "-s -w", bx.probe, "./testdata/floor/statusprobe")
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		b.Fatal(err)
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OPENCLAW_") || k == "HOME" || k == "NOTIFY_SOCKET" || strings.HasPrefix(k, "WATCHDOG_") {
			continue
		}
		bx.env = append(bx.env, kv)
	}
	bx.env = append(bx.env, "HOME="+home)
	return bx
}

// goBuild runs go build with env added to this process's environment.
func goBuild(b *testing.B, env []string, ldflags, out, pkg string) {
	b.Helper()
	cmd := exec.Command("go", "build", "-ldflags", ldflags, "-o", out, pkg)
	cmd.Env = append(os.Environ(), env...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build %s: %v\n%s", pkg, err, msg)
	}
}

// measure takes one sample of every figure.
func (bx *boxBench) measure(b *testing.B, s *boxSamples) {
	ctx := context.Background()
	// Start-up. One start first, unmeasured: the binary's pages come into
	// the page cache, as on a box that has run it before.
	bx.start(b, bx.stateDir(b), "").stop()
	const starts = 7
	var last *boxGateway
	for i := range starts {
		state := bx.stateDir(b)
		g := bx.start(b, state, "")
		s.readyFresh, s.notifyFresh = append(s.readyFresh, g.answered), append(s.notifyFresh, g.notified)
		g.stop()
		g = bx.start(b, state, "")
		s.readyWarm, s.notifyWarm = append(s.readyWarm, g.answered), append(s.notifyWarm, g.notified)
		if i < starts-1 {
			g.stop()
		}
		last = g
	}
	// The last warm gateway: idle RSS with the shipped defaults, then the
	// CLI against it.
	s.idle = append(s.idle, last.idleRSS(b))
	for range 20 {
		s.status = append(s.status, bx.timeRun(b, bx.cli, "--socket", last.sock, "status"))
		s.floorStatus = append(s.floorStatus, bx.timeRun(b, bx.probe, last.sock))
	}
	last.stop()
	for range 20 {
		s.cliVersion = append(s.cliVersion, bx.timeRun(b, bx.cli, "--version"))
		s.gwVersion = append(s.gwVersion, bx.timeRun(b, bx.gateway, "--version"))
		s.floorHello = append(s.floorHello, bx.timeRun(b, bx.hello))
		s.floorTrue = append(s.floorTrue, bx.timeRun(b, "/bin/true"))
	}

	// 200 turns against a fake model.
	model := openaitest.NewServer()
	defer model.Close()
	g := bx.start(b, bx.stateDir(b), bx.config(b, fakeConfig(model.URL)))
	for i := range 200 {
		if _, err := g.c.Send(ctx, api.SendRequest{Text: fmt.Sprintf("turn %d: how are the tulips?", i)}, nil); err != nil {
			g.stop()
			b.Fatalf("turn %d: %v", i, err)
		}
	}
	s.turns = append(s.turns, g.idleRSS(b))
	g.stop()

	// The memory index: the first start builds it, the second loads it.
	ws, embed := boxNotes(b, bx.dir)
	defer embed.Close()
	memCfg := fmt.Sprintf(`memorySearch: { enabled: true, provider: 'openai', fallback: 'none', remote: { baseUrl: '%s/v1', apiKey: 'bench' } }`, embed.URL)
	indexCfg := bx.config(b, fmt.Sprintf(`{ agents: { defaults: { workspace: '%s', %s } } }`, ws, memCfg))
	indexState := bx.stateDir(b)
	t0 := time.Now()
	g = bx.start(b, indexState, indexCfg)
	g.waitIndexed(b, 10*time.Minute)
	s.indexBuild = time.Since(t0)
	g.stop()
	g = bx.start(b, indexState, indexCfg)
	g.waitIndexed(b, time.Minute)
	s.index = append(s.index, g.idleRSS(b))
	g.stop()

	// Two channels, without and with the index.
	channels := bx.channels(b, s)
	g = bx.start(b, bx.stateDir(b), bx.config(b, fmt.Sprintf(`{ %s }`, channels)))
	g.waitChannels(b, s.emailNote == "")
	s.channels = append(s.channels, g.idleRSS(b))
	g.stop()
	g = bx.start(b, indexState, bx.config(b, fmt.Sprintf(`{ agents: { defaults: { workspace: '%s', %s } }, %s }`, ws, memCfg, channels)))
	g.waitIndexed(b, time.Minute)
	g.waitChannels(b, s.emailNote == "")
	s.both = append(s.both, g.idleRSS(b))
	g.stop()
}

// channels returns the channels part of a config: iMessage through the
// fake imsg, e-mail on a test dovecot (or a closed loopback port, noted in
// s.emailNote, where dovecot is not installed) with an SMTP sink.
func (bx *boxBench) channels(b *testing.B, s *boxSamples) string {
	imsg := imsgtest.New(b, imsgtest.Config{})
	sink := emailtest.StartSink(b, nil)
	imapPort, user, pass := 0, "bench", "bench"
	if emailtest.FindDovecot() != "" {
		d := emailtest.StartDovecot(b, emailtest.Options{})
		imapPort, user, pass = d.Port, d.User, d.Password
	} else {
		imapPort = emailtest.FreePort(b) // nothing listens: the adapter retries
		s.emailNote = "no dovecot: e-mail points at a closed loopback port"
	}
	return fmt.Sprintf(`channels: {
    imessage: { cliPath: '%s', dbPath: '/Users/me/Library/Messages/chat.db' },
    email: {
      address: 'assistant@example.test',
      imap: { host: '127.0.0.1', port: %d, security: 'none', username: '%s', password: '%s' },
      smtp: { host: '127.0.0.1', port: %d, security: 'none' },
    },
  }`, imsg.Path, imapPort, user, pass, sink.Port)
}

// stateDir returns a new, empty state directory's path.
func (bx *boxBench) stateDir(b *testing.B) string {
	b.Helper()
	d, err := os.MkdirTemp(bx.dir, "state")
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// config writes a config file and returns its path.
func (bx *boxBench) config(b *testing.B, text string) string {
	b.Helper()
	f, err := os.CreateTemp(bx.dir, "openclaw-*.json")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		b.Fatal(err)
	}
	return f.Name()
}

// timeRun runs a binary to the end and returns its wall time.
func (bx *boxBench) timeRun(b *testing.B, bin string, args ...string) time.Duration {
	b.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = bx.env
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	err := cmd.Run()
	d := time.Since(t0)
	if err != nil {
		b.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out.String())
	}
	return d
}

// boxGateway is one running gateway process.
type boxGateway struct {
	b        *testing.B
	cmd      *exec.Cmd
	c        *client.Client
	sock     string
	log      string
	exited   chan struct{}
	answered time.Duration // spawn → the first status answer
	notified time.Duration // spawn → READY=1
}

// start spawns the gateway on state (with the config file cfg, "" for
// none) and returns once it has answered a status call and sent READY=1.
func (bx *boxBench) start(b *testing.B, state, cfg string) *boxGateway {
	b.Helper()
	bx.starts++
	n := bx.starts
	g := &boxGateway{b: b, sock: filepath.Join(bx.dir, fmt.Sprintf("g%d.sock", n)), log: filepath.Join(bx.dir, fmt.Sprintf("g%d.log", n)), exited: make(chan struct{})}
	notifyPath := filepath.Join(bx.dir, fmt.Sprintf("n%d", n))
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notifyPath, Net: "unixgram"})
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	logf, err := os.Create(g.log)
	if err != nil {
		b.Fatal(err)
	}
	defer logf.Close()
	args := []string{"run", "--state-dir", state, "--socket", g.sock}
	if cfg != "" {
		args = append(args, "--config", cfg)
	}
	g.cmd = exec.Command(bx.gateway, args...)
	g.cmd.Env = append(slices.Clip(bx.env), "NOTIFY_SOCKET="+notifyPath)
	g.cmd.Stdout, g.cmd.Stderr = logf, logf
	g.c = client.New(g.sock)

	ready := make(chan time.Duration, 1)
	t0 := time.Now()
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			if slices.Contains(strings.Split(string(buf[:n]), "\n"), "READY=1") {
				ready <- time.Since(t0)
				return
			}
		}
	}()
	if err := g.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() { _ = g.cmd.Wait(); close(g.exited) }()
	for deadline := t0.Add(time.Minute); ; time.Sleep(500 * time.Microsecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := g.c.Status(ctx)
		cancel()
		if err == nil {
			g.answered = time.Since(t0)
			break
		}
		select {
		case <-g.exited:
			g.fatalf("gateway exited before it answered: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			g.stop()
			g.fatalf("gateway did not answer in a minute: %v", err)
		}
	}
	select {
	case g.notified = <-ready:
	case <-g.exited:
		g.fatalf("gateway exited before READY=1")
	case <-time.After(time.Minute):
		g.stop()
		g.fatalf("no READY=1 in a minute")
	}
	return g
}

// fatalf fails the benchmark with the gateway's log.
func (g *boxGateway) fatalf(format string, args ...any) {
	g.b.Helper()
	out, _ := os.ReadFile(g.log)
	g.b.Fatalf(format+"\n%s", append(args, out)...)
}

// stop ends the gateway with SIGTERM (SIGKILL after 10 s).
func (g *boxGateway) stop() {
	if g.cmd.Process == nil {
		return
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
	case <-time.After(10 * time.Second):
		_ = g.cmd.Process.Kill()
		<-g.exited
	}
}

// idleRSS asks for status, lets the gateway sit idle 1 s and reads the
// resident memory of it and its children.
func (g *boxGateway) idleRSS(b *testing.B) boxRSS {
	b.Helper()
	if _, err := g.c.Status(context.Background()); err != nil {
		g.fatalf("status: %v", err)
	}
	time.Sleep(time.Second)
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	// Idle means idle: the memory keyword index's child leaves 30 s after
	// its last use (engine/memory/bleveproc); wait for it, as a box that
	// sits idle does.
	var waited time.Duration
	for memindexRunning(g.cmd.Process.Pid) && waited < 45*time.Second {
		time.Sleep(500 * time.Millisecond)
		waited += 500 * time.Millisecond
	}
	kb, err := vmRSSKB(g.cmd.Process.Pid)
	if err != nil {
		g.fatalf("gateway RSS: %v", err)
	}
	r := boxRSS{gateway: float64(kb) / 1024, waited: waited}
	for _, pid := range descendants(g.cmd.Process.Pid) {
		// The fake imsg is this test binary: on a Mac, Apple's imsg is
		// not the gateway's memory either.
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == self {
			continue
		}
		kb, err := vmRSSKB(pid)
		if err != nil || kb == 0 { // gone, or a zombie
			continue
		}
		r.children += float64(kb) / 1024
		// The executable's name: comm is cut at 15 bytes.
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil {
			r.names = append(r.names, filepath.Base(exe))
		}
	}
	return r
}

// waitIndexed waits until the default agent's memory index holds the
// 10,000 chunks with their vectors and has nothing left to sync.
func (g *boxGateway) waitIndexed(b *testing.B, limit time.Duration) {
	b.Helper()
	var last *api.MemoryStatus
	for deadline := time.Now().Add(limit); ; time.Sleep(100 * time.Millisecond) {
		st, err := g.c.MemoryStatus(context.Background(), "")
		if err == nil && st.Vectors == 10000 && st.Chunks == 10000 && !st.Dirty {
			return
		}
		last = st
		if time.Now().After(deadline) {
			g.stop()
			g.fatalf("memory not indexed after %v: %+v %v", limit, last, err)
		}
	}
}

// waitChannels waits until iMessage is linked, and e-mail too when it has
// a server (withEmail).
func (g *boxGateway) waitChannels(b *testing.B, withEmail bool) {
	b.Helper()
	var last []api.ChannelStatus
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		list, err := g.c.Channels(context.Background())
		if err != nil {
			g.fatalf("channels: %v", err)
		}
		last = list
		linked := map[string]bool{}
		for _, c := range list {
			linked[c.Channel] = c.State == "linked"
		}
		if linked["imessage"] && (linked["email"] || !withEmail) {
			return
		}
		if time.Now().After(deadline) {
			g.stop()
			g.fatalf("channels not linked: %+v", last)
		}
	}
}

// vmRSSKB reads VmRSS of pid in kB (0 for a zombie, which has none).
func vmRSSKB(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read /proc status of %d: %w", pid, err)
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("VmRSS of %d: %w", pid, err)
			}
			return kb, nil
		}
	}
	return 0, nil
}

// descendants returns every process below pid (children, their
// children, …), from each process's parent in /proc/N/stat.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// "pid (comm) state ppid …": comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(data), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(data[i+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			children[ppid] = append(children[ppid], p)
		}
	}
	var out []int
	for queue := children[pid]; len(queue) > 0; queue = queue[1:] {
		out = append(out, queue[0])
		queue = append(queue, children[queue[0]]...)
	}
	return out
}

// medianDuration returns the median of ds (0 for none).
func medianDuration(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// boxNotes writes a workspace whose memory files make 10,000 chunks (100
// files of 100 paragraphs of ~1,500 characters, as BenchmarkGatewayRSSMemory
// writes it) under dir, and starts an OpenAI-compatible embeddings server
// on loopback that answers each text with a 384-d vector derived from it.
func boxNotes(b *testing.B, dir string) (workspace string, srv *httptest.Server) {
	b.Helper()
	ws := filepath.Join(dir, "workspace")
	r := rand.New(rand.NewPCG(5, 6))
	words := strings.Fields("the a garden tea dentist car blue green boat lock code bike meeting friday monday plumber rome flight booked vaccine cat dog window cleaner boiler service tulip frost standup wifi guest")
	if err := os.MkdirAll(filepath.Join(ws, "memory"), 0o755); err != nil {
		b.Fatal(err)
	}
	for f := range 100 {
		var sb strings.Builder
		for range 100 {
			var p strings.Builder
			for p.Len() < 1500 {
				p.WriteString(words[r.IntN(len(words))] + strconv.Itoa(r.IntN(500)) + " ")
			}
			sb.WriteString(p.String() + "\n")
		}
		p := filepath.Join(ws, "memory", fmt.Sprintf("2026-%02d-%02d-%d.md", f%12+1, f%28+1, f))
		if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.URL.Path != "/v1/embeddings" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		data := make([]item, 0, len(req.Input))
		for i, t := range req.Input {
			h := fnv.New64a()
			h.Write([]byte(t))
			rr := rand.New(rand.NewPCG(h.Sum64(), 1))
			v := make([]float32, 384)
			for j := range v {
				v[j] = float32(rr.NormFloat64())
			}
			data = append(data, item{i, v})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"data": data}) // an error: the client went away
	}))
	return ws, srv
}
