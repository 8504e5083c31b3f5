package llamacpp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProbeCacheFile: a runner build's --version answer is kept in
// Config.ProbeCache; a new pool (a restarted gateway) reads it instead of
// starting the runner, and a changed file is asked again.
func TestProbeCacheFile(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "openclaw-runner")
	count := filepath.Join(dir, "count")
	script := "#!/bin/sh\necho x >> " + count + "\necho 'openclaw-runner v1 linux/amd64 variant x86-64; llama.cpp CPU: AVX2'\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "probes.json")
	for i := range 2 {
		probeCache.Clear()
		p := NewPool(Config{ProbeCache: cache})
		v, err := p.probeRunner(bin)
		if err != nil || v.CPUFeatures != "AVX2" || v.Variant != "x86-64" {
			t.Fatalf("run %d: %+v %v", i, v, err)
		}
		p.Close()
	}
	if data, _ := os.ReadFile(count); strings.Count(string(data), "x") != 1 {
		t.Fatalf("the runner was asked %d times, want once", strings.Count(string(data), "x"))
	}
	// A new build (another size): asked again.
	if err := os.WriteFile(bin, []byte(script+"# v2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	probeCache.Clear()
	if _, err := NewPool(Config{ProbeCache: cache}).probeRunner(bin); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(count); strings.Count(string(data), "x") != 2 {
		t.Fatal("a changed build was not asked again")
	}
}
