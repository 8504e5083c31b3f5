package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Our package inits' budget: what every start of both binaries pays,
// whether or not the part is used (issue 24). A regexp, a parsed embedded
// file, a template or a big map built at package level costs kilobytes
// and a millisecond or more at every start (`{1,128}` in a regexp alone
// was 125 KB): build those on first use (sync.OnceValue). Allocations,
// not time: they are the same on every run and every machine.
const (
	initBudgetBytes  = 8 << 10
	initBudgetAllocs = 64
)

// TestOwnInitsAreCheap runs the real gateway and CLI binaries with
// GODEBUG=inittrace=1 and holds each of this module's packages to the
// init budget.
func TestOwnInitsAreCheap(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	dir := t.TempDir()
	for _, b := range []struct{ name, pkg string }{
		{"openclaw-gateway", "."},
		{"openclaw", "../cli"},
		{"openclaw-migrate", "../cli/migrate/openclaw-migrate"},
	} {
		bin := filepath.Join(dir, b.name)
		build := exec.Command("go", "build", "-tags", "nollamacpp", "-o", bin, b.pkg)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", b.name, err, out)
		}
		cmd := exec.Command(bin, "--version")
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s --version: %v\n%s", b.name, err, stderr.String())
		}
		n := 0
		sc := bufio.NewScanner(&stderr)
		for sc.Scan() {
			// init <pkg> @0.5 ms, 0.01 ms clock, 64 bytes, 2 allocs
			f := strings.Fields(sc.Text())
			if len(f) < 10 || f[0] != "init" || !strings.HasPrefix(f[1], "github.com/openclaw-edge/edge") {
				continue
			}
			n++
			bytes, err1 := strconv.Atoi(f[7])
			allocs, err2 := strconv.Atoi(f[9])
			if err1 != nil || err2 != nil {
				t.Fatalf("unreadable inittrace line %q", sc.Text())
			}
			if bytes > initBudgetBytes || allocs > initBudgetAllocs {
				t.Errorf("%s: init of %s allocates %d bytes in %d allocations (budget %d bytes, %d allocations): build it on first use",
					b.name, f[1], bytes, allocs, initBudgetBytes, initBudgetAllocs)
			}
		}
		if n == 0 {
			t.Fatalf("%s: no init of this module in GODEBUG=inittrace's output:\n%s", b.name, stderr.String())
		}
	}
}
