package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/doctor"
	"github.com/openclaw-edge/edge/models/llamacpp"
)

// TestRunnerVariantFallback: the real gateway with the shipped defaults
// (tools on, the real system prompt) and the chat-template test model, in
// a runner directory where every CPU variant this CPU supports above the
// real runner dies of SIGILL, as a build for the wrong CPU does: the next
// one starts and the turn is answered; status names the variant in use and
// the builds found unusable, and doctor warns about them.
func TestRunnerVariantFallback(t *testing.T) {
	real := needRunner(t)
	if testing.Short() {
		t.Skip("real local model")
	}
	dir := t.TempDir()
	anchor := filepath.Join(dir, llamacpp.RunnerName)
	if err := os.Symlink(real, anchor); err != nil {
		t.Fatal(err)
	}
	var broken []string
	vs := llamacpp.VariantsFor(runtime.GOARCH)
	for _, v := range vs[:max(len(vs)-1, 0)] {
		if len(v.Missing(llamacpp.CPUFeatures())) > 0 {
			continue // never tried on this CPU
		}
		p := filepath.Join(dir, llamacpp.RunnerName+"-"+v.Name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\nkill -ILL $$\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		broken = append(broken, p)
	}
	if len(broken) == 0 {
		t.Skipf("this CPU supports no %s variant above the baseline", runtime.GOARCH)
	}
	t.Setenv(llamacpp.RunnerEnv, anchor)
	m := startMain(t, localConfig(t, "llama-2-tiny-random-chatml-tools.gguf"))
	c := client.New(m.Socket)

	res, err := c.Send(context.Background(), api.SendRequest{Text: "Hello! What can you do?"}, nil)
	if err != nil {
		t.Fatalf("turn: %v", err)
	}
	if res.Model != "local/m" {
		t.Fatalf("answered by %q", res.Model)
	}
	st, err := c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := runnerVariant
	if len(st.Runners) != 1 || st.Runners[0].Binary != anchor || (want != "" && st.Runners[0].Variant != want) {
		t.Fatalf("runners %+v; want %s as %q", st.Runners, anchor, want)
	}
	if st.LocalRunner != anchor || st.LocalRunnerVariant != st.Runners[0].Variant || len(st.CPUFeatures) == 0 {
		t.Fatalf("local runner %q variant %q cpu %v", st.LocalRunner, st.LocalRunnerVariant, st.CPUFeatures)
	}
	unusable := 0
	for _, b := range st.RunnerBuilds {
		if b.State == "unusable" {
			unusable++
			if !strings.Contains(b.Why, "illegal instruction") {
				t.Errorf("%s: why %q", b.Path, b.Why)
			}
		}
	}
	if unusable != len(broken) {
		t.Fatalf("builds %+v; want %d unusable", st.RunnerBuilds, len(broken))
	}
	rep, err := c.Doctor(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var saw bool
	for _, ch := range rep.Checks {
		if ch.Name == doctor.NameRunnerBuilds {
			saw = ch.Status == api.DoctorWarn && strings.Contains(ch.Detail, broken[0])
		}
	}
	if !saw {
		t.Fatalf("doctor checks %+v: no warning about the unusable builds", rep.Checks)
	}
	// A second turn does not try the broken builds again (they would fail
	// the same way; the runner stays up anyway, so just check it answers).
	if _, err := c.Send(context.Background(), api.SendRequest{Text: "Thanks."}, nil); err != nil {
		t.Fatalf("second turn: %v", err)
	}
}
