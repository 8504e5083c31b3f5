package engine_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/openclaw-edge/edge/engine"
)

// TestFindProgram: $ENV names the program (and must be an executable file),
// else $PATH (the test binary has no helper beside it); a miss is a
// *ProgramError that says where it looked.
func TestFindProgram(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "openclaw-helper")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, env, path, want, wantErr string
	}{
		{"env", prog, "", prog, ""},
		{"env missing", filepath.Join(dir, "nope"), dir, "", "$OPENCLAW_HELPER names " + filepath.Join(dir, "nope") + ": stat " + filepath.Join(dir, "nope") + ": no such file or directory"},
		{"env not executable", plain, dir, "", "$OPENCLAW_HELPER names " + plain + ": not executable"},
		{"env a directory", dir, dir, "", "$OPENCLAW_HELPER names " + dir + ": not a regular file"},
		{"on PATH", "", dir, prog, ""},
		{"nowhere", "", t.TempDir(), "", "openclaw-helper not found beside "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("OPENCLAW_HELPER", tc.env)
			t.Setenv("PATH", tc.path)
			got, err := engine.FindProgram("openclaw-helper", "OPENCLAW_HELPER")
			if tc.wantErr == "" {
				if err != nil || got != tc.want {
					t.Fatalf("got %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			var pe *engine.ProgramError
			if !errors.As(err, &pe) || len(err.Error()) < len(tc.wantErr) || err.Error()[:len(tc.wantErr)] != tc.wantErr {
				t.Fatalf("got %q, %v; want an error starting %q", got, err, tc.wantErr)
			}
		})
	}
}
