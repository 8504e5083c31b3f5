package llamacpp_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/llamacpp"
)

// fakeRunnerFile writes an executable file named openclaw-runner into dir.
func fakeRunnerFile(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, llamacpp.RunnerName)
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFindRunnerEnvAndPath: $OPENCLAW_RUNNER wins; without it the runner is
// looked up on $PATH (the test binary has none beside it); with neither the
// error is a no_model error that says what is missing and how to fix it.
func TestFindRunnerEnvAndPath(t *testing.T) {
	dir := t.TempDir()
	want := fakeRunnerFile(t, dir)

	t.Setenv(llamacpp.RunnerEnv, want)
	t.Setenv("PATH", "")
	if got, err := llamacpp.FindRunner(); err != nil || got != want {
		t.Fatalf("with $%s: %q %v", llamacpp.RunnerEnv, got, err)
	}

	missing := filepath.Join(dir, "nope")
	t.Setenv(llamacpp.RunnerEnv, missing)
	_, err := llamacpp.FindRunner()
	var me *engine.ModelError
	if !errors.As(err, &me) || me.Kind != engine.ErrNoModel || !strings.Contains(me.Message, llamacpp.RunnerEnv+"="+missing) {
		t.Fatalf("$%s pointing nowhere: %v", llamacpp.RunnerEnv, err)
	}

	t.Setenv(llamacpp.RunnerEnv, "")
	t.Setenv("PATH", dir)
	if got, err := llamacpp.FindRunner(); err != nil || got != want {
		t.Fatalf("on PATH: %q %v", got, err)
	}

	t.Setenv("PATH", t.TempDir())
	_, err = llamacpp.FindRunner()
	exe, _ := os.Executable()
	exe, _ = filepath.EvalSymlinks(exe)
	if !errors.As(err, &me) || me.Kind != engine.ErrNoModel ||
		me.Message != "openclaw-runner not found next to "+exe+" or on PATH; install it (make build) or set OPENCLAW_RUNNER" {
		t.Fatalf("nowhere: %v", err)
	}
}

// TestFindRunnerBesideExecutable: an openclaw-runner in the directory of the
// running executable is found — after symlinks are resolved, so a gateway
// started through a symlink (/usr/local/bin/openclaw-gateway → /opt/…)
// finds the runner installed beside the real file.
func TestFindRunnerBesideExecutable(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("unix paths")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	binDir, linkDir := filepath.Join(dir, "bin"), filepath.Join(dir, "link")
	for _, d := range []string{binDir, linkDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gw := filepath.Join(binDir, "openclaw-gateway")
	copyFile(t, self, gw)
	want := fakeRunnerFile(t, binDir)
	fakeRunnerFile(t, linkDir) // beside the symlink only: not the one
	link := filepath.Join(linkDir, "openclaw-gateway")
	if err := os.Symlink(gw, link); err != nil {
		t.Fatal(err)
	}
	for _, exe := range []string{gw, link} {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), "LLAMACPP_TEST_RUNNER=findrunner", llamacpp.RunnerEnv+"=", "PATH="+t.TempDir())
		out, err := cmd.Output()
		if got := strings.TrimSpace(string(out)); err != nil || got != want {
			t.Errorf("started as %s: found %q (%v), want %s", exe, got, err, want)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestNoRunnerBinary: with the default command and no runner binary, a local
// model fails at once with a no_model error naming the model and saying how
// to fix it (the failover chain moves on), and nothing is loaded.
func TestNoRunnerBinary(t *testing.T) {
	missing := filepath.Join(t.TempDir(), llamacpp.RunnerName)
	t.Setenv(llamacpp.RunnerEnv, missing)
	pool := llamacpp.NewPool(llamacpp.Config{})
	defer pool.Close()
	p := pool.Model("local", "tiny", fakeGGUF(t))
	_, _, err := stream(context.Background(), p, "hi", nil)
	var me *engine.ModelError
	if !errors.As(err, &me) || me.Kind != engine.ErrNoModel || me.Provider != "local" || me.Model != "tiny" ||
		!strings.Contains(me.Message, missing) || !strings.Contains(me.Message, "make build") {
		t.Fatalf("err = %v", err)
	}
	if l := pool.Loaded(); len(l) != 0 {
		t.Fatalf("loaded = %+v", l)
	}
}

// TestLoadedRSS: a loaded model reports its runner process's own RSS.
func TestLoadedRSS(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("VmRSS is read from /proc")
	}
	pool := llamacpp.NewPool(llamacpp.Config{Command: testCommand("fake"), KeepAlive: -1})
	defer pool.Close()
	p := pool.Model("local", "fake", fakeGGUF(t))
	if _, _, err := stream(context.Background(), p, "quick", nil); err != nil {
		t.Fatal(err)
	}
	l := pool.Loaded()
	if len(l) != 1 || l[0].RSSBytes < 1<<20 || l[0].RSSBytes > 1<<32 {
		t.Fatalf("loaded = %+v", l)
	}
}
