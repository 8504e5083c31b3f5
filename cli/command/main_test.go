package command_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/openclaw-edge/edge/cli/command"
	"github.com/openclaw-edge/edge/cli/migrate"
)

// TestMain makes this test binary both openclaw and openclaw-migrate, as
// installed: `openclaw migrate …` in a script (or in TestMigrateHelper)
// becomes openclaw-migrate through syscall.Exec, found beside openclaw.
// (An external test package: cli/migrate imports command.)
func TestMain(m *testing.M) {
	command.LinkedForTests = migrate.Linked()
	cmds := command.TestscriptCommands()
	cmds[command.MigrateBinary] = func() { os.Exit(migrate.Main()) }
	testscript.Main(m, cmds)
}

// TestMigrateHelper runs this test binary as openclaw (a real process, so
// the real exec) and checks what `openclaw migrate …` does with and without
// openclaw-migrate: the helper's help, usage errors and exit status come
// through unchanged; a missing helper is a clear error, as JSON too.
func TestMigrateHelper(t *testing.T) {
	// This test binary runs as openclaw where nothing is beside it; the
	// copies testscript.Main put on $PATH (different files) as openclaw
	// with openclaw-migrate beside it, and as openclaw-migrate.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	installed, err1 := exec.LookPath("openclaw")
	helper, err2 := exec.LookPath(command.MigrateBinary)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// A stand-in helper that shows the command line it got and fails
	// with a status of its own.
	fake := filepath.Join(dir, "fake-migrate")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\"\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(dir, "openclaw-link") // a link to openclaw itself
	if err := os.Symlink(exe, self); err != nil {
		t.Fatal(err)
	}
	emptyPath := filepath.Join(dir, "path")
	if err := os.Mkdir(emptyPath, 0o755); err != nil {
		t.Fatal(err)
	}
	down := filepath.Join(dir, "down.sock")
	missing := filepath.Join(dir, "nothing")

	tests := []struct {
		name   string
		helper string // $OPENCLAW_MIGRATE; "" unset, and not on $PATH
		prog   string // openclaw; "": exe, with no openclaw-migrate beside it
		args   []string
		code   int
		stdout []string // substrings; "=…" the whole of it
		stderr []string
	}{
		{"missing", "", "", []string{"migrate", "openclaw", "--apply"}, 1, []string{"="},
			[]string{"openclaw: migrate needs openclaw-migrate: not beside ", "make build writes it to bin/", "image installs it beside openclaw", "$OPENCLAW_MIGRATE"}},
		{"missing --json", "", "", []string{"migrate", "openclaw", "--json"}, 1, []string{`"ok": false`, `"code": "not_installed"`, `"message": "migrate needs openclaw-migrate`},
			[]string{"openclaw: migrate needs openclaw-migrate"}},
		{"missing help", "", "", []string{"help", "migrate"}, 0, []string{"openclaw migrate openclaw [DIR]", "These commands are in openclaw-migrate"},
			[]string{"openclaw: migrate needs openclaw-migrate"}},
		{"$OPENCLAW_MIGRATE missing", missing, "", []string{"migrate", "openclaw"}, 1, []string{"="},
			[]string{"openclaw: migrate needs openclaw-migrate: $OPENCLAW_MIGRATE names " + missing + ": stat " + missing + ": no such file or directory"}},
		{"openclaw itself", self, "", []string{"migrate", "openclaw"}, 1, []string{"="}, []string{"is openclaw itself, not openclaw-migrate"}},
		{"command line and exit status", fake, "", []string{"--socket", down, "migrate", "openclaw", "--apply", "--", "-x"}, 3,
			[]string{"=--socket\n" + down + "\nmigrate\nopenclaw\n--apply\n--\n-x\n"}, []string{"="}},
		{"group help", helper, "", []string{"migrate", "--help"}, 0,
			[]string{"Move to OpenClaw Edge from another assistant", "openclaw migrate [command]", "Bring an OpenClaw install's config"}, []string{"="}},
		{"bare group", helper, "", []string{"migrate"}, 0, []string{"openclaw migrate [command]"}, []string{"="}},
		{"help migrate openclaw", helper, "", []string{"help", "migrate", "openclaw"}, 0,
			[]string{"Read an OpenClaw state dir", "openclaw migrate openclaw [DIR] [flags]", "--include-security"}, []string{"="}},
		{"-h", helper, "", []string{"migrate", "openclaw", "-h"}, 0, []string{"Read an OpenClaw state dir"}, []string{"="}},
		{"usage error", helper, "", []string{"migrate", "openclaw", "a", "b"}, 2, []string{"="},
			[]string{"=openclaw: accepts at most 1 arg(s), received 2\nRun 'openclaw migrate openclaw --help' for usage.\n"}},
		{"usage error --json", helper, "", []string{"migrate", "openclaw", "--frob", "--json"}, 2, []string{`"code": "bad_request"`, "unknown flag: --frob"},
			[]string{"Run 'openclaw migrate openclaw --help' for usage."}},
		{"migrate fails", helper, "", []string{"--socket", down, "migrate", "openclaw", missing, "--json"}, 1, []string{`"ok": false`, "migrate: "},
			[]string{"openclaw: migrate: "}},
		{"beside openclaw", "", installed, []string{"migrate", "openclaw", "-h"}, 0, []string{"Read an OpenClaw state dir"}, []string{"="}},
		{"completion", helper, "", []string{"__complete", "migrate", "openclaw", "--inc"}, 0, []string{"--include-security"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog := tt.prog
			if prog == "" {
				prog = exe
			}
			cmd := exec.Command(prog, tt.args...)
			cmd.Args[0] = "openclaw" // testscript.Main runs the command it is named after
			cmd.Env = append(os.Environ(),
				command.MigrateEnv+"="+tt.helper,
				"HOME="+dir, "OPENCLAW_CONFIG_DIR="+filepath.Join(dir, "cli"), "OPENCLAW_GATEWAY=",
				"OPENCLAW_SOCKET="+down, "OPENCLAW_STATE_DIR=", "GORACE=atexit_sleep_ms=0")
			if tt.helper == "" {
				cmd.Env = append(cmd.Env, "PATH="+emptyPath)
			}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			code := 0
			if err := cmd.Run(); err != nil {
				var ee *exec.ExitError
				if !errors.As(err, &ee) {
					t.Fatal(err)
				}
				code = ee.ExitCode()
			}
			if code != tt.code {
				t.Errorf("exit %d, want %d", code, tt.code)
			}
			check(t, "stdout", stdout.String(), tt.stdout)
			check(t, "stderr", stderr.String(), tt.stderr)
			if s := stdout.String(); strings.HasPrefix(s, "{") {
				var v map[string]any
				if err := json.Unmarshal(stdout.Bytes(), &v); err != nil {
					t.Errorf("stdout is not one JSON object: %v\n%s", err, s)
				}
			}
		})
	}
}

// check: got holds each of want ("=…": is exactly …).
func check(t *testing.T, name, got string, want []string) {
	t.Helper()
	for _, w := range want {
		if exact, ok := strings.CutPrefix(w, "="); ok {
			if got != exact {
				t.Errorf("%s = %q, want %q", name, got, exact)
			}
		} else if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", name, w, got)
		}
	}
}
