package safebin

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestProfilesKnowEveryLongOption asks the real GNU binaries for their
// long options and checks that each profile knows all of them: a long
// option the profile lacked would make an abbreviation expand here to one
// option and in the binary to another. glibc lists the candidates of an
// ambiguous prefix, so `bin --a` … `bin --z` reveal the table (a letter
// with a single option is covered by the profile's own exact names).
// Skipped where the tools are not GNU.
func TestProfilesKnowEveryLongOption(t *testing.T) {
	if testing.Short() {
		t.Skip("runs each binary 26 times")
	}
	if out, err := exec.Command("sort", "--version").Output(); err != nil || !strings.Contains(string(out), "GNU coreutils") {
		t.Skip("GNU coreutils not installed")
	}
	cand := regexp.MustCompile(`'--([a-z0-9-]+)'`)
	for name, p := range profiles() {
		if p.freeArgs || name == "whoami" {
			continue
		}
		if _, err := exec.LookPath(name); err != nil {
			continue
		}
		known := map[string]bool{}
		for _, o := range p.opts {
			for _, l := range o.long {
				known[l] = true
			}
		}
		for c := 'a'; c <= 'z'; c++ {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			cmd := exec.CommandContext(ctx, name, "--"+string(c))
			cmd.Dir = t.TempDir()
			out, _ := cmd.CombinedOutput()
			cancel()
			s := string(out)
			if !strings.Contains(s, "ambiguous") {
				continue
			}
			_, list, _ := strings.Cut(s, "possibilities:")
			list, _, _ = strings.Cut(list, "\n")
			for _, m := range cand.FindAllStringSubmatch(list, -1) {
				if !known[m[1]] {
					t.Errorf("%s: the binary knows --%s, the profile does not", name, m[1])
				}
			}
		}
	}
}
