package llamacpp_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/llamacpp"
)

// TestBestVariant: the variant chosen for a CPU is the best one whose
// instructions it has; every architecture ends in a baseline that needs
// nothing.
func TestBestVariant(t *testing.T) {
	v3 := []string{"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "lzcnt", "movbe"}
	v4 := append(slices.Clone(v3), "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")
	for _, tc := range []struct {
		name, arch string
		have       []string
		want       string
	}{
		{"old x86 (SSE only)", "amd64", []string{"sse3", "ssse3", "sse4_1", "sse4_2", "popcnt"}, "x86-64"},
		{"Sandy Bridge: AVX without AVX2", "amd64", []string{"avx"}, "x86-64"},
		{"Haswell", "amd64", v3, "x86-64-v3"},
		{"AVX2 but no F16C (a hypervisor hiding it)", "amd64", slices.DeleteFunc(slices.Clone(v3), func(s string) bool { return s == "f16c" }), "x86-64"},
		{"Skylake-X", "amd64", v4, "x86-64-v4"},
		{"AVX-512F alone (Knights Landing lacks BW/VL)", "amd64", append(slices.Clone(v3), "avx512f", "avx512cd"), "x86-64-v3"},
		{"Pi 4 (Cortex-A72)", "arm64", []string{"asimd"}, "armv8-a"},
		{"Pi 5 (Cortex-A76)", "arm64", []string{"asimd", "fphp", "asimdhp", "asimddp"}, "armv8.2-a-dotprod-fp16"},
		{"dotprod without fp16", "arm64", []string{"asimd", "asimddp"}, "armv8-a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, ok := llamacpp.BestVariant(tc.arch, tc.have)
			if !ok || v.Name != tc.want {
				t.Fatalf("BestVariant(%s, %v) = %q, want %q", tc.arch, tc.have, v.Name, tc.want)
			}
		})
	}
	if _, ok := llamacpp.BestVariant("riscv64", nil); ok {
		t.Fatal("riscv64 has no variants")
	}
	host, ok := llamacpp.HostVariant()
	if !ok && (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64") {
		t.Fatal("no variant for this machine")
	}
	t.Logf("this machine: %s (%s); CPU: %s", host.Name, host.CgoFlags(), strings.Join(llamacpp.CPUFeatures(), " "))
	for _, v := range llamacpp.Variants {
		if f := v.CgoFlags(); !strings.HasPrefix(f, "-O3 -DNDEBUG -g") {
			t.Errorf("%s: flags %q do not start with llama.cpp's release flags -O3 -DNDEBUG -g", v.Name, f)
		}
	}
}

// allFeatures is every feature this architecture's variants need: a CPU
// that runs them all.
func allFeatures() []string {
	var all []string
	for _, v := range llamacpp.VariantsFor(runtime.GOARCH) {
		all = append(all, v.Needs...)
	}
	return all
}

