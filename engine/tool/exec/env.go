package exec

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// reservedEnv are names the call may not set: the built ones, and those
// that make the dynamic loader or an interpreter run other code.
var reservedEnv = []string{"PATH", "HOME", "TMPDIR", "PYTHONPATH", "NODE_OPTIONS", "BASH_ENV", "ENV", "IFS"}

// secretWords in a name mark a credential, which a command the model
// composes has no business receiving.
var secretWords = []string{"KEY", "TOKEN", "SECRET", "PASSWORD"}

// envRefusal says why the call may not set name; "" when it may.
func envRefusal(name string) string {
	if !envName.MatchString(name) {
		return "is not a valid name (want [A-Za-z_][A-Za-z0-9_]*)"
	}
	up := strings.ToUpper(name)
	switch {
	case slices.Contains(reservedEnv, up):
		return "is set by the gateway and may not be overridden"
	case strings.HasPrefix(up, "LD_"), strings.HasPrefix(up, "DYLD_"):
		return "changes what the dynamic loader runs"
	}
	for _, w := range secretWords {
		if strings.Contains(up, w) {
			return "looks like a credential (" + w + "); secrets are not passed to commands"
		}
	}
	return ""
}

// checkEnv refuses a call whose env sets a name it may not set.
func checkEnv(m map[string]string) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if why := envRefusal(k); why != "" {
			return fmt.Errorf("environment variable %q %s", k, why)
		}
		if strings.ContainsRune(m[k], 0) {
			return fmt.Errorf("environment variable %q has a NUL byte in its value", k)
		}
	}
	return nil
}

// envList returns m as sorted KEY=VALUE pairs (nil when empty).
func envList(m map[string]string) []string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k+"="+m[k])
	}
	return out
}

// copiedEnv are taken from the gateway's own environment when set.
var copiedEnv = []string{"LANG", "TZ", "TERM"}

// buildEnv is the whole environment of a child: nothing is inherited but
// copiedEnv.
func buildEnv(workspace, tmp string, extra []string) []string {
	env := []string{"PATH=" + SafePath, "HOME=" + workspace, "TMPDIR=" + tmp}
	for _, k := range copiedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, extra...)
}

// LookPath finds name as an exec child's PATH (SafePath) would and resolves
// symlinks; "" when it is not found. A name with a slash is relative to
// cwd. The gateway resolves allowlist entries added from the CLI with it, so
// they match what the exec tool records.
func LookPath(name, cwd string) string {
	if name == "" {
		return ""
	}
	var cands []string
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			name = filepath.Join(cwd, name)
		}
		cands = []string{name}
	} else {
		for _, dir := range filepath.SplitList(SafePath) {
			cands = append(cands, filepath.Join(dir, name))
		}
	}
	for _, c := range cands {
		fi, err := os.Stat(c)
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			continue
		}
		r, err := filepath.EvalSymlinks(c)
		if err != nil {
			continue
		}
		return r
	}
	return ""
}
