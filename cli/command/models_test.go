package command

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestPullProgressBar draws the terminal progress bar into a buffer.
func TestPullProgressBar(t *testing.T) {
	var buf bytes.Buffer
	p := newPullProgress(&buf, true, "qwen3-1.7b")
	for _, done := range []int64{0, 400_000_000, 1_110_000_000} {
		p.update(done, 1_110_000_000)
	}
	p.finish(true)
	out := buf.String()
	if !strings.Contains(out, "pulling qwen3-1.7b") || !strings.Contains(out, "100%") || !strings.HasSuffix(out, "\n") {
		t.Errorf("bar output %q", out)
	}
	// A failed pull ends the bar's line too; an unknown size is a spinner.
	buf.Reset()
	p = newPullProgress(&buf, true, "x")
	p.update(10, -1)
	p.finish(false)
	if !strings.HasSuffix(buf.String(), "\n") {
		t.Errorf("spinner output %q", buf.String())
	}
}

func TestPullProgressLines(t *testing.T) {
	var buf bytes.Buffer
	p := newPullProgress(&buf, false, "m")
	for _, done := range []int64{0, 50_000_000, 150_000_000, 160_000_000, 250_000_000} {
		p.update(done, -1)
	}
	want := "pulling m: 0 B\npulling m: 150 MB\npulling m: 250 MB\n"
	if buf.String() != want {
		t.Errorf("lines\n%s\nwant\n%s", buf.String(), want)
	}
}

func TestModelFormats(t *testing.T) {
	for n, want := range map[int]string{0: "-", 512: "512", 2048: "2k", 4096: "4k", 8192: "8k", 32768: "32k", 40960: "40k", 131072: "128k", 1000: "1k", 1500: "1500"} {
		if got := contextSize(n); got != want {
			t.Errorf("contextSize(%d) = %s, want %s", n, got, want)
		}
	}
	for n, want := range map[int64]string{14: "14 B", 1_752_320: "1.8 MB", 397_000_000: "397 MB", 1_110_000_000: "1.1 GB", 12e12: "12.0 TB"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %s, want %s", n, got, want)
		}
	}
	if got := pullLabel("https://h/r/resolve/main/M.gguf", ""); got != "M.gguf" {
		t.Errorf("pullLabel = %s", got)
	}
}

// TestModelsExitCodes: gateway errors exit 1, usage errors 2.
func TestModelsExitCodes(t *testing.T) {
	g, err := startFakeGateway()
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"models", "list"}, 0},
		{[]string{"models", "info", "mine"}, 1},
		{[]string{"models", "pull", "nope"}, 1},
		{[]string{"models", "pull"}, 2},
		{[]string{"models", "import", "a", "b"}, 2},
		{[]string{"models", "rm", "--frob", "x"}, 2},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"--socket", g.socket}, tt.args...), strings.NewReader(""), &stdout, &stderr)
		if code != tt.code {
			t.Errorf("%v: exit %d, want %d; stderr %s", tt.args, code, tt.code, stderr.String())
		}
	}
}

// TestModelsNoRunner: against a gateway without openclaw-runner (the pure
// build), list and info never advise pulling a model; they point to Ollama
// or a remote provider.
func TestModelsNoRunner(t *testing.T) {
	g, err := startFakeGateway()
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	g.mu.Lock()
	g.noRunner = "openclaw-runner not found next to /usr/bin/openclaw-gateway or on PATH"
	g.mu.Unlock()
	for _, args := range [][]string{{"models", "list"}, {"models", "info", "qwen3-1.7b"}} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"--socket", g.socket}, args...), strings.NewReader(""), &stdout, &stderr)
		out := stdout.String() + stderr.String()
		if code != 0 || strings.Contains(out, "models pull") || !strings.Contains(out, "openclaw-runner") {
			t.Errorf("%v: exit %d, output:\n%s", args, code, out)
		}
	}
}