func writeScript(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestFindRunnersOrder: variant files beside the runner are tried best
// first, those this CPU cannot run are skipped (and listed), the plain
// openclaw-runner is always last; $OPENCLAW_RUNNER_VARIANT picks one.
func TestFindRunnersOrder(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the table names x86-64 variants")
	}
	dir := t.TempDir()
	plain := filepath.Join(dir, llamacpp.RunnerName)
	for _, f := range []string{plain, plain + "-x86-64-v4", plain + "-x86-64-v3", plain + "-armv8-a"} {
		writeScript(t, f, "exit 0")
	}
	writeScript(t, plain+"-x86-64", "exit 0")
	if err := os.Chmod(plain+"-x86-64", 0o644); err != nil { // not executable: ignored
		t.Fatal(err)
	}
	t.Setenv(llamacpp.RunnerEnv, plain)
	v3 := []string{"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "lzcnt", "movbe"}
	names := func(bs []llamacpp.RunnerBinary) (out []string) {
		for _, b := range bs {
			out = append(out, filepath.Base(b.Path)+"="+b.Variant)
		}
		return out
	}

	llamacpp.SetCPUFeatures(t, v3)
	try, skipped, err := llamacpp.FindRunners()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(try), []string{"openclaw-runner-x86-64-v3=x86-64-v3", "openclaw-runner="}; !slices.Equal(got, want) {
		t.Fatalf("try %v, want %v", got, want)
	}
	if len(skipped) != 1 || skipped[0].Variant != "x86-64-v4" || !slices.Contains(skipped[0].Missing, "avx512f") {
		t.Fatalf("skipped %+v", skipped)
	}

	llamacpp.SetCPUFeatures(t, append(v3, "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"))
	try, _, _ = llamacpp.FindRunners()
	if got := names(try); len(got) != 3 || got[0] != "openclaw-runner-x86-64-v4=x86-64-v4" {
		t.Fatalf("with AVX-512: %v", got)
	}

	t.Setenv(llamacpp.VariantEnv, "x86-64-v3")
	if try, _, err = llamacpp.FindRunners(); err != nil || len(try) != 1 || try[0].Variant != "x86-64-v3" {
		t.Fatalf("%s=x86-64-v3: %v %v", llamacpp.VariantEnv, names(try), err)
	}
	for _, bad := range []string{"x86-64-v9", "armv8-a", "x86-64"} { // unknown, other arch, file not executable
		t.Setenv(llamacpp.VariantEnv, bad)
		if _, _, err := llamacpp.FindRunners(); err == nil || !strings.Contains(err.Error(), llamacpp.VariantEnv+"="+bad) {
			t.Errorf("%s=%s: %v", llamacpp.VariantEnv, bad, err)
		}
	}
	llamacpp.SetCPUFeatures(t, nil)
	t.Setenv(llamacpp.VariantEnv, "x86-64-v4")
	if _, _, err := llamacpp.FindRunners(); err == nil || !strings.Contains(err.Error(), "this CPU lacks avx") {
		t.Errorf("forcing a variant the CPU cannot run: %v", err)
	}
}

// variantDir makes a runner directory where every variant better than the
// baseline cannot run on this CPU — the best dies of SIGILL, the next (on
// x86) exits with ExitUnsupportedCPU as a runner's own check does — and the
// plain openclaw-runner is this test binary's fake engine. Each start is
// logged to the returned file.
func variantDir(t *testing.T, best string) (dir, log string) {
	dir = t.TempDir()
	log = filepath.Join(dir, "starts.log")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	vs := llamacpp.VariantsFor(runtime.GOARCH)
	if len(vs) < 2 {
		t.Skipf("%s has no variant above the baseline", runtime.GOARCH)
	}
	for i, v := range vs[:len(vs)-1] {
		body := "echo " + v.Name + " >> " + log + "\nkill -ILL $$"
		if i == 0 && best != "" {
			body = best
		} else if i == 1 {
			body = "echo " + v.Name + " >> " + log + "\necho 'openclaw-runner: built for " + v.Name + ", but this CPU lacks avx2' >&2\nexit 86"
		}
		writeScript(t, filepath.Join(dir, llamacpp.RunnerName+"-"+v.Name), body)
	}
	writeScript(t, filepath.Join(dir, llamacpp.RunnerName), "echo plain >> "+log+"\nLLAMACPP_TEST_RUNNER=fake exec '"+exe+"' \"$@\"")
	t.Setenv(llamacpp.RunnerEnv, filepath.Join(dir, llamacpp.RunnerName))
	llamacpp.SetCPUFeatures(t, allFeatures())
	return dir, log
}

func readLog(t *testing.T, path string) []string {
	data, _ := os.ReadFile(path)
	return strings.Fields(string(data))
}

func quickTurn(t *testing.T, p *llamacpp.Provider) string {
	t.Helper()
	var sb strings.Builder
	err := p.Stream(context.Background(), &engine.ChatRequest{SessionID: "s", Messages: []engine.Message{engine.UserText("quick")}}, func(ev engine.Event) {
		if ev.Type == engine.EventTextDelta {
			sb.WriteString(ev.Text)
		}
	})
	if err != nil {
		t.Fatalf("turn: %v", err)
	}
	return sb.String()
}

// TestVariantFallback: with the best variants unable to run on this CPU
// (SIGILL at start; "this CPU lacks" and exit 86), the next build starts
// and the turn is answered; the failed builds are marked unusable and not
// started again for the next model.
func TestVariantFallback(t *testing.T) {
	_, log := variantDir(t, "")
	model := fakeGGUF(t)
	pool := llamacpp.NewPool(llamacpp.Config{KeepAlive: -1, Greedy: true})
	defer pool.Close()
	if got := quickTurn(t, pool.Model("local", "m", model)); got != "done" {
		t.Fatalf("reply %q", got)
	}
	vs := llamacpp.VariantsFor(runtime.GOARCH)
	want := []string{}
	for _, v := range vs[:len(vs)-1] {
		want = append(want, v.Name)
	}
	want = append(want, "plain")
	if got := readLog(t, log); !slices.Equal(got, want) {
		t.Fatalf("starts %v, want %v", got, want)
	}
	un := pool.Unusable()
	if len(un) != len(vs)-1 {
		t.Fatalf("unusable %v", un)
	}
	for path, why := range un {
		if !strings.Contains(why, "illegal instruction") && !strings.Contains(why, "lacks avx2") {
			t.Errorf("%s: why %q", path, why)
		}
	}
	// Another model in the same pool goes straight to the plain runner.
	model2 := filepath.Join(t.TempDir(), "m2.gguf")
	data, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(model2, data, 0o644); err != nil {
		t.Fatal(err)
	}
	quickTurn(t, pool.Model("local", "m2", model2))
	if got := readLog(t, log); !slices.Equal(got, append(want, "plain")) {
		t.Fatalf("second model: starts %v", got)
	}
	loaded := pool.Loaded()
	if len(loaded) != 2 || filepath.Base(loaded[0].Runner) != llamacpp.RunnerName {
		t.Fatalf("loaded %+v", loaded)
	}
}

// TestVariantFallbackMidTurn: a build that loads, then dies of SIGILL on
// the first request, is marked unusable and the request is sent again to
// the next build (once) when the variant it reported is not one this CPU
// is known to run; a build this CPU fully supports that dies so has merely
// crashed: the turn fails as any runner crash does, nothing is marked, and
// the next message starts it again.
func TestVariantFallbackMidTurn(t *testing.T) {
	for _, tc := range []struct {
		name, variant string
		fallback      bool
	}{
		{"unknown variant", "some-other-build", true},
		{"supported variant crashes", "", false}, // takes its file's name: the best, supported
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			info := `{"path":"x","contextLen":512,"slots":1}`
			if tc.variant != "" {
				info = `{"path":"x","contextLen":512,"slots":1,"variant":"` + tc.variant + `"}`
			}
			_, log := variantDir(t, `echo best >> `+filepath.Join(dir, "best.log")+`
echo '{"type":"ready","info":`+info+`}'
read line
kill -ILL $$`)
			pool := llamacpp.NewPool(llamacpp.Config{KeepAlive: -1, Greedy: true})
			defer pool.Close()
			p := pool.Model("local", "m", fakeGGUF(t))
			if !tc.fallback {
				_, _, err := stream(context.Background(), p, "quick", nil)
				if err == nil || !strings.Contains(err.Error(), "illegal instruction") || len(pool.Unusable()) != 0 {
					t.Fatalf("crash of a supported build: %v; unusable %v", err, pool.Unusable())
				}
				_, _, _ = stream(context.Background(), p, "quick", nil)
				if got := readLog(t, filepath.Join(dir, "best.log")); len(got) != 2 {
					t.Fatalf("best build started %d times, want 2 (not marked)", len(got))
				}
				return
			}
			if got := quickTurn(t, p); got != "done" {
				t.Fatalf("reply %q", got)
			}
			if got := readLog(t, filepath.Join(dir, "best.log")); len(got) != 1 {
				t.Fatalf("best variant started %d times", len(got))
			}
			if got := readLog(t, log); len(got) == 0 || got[len(got)-1] != "plain" {
				t.Fatalf("starts after it: %v", got)
			}
			best := llamacpp.VariantsFor(runtime.GOARCH)[0].Name
			if why := pool.Unusable()[filepath.Join(filepath.Dir(os.Getenv(llamacpp.RunnerEnv)), llamacpp.RunnerName+"-"+best)]; !strings.Contains(why, "illegal instruction") {
				t.Fatalf("unusable: %v", pool.Unusable())
			}
		})
	}
}

