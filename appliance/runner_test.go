package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/models/llamacpp"
)

// The gateway never links llama.cpp: local models run in the openclaw-runner
// binary (./runner). The tests that need a real local model get it from
// $OPENCLAW_RUNNER when that is set (e.g. bin/openclaw-runner after make
// build), else build it once per test binary into runnerDir with the flags
// `make build` uses (no -race, no tags, cgo, this CPU's variant's
// CGO_CFLAGS), so llama.cpp comes from the build cache. Where it cannot be built (CGO_ENABLED=0, no C++ compiler or
// headers) those tests are skipped and say why.
var (
	runnerDir    string // created by TestMain, removed after the tests
	presetRunner = os.Getenv(llamacpp.RunnerEnv)
	runnerOnce   sync.Once
	runnerSkip   string // why there is no runner; "" once built
	// runnerVariant is the CPU variant the tests' runner was built as
	// ("" for $OPENCLAW_RUNNER's, which says its own).
	runnerVariant string
)

// runnerPath is where the tests' openclaw-runner is (or will be once
// buildRunner has run): the gateways under test get it as $OPENCLAW_RUNNER.
func runnerPath() string {
	if presetRunner != "" {
		return presetRunner
	}
	return filepath.Join(runnerDir, llamacpp.RunnerName)
}

// buildRunner makes sure runnerPath exists and returns "" or why it cannot.
func buildRunner() string {
	runnerOnce.Do(func() {
		switch {
		case presetRunner != "":
			if _, err := os.Stat(presetRunner); err != nil {
				runnerSkip = "$" + llamacpp.RunnerEnv + ": " + err.Error()
			}
			return
		case os.Getenv("CGO_ENABLED") == "0":
			runnerSkip = "CGO_ENABLED=0: the local model tests need openclaw-runner, which links llama.cpp through cgo (make build writes bin/openclaw-runner; set " + llamacpp.RunnerEnv + " to it)"
			return
		case runnerDir == "":
			runnerSkip = "no directory for openclaw-runner (TestMain did not run)"
			return
		}
		// The variant make build builds here (same flags, so the same
		// build-cache entry for llama.cpp), named as make build names it:
		// $RUNNER_VARIANT (make test sets it), else this CPU's best.
		// The openclaw_script tag lets a test script the model's replies
		// ($OPENCLAW_RUNNER_SCRIPT, models/llamacpp/runner/script_on.go);
		// it changes no llama.cpp file, so the build cache still serves it.
		cmd := exec.Command("go", "build", "-tags", "openclaw_script", "-o", runnerPath(), "./runner")
		v, ok := llamacpp.HostVariant()
		if name := os.Getenv("RUNNER_VARIANT"); name != "" { // make test passes make's choice
			v, ok = llamacpp.VariantByName(name)
		}
		if ok {
			runnerVariant = v.Name
			cmd = exec.Command("go", "build", "-tags", "openclaw_script", "-ldflags", "-X main.variant="+v.Name, "-o", runnerPath(), "./runner")
			cmd.Env = append(os.Environ(), "CGO_CFLAGS="+v.CgoFlags(), "CGO_CXXFLAGS="+v.CgoFlags())
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			lines := strings.SplitN(strings.TrimSpace(string(out)), "\n", 6)
			runnerSkip = "openclaw-runner could not be built (it needs cgo, a C++ compiler and llama.cpp's headers: make deps): " + err.Error() + "\n" + strings.Join(lines[:min(len(lines), 5)], "\n")
		}
	})
	return runnerSkip
}

// needRunner skips t unless a real openclaw-runner is available, and points
// in-process gateways ($OPENCLAW_RUNNER) at it for the rest of t.
func needRunner(t testing.TB) string {
	t.Helper()
	if why := buildRunner(); why != "" {
		t.Skip(why)
	}
	t.Setenv(llamacpp.RunnerEnv, runnerPath())
	return runnerPath()
}

// cleanupM runs the tests, then removes runnerDir.
type cleanupM struct{ m *testing.M }

func (c cleanupM) Run() int {
	defer os.RemoveAll(runnerDir)
	return c.m.Run()
}

// TestRunnerMissing: with no openclaw-runner where the gateway looks, a local
// model fails with a no_model error that says what is missing and how to fix
// it, and status reports the same.
func TestRunnerMissing(t *testing.T) {
	model, err := filepath.Abs("../../shared/models/stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(model); err != nil {
		t.Skipf("shared test model: %v", err)
	}
	missing := filepath.Join(t.TempDir(), llamacpp.RunnerName)
	t.Setenv(llamacpp.RunnerEnv, missing)
	m := startMain(t, `{
  models: { providers: { local: { api: 'local', models: [{ id: 'stories', path: '`+model+`', maxTokens: 8 }] } } },
  agents: { defaults: { model: 'local/stories', promptMode: 'none' } },
  tools: { deny: ['*'] },
}`)
	c := client.New(m.Socket)
	_, err = c.Send(t.Context(), api.SendRequest{Text: "Once upon a time"}, nil)
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeModelFailed || !strings.Contains(ae.Message, llamacpp.RunnerEnv+"="+missing) {
		t.Fatalf("turn without a runner: %v", err)
	}
	st, err := c.Status(t.Context())
	if err != nil || st.LocalRunner != "" || !strings.Contains(st.LocalRunnerError, missing) {
		t.Fatalf("status: runner %q, error %q, %v", st.LocalRunner, st.LocalRunnerError, err)
	}
}
