//go:build !nollamacpp

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
)

// BenchmarkGatewayRSS builds the real openclaw-gateway binary, starts it,
// and reports its resident memory idle (no model loaded) and with a local
// model loaded, plus the runner process's own RSS (DESIGN.md §11: idle
// ≤ 30 MB). The model is $OPENCLAW_BENCH_MODEL or the shared stories260K.
func BenchmarkGatewayRSS(b *testing.B) {
	model := os.Getenv("OPENCLAW_BENCH_MODEL")
	if model == "" {
		var err error
		if model, err = filepath.Abs("../../shared/models/stories260K.gguf"); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := os.Stat(model); err != nil {
		b.Skipf("bench model: %v", err)
	}
	dir, err := os.MkdirTemp("", "ocr")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "openclaw-gateway")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	cfg := filepath.Join(dir, "openclaw.json")
	if err := os.WriteFile(cfg, []byte(`{
  models: { providers: { local: { api: 'local', models: [{ id: 'bench', path: '`+model+`', maxTokens: 16 }] } } },
  agents: { defaults: { model: 'local/bench', promptMode: 'none' } },
  tools: { deny: ['*'] },
}`), 0o600); err != nil {
		b.Fatal(err)
	}
	var idle, loaded, runner float64
	for range b.N {
		sock := filepath.Join(dir, "gw.sock")
		cmd := exec.Command(bin, "run", "--config", cfg, "--state-dir", filepath.Join(dir, "state"), "--socket", sock)
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		c := client.New(sock)
		for deadline := time.Now().Add(30 * time.Second); ; {
			if _, err = c.Status(context.Background()); err == nil {
				break
			}
			if time.Now().After(deadline) {
				b.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond) // settle after start-up
		st, err := c.Status(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		idle += float64(st.RSSBytes) / (1 << 20)
		if _, err := c.Send(context.Background(), api.SendRequest{Text: "Once upon a time"}, nil); err != nil {
			b.Fatal(err)
		}
		st, err = c.Status(context.Background())
		if err != nil || len(st.Runners) != 1 {
			b.Fatalf("status %+v %v", st, err)
		}
		loaded += float64(st.RSSBytes) / (1 << 20)
		runner += float64(st.Runners[0].RSSBytes) / (1 << 20)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	n := float64(b.N)
	b.ReportMetric(idle/n, "gateway-idle-MB")
	b.ReportMetric(loaded/n, "gateway-model-loaded-MB")
	b.ReportMetric(runner/n, "runner-MB")
}