// TestEveryBuildCrashes: when every build, the plain one too, dies of
// SIGILL at start, the turn fails with a message that names them, the
// plain runner is not marked (a rebuilt one works without a restart), and
// the loop ends.
func TestEveryBuildCrashes(t *testing.T) {
	dir, log := variantDir(t, "")
	writeScript(t, filepath.Join(dir, llamacpp.RunnerName), "echo plain >> "+log+"\nkill -ILL $$")
	pool := llamacpp.NewPool(llamacpp.Config{KeepAlive: -1})
	defer pool.Close()
	p := pool.Model("local", "m", fakeGGUF(t))
	_, _, err := stream(context.Background(), p, "quick", nil)
	if err == nil || !strings.Contains(err.Error(), "no openclaw-runner build runs on this CPU") {
		t.Fatalf("err = %v", err)
	}
	vs := llamacpp.VariantsFor(runtime.GOARCH)
	if un := pool.Unusable(); len(un) != len(vs)-1 {
		t.Fatalf("unusable %v: the plain runner must not be marked", un)
	}
	_, _, _ = stream(context.Background(), p, "quick", nil)
	starts := readLog(t, log)
	if n := strings.Count(strings.Join(starts, " "), "plain"); n != 2 {
		t.Fatalf("starts %v: the plain runner should be tried on each message", starts)
	}
}

// TestVariantFilesMustBeTrusted: a variant file others may write (or in a
// directory others may write) is never started.
func TestVariantFilesMustBeTrusted(t *testing.T) {
	dir, log := variantDir(t, "")
	best := filepath.Join(dir, llamacpp.RunnerName+"-"+llamacpp.VariantsFor(runtime.GOARCH)[0].Name)
	if err := os.Chmod(best, 0o777); err != nil {
		t.Fatal(err)
	}
	try, _, err := llamacpp.FindRunners()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range try {
		if b.Path == best {
			t.Fatalf("a world-writable variant file is tried: %v", try)
		}
	}
	if err := os.Chmod(best, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o700)
	try, _, _ = llamacpp.FindRunners()
	if len(try) != 1 || filepath.Base(try[0].Path) != llamacpp.RunnerName {
		t.Fatalf("variants in a world-writable directory are tried: %v", try)
	}
	_ = log
}
