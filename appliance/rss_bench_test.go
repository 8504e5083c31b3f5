package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/models/llamacpp"
)

// BenchmarkGatewayRSS builds the real binaries — openclaw-gateway as `make
// build` builds it (CGO_ENABLED=0, llama.cpp only in openclaw-runner beside
// it), the pure build (CGO_ENABLED=0 -tags nollamacpp) and openclaw-runner —
// starts each gateway with the same config and reports its resident memory
// idle (no model loaded), then, for the make-build gateway, with a local
// model loaded, plus the runner process's own RSS. docs/design.md §11: idle
// ≤ 30 MB, and the full build within 2 MB of the pure build's
// (gateway-minus-pure-MB). The model is $OPENCLAW_BENCH_MODEL or the shared
// stories260K.
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
	if why := buildRunner(); why != "" {
		b.Skip(why)
	}
	dir, err := os.MkdirTemp("", "ocr")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	build := func(out string, tags ...string) string {
		bin := filepath.Join(dir, out, "openclaw-gateway")
		args := append([]string{"build", "-ldflags", "-s -w"}, tags...)
		cmd := exec.Command("go", append(args, "-o", bin, ".")...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("go build %v: %v\n%s", tags, err, out)
		}
		return bin
	}
	full := build("full")
	pure := build("pure", "-tags", "nollamacpp")
	// whatsmeow and its SQLite cost idle memory even unused (package
	// initialisation touches their tables): measured apart.
	noWA := build("nowa", "-tags", "nollamacpp,nowhatsapp")
	// The runner beside the gateway, where an installed gateway finds it.
	if err := os.Symlink(runnerPath(), filepath.Join(dir, "full", llamacpp.RunnerName)); err != nil {
		b.Fatal(err)
	}
	cfg := filepath.Join(dir, "openclaw.json")
	if err := os.WriteFile(cfg, []byte(`{
  models: { providers: { local: { api: 'local', models: [{ id: 'bench', path: '`+model+`', maxTokens: 16 }] } } },
  agents: { defaults: { model: 'local/bench', promptMode: 'none' } },
  tools: { deny: ['*'] },
}`), 0o600); err != nil {
		b.Fatal(err)
	}
	// The gateway must find its runner itself, beside its executable.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, llamacpp.RunnerEnv+"=") })
	// start runs bin on a fresh state dir and returns its client once idle.
	start := func(bin string) (*exec.Cmd, *client.Client) {
		state := filepath.Join(dir, "state")
		_ = os.RemoveAll(state)
		sock := filepath.Join(dir, "gw.sock")
		cmd := exec.Command(bin, "run", "--config", cfg, "--state-dir", state, "--socket", sock)
		cmd.Env = env
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
		return cmd, c
	}
	stop := func(cmd *exec.Cmd) {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	var idle, pureIdle, noWAIdle, loaded, runner float64
	for range b.N {
		cmd, c := start(noWA)
		st, err := c.Status(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		noWAIdle += float64(st.RSSBytes) / (1 << 20)
		stop(cmd)

		cmd, c = start(pure)
		st, err = c.Status(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		pureIdle += float64(st.RSSBytes) / (1 << 20)
		stop(cmd)

		cmd, c = start(full)
		st, err = c.Status(context.Background())
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
		stop(cmd)
	}
	n := float64(b.N)
	b.ReportMetric(idle/n, "gateway-idle-MB")
	b.ReportMetric(pureIdle/n, "pure-idle-MB")
	b.ReportMetric(noWAIdle/n, "nowhatsapp-idle-MB")
	b.ReportMetric((idle-pureIdle)/n, "gateway-minus-pure-MB")
	b.ReportMetric(loaded/n, "gateway-model-loaded-MB")
	b.ReportMetric(runner/n, "runner-MB")
}
