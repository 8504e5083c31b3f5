package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/api/client"
)

// BenchmarkGatewayRSSMemory is docs/design.md §11's idle bar with a 10k-chunk
// memory index loaded: the real gateway binary (as `make build` builds
// it), a workspace of 10,000 chunks of notes, 384-dimensional embeddings
// from an OpenAI-compatible server on loopback (real wire format). The
// first run builds the index; the figure is a second start on that index
// (loaded from disk, nothing re-embedded), against the same gateway with
// memory search off.
func BenchmarkGatewayRSSMemory(b *testing.B) {
	dir, err := os.MkdirTemp("", "ocm")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "openclaw-gateway")
	// OPENCLAW_BENCH_TAGS=nowhatsapp measures the build without WhatsApp.
	cmd := exec.Command("go", "build", "-tags", os.Getenv("OPENCLAW_BENCH_TAGS"), "-ldflags", "-s -w", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	// The same 10,000 chunks and loopback embeddings as BenchmarkBox.
	ws, srv := boxNotes(b, dir)
	defer srv.Close()
	config := func(enabled bool) string {
		p := filepath.Join(dir, fmt.Sprintf("openclaw-%v.json", enabled))
		os.WriteFile(p, []byte(fmt.Sprintf(`{
  agents: { defaults: { workspace: '%s', memorySearch: { enabled: %v, provider: 'openai', fallback: 'none', remote: { baseUrl: '%s/v1', apiKey: 'bench' } } } },
}`, ws, enabled, srv.URL)), 0o600)
		return p
	}
	state := filepath.Join(dir, "state")
	run := func(cfg string, until func(*client.Client) bool) (float64, func()) {
		sock := filepath.Join(dir, "gw.sock")
		cmd := exec.Command(bin, "run", "--config", cfg, "--state-dir", state, "--socket", sock)
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		stop := func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }
		c := client.New(sock)
		for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
			if _, err := c.Status(context.Background()); err == nil && until(c) {
				break
			}
			if time.Now().After(deadline) {
				stop()
				b.Fatal("gateway did not get ready")
			}
		}
		time.Sleep(2 * time.Second) // idle
		st, err := c.Status(context.Background())
		if err != nil {
			stop()
			b.Fatal(err)
		}
		if os.Getenv("OPENCLAW_BENCH_SMAPS") != "" {
			logSmaps(b, cmd.Process.Pid, filepath.Base(cfg))
		}
		if s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)); err == nil {
			for _, l := range strings.Split(string(s), "\n") {
				if strings.HasPrefix(l, "Rss") {
					b.Logf("%s: %s", filepath.Base(cfg), strings.Join(strings.Fields(l), " "))
				}
			}
		}
		return float64(st.RSSBytes) / (1 << 20), stop
	}
	indexed := func(c *client.Client) bool {
		st, err := c.MemoryStatus(context.Background(), "")
		return err == nil && st.Vectors == 10000 && st.Chunks == 10000 && !st.Dirty
	}
	// First start: build the index (and measure how long it took).
	t0 := time.Now()
	_, stop := run(config(true), indexed)
	build := time.Since(t0)
	stop()
	var with, without float64
	for range b.N {
		rss, stop := run(config(true), indexed)
		with += rss
		stop()
		rss, stop = run(config(false), func(*client.Client) bool { return true })
		without += rss
		stop()
	}
	n := float64(b.N)
	b.ReportMetric(with/n, "gateway-10k-index-MB")
	b.ReportMetric(without/n, "gateway-memory-off-MB")
	b.ReportMetric((with-without)/n, "index-MB")
	b.ReportMetric(build.Seconds(), "first-build-s")
}

// logSmaps logs the resident kB of each mapping (OPENCLAW_BENCH_SMAPS=1):
// where an RSS figure comes from.
func logSmaps(b *testing.B, pid int, label string) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return
	}
	byName := map[string]int{}
	name := ""
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-"):
			name = "[anon]"
			if len(f) >= 6 {
				name = f[5]
			}
		case len(f) >= 2 && f[0] == "Rss:":
			var kb int
			fmt.Sscan(f[1], &kb)
			byName[name] += kb
		}
	}
	for n, kb := range byName {
		if kb >= 256 {
			b.Logf("%s: %s %d kB", label, n, kb)
		}
	}
}
