package workspace

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

var t0 = time.Date(2026, 6, 15, 9, 0, 0, 0, time.UTC)

func readState(t *testing.T, stateDir string) stateFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(stateDir, StateFile))
	if err != nil {
		t.Fatal(err)
	}
	var st stateFile
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestEnsureBrandNew(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	res, err := Ensure(ws, "main", state, t0)
	if err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(Standing), Bootstrap)
	if !slices.Equal(res.Written, want) || !res.Bootstrap || res.ReadOnly || len(res.Warnings) > 0 {
		t.Fatalf("result %+v, want written %v", res, want)
	}
	for _, name := range want {
		b, err := os.ReadFile(filepath.Join(ws, name))
		if err != nil {
			t.Fatal(err)
		}
		tmpl, _ := Template(name)
		if string(b) != tmpl {
			t.Errorf("%s differs from its template", name)
		}
		fi, _ := os.Stat(filepath.Join(ws, name))
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", name, fi.Mode().Perm())
		}
	}
	st := readState(t, state)
	if e := st.Workspaces[ws]; e == nil || e.Agent != "main" || !e.BootstrapSeededAt.Equal(t0) || !e.OnboardingCompletedAt.IsZero() {
		t.Fatalf("state %+v", st.Workspaces)
	}
	if fi, _ := os.Stat(filepath.Join(state, StateFile)); fi.Mode().Perm() != 0o600 {
		t.Errorf("state file mode %v", fi.Mode().Perm())
	}

	// Second start: nothing written, the ritual still pending.
	res, err = Ensure(ws, "main", state, t0.Add(time.Hour))
	if err != nil || len(res.Written) != 0 || res.Bootstrap {
		t.Fatalf("second start: %+v %v", res, err)
	}

	// The agent deletes BOOTSTRAP.md and the user deletes SOUL.md: the
	// ritual is done and never comes back; SOUL.md does (OpenClaw's way).
	os.Remove(filepath.Join(ws, Bootstrap))
	os.Remove(filepath.Join(ws, "SOUL.md"))
	t1 := t0.Add(2 * time.Hour)
	res, err = Ensure(ws, "main", state, t1)
	if err != nil || !slices.Equal(res.Written, []string{"SOUL.md"}) || res.Bootstrap {
		t.Fatalf("after the ritual: %+v %v", res, err)
	}
	if _, err := os.Lstat(filepath.Join(ws, Bootstrap)); !os.IsNotExist(err) {
		t.Fatalf("BOOTSTRAP.md re-created: %v", err)
	}
	if e := readState(t, state).Workspaces[ws]; !e.OnboardingCompletedAt.Equal(t1) || !e.BootstrapSeededAt.Equal(t0) {
		t.Fatalf("state after the ritual %+v", e)
	}
	// Even with the workspace emptied again, the record keeps the ritual away.
	for _, n := range Standing {
		os.Remove(filepath.Join(ws, n))
	}
	if res, _ := Ensure(ws, "main", state, t1); res.Bootstrap {
		t.Fatal("BOOTSTRAP.md written again for a seeded workspace")
	}
}

func TestEnsureEmptiedBootstrapCompletes(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	if _, err := Ensure(ws, "main", state, t0); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, Bootstrap), []byte(" \n"), 0o600)
	if _, err := Ensure(ws, "main", state, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if e := readState(t, state).Workspaces[ws]; e.OnboardingCompletedAt.IsZero() {
		t.Fatal("a blank BOOTSTRAP.md should complete onboarding")
	}
}

// A workspace with the user's files: nothing of theirs is touched, the
// missing ones are added, and there is no ritual.
func TestEnsureExistingWorkspace(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, ws string)
		want  []string
	}{
		{"own AGENTS.md", func(t *testing.T, ws string) {
			os.WriteFile(filepath.Join(ws, "AGENTS.md"), []byte("mine"), 0o644)
		}, []string{"SOUL.md", "TOOLS.md", "IDENTITY.md", "USER.md"}},
		{"empty SOUL.md", func(t *testing.T, ws string) {
			os.WriteFile(filepath.Join(ws, "SOUL.md"), nil, 0o644)
		}, []string{"AGENTS.md", "TOOLS.md", "IDENTITY.md", "USER.md"}},
		{"MEMORY.md only", func(t *testing.T, ws string) {
			os.WriteFile(filepath.Join(ws, "MEMORY.md"), []byte("notes"), 0o644)
		}, Standing},
		{"memory dir", func(t *testing.T, ws string) {
			os.Mkdir(filepath.Join(ws, "memory"), 0o700)
		}, Standing},
		{"dangling symlink", func(t *testing.T, ws string) {
			os.Symlink(filepath.Join(t.TempDir(), "nowhere"), filepath.Join(ws, "USER.md"))
		}, []string{"AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws, state := t.TempDir(), t.TempDir()
			c.setup(t, ws)
			before := snapshot(t, ws)
			res, err := Ensure(ws, "main", state, t0)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Written, c.want) || res.Bootstrap {
				t.Fatalf("written %v (bootstrap %v), want %v", res.Written, res.Bootstrap, c.want)
			}
			after := snapshot(t, ws)
			for name, v := range before {
				if after[name] != v {
					t.Errorf("%s changed: %q → %q", name, v, after[name])
				}
			}
			if readState(t, state).Workspaces[ws] == nil {
				t.Error("an existing workspace is recorded as seeded")
			}
		})
	}
}

// A symlink to a file outside the workspace is neither followed nor
// replaced: the outside file keeps its content.
func TestEnsureNeverFollowsSymlinks(t *testing.T) {
	ws, state, outside := t.TempDir(), t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "victim")
	os.WriteFile(target, []byte("precious"), 0o600)
	os.Symlink(target, filepath.Join(ws, "AGENTS.md"))
	// A symlinked target that does not exist yet must not be created.
	os.Symlink(filepath.Join(outside, "created"), filepath.Join(ws, "TOOLS.md"))
	if _, err := Ensure(ws, "main", state, t0); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "precious" {
		t.Fatalf("symlink target overwritten: %q", b)
	}
	if _, err := os.Lstat(filepath.Join(outside, "created")); !os.IsNotExist(err) {
		t.Fatal("a file was created through a dangling symlink")
	}
}

func TestEnsureReadOnly(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes into read-only directories")
	}
	ws, state := t.TempDir(), t.TempDir()
	os.Chmod(ws, 0o500)
	t.Cleanup(func() { os.Chmod(ws, 0o700) })
	res, err := Ensure(ws, "main", state, t0)
	if err != nil {
		t.Fatalf("read-only workspace is an error: %v", err)
	}
	if !res.ReadOnly || len(res.Written) != 0 || len(res.Warnings) == 0 || !strings.Contains(res.Warnings[0], "read-only") {
		t.Fatalf("result %+v", res)
	}
	if _, err := os.Stat(filepath.Join(state, StateFile)); !os.IsNotExist(err) {
		t.Fatal("a read-only workspace was recorded as seeded")
	}
	// Writable again: seeded on the next start, ritual included.
	os.Chmod(ws, 0o700)
	if res, err := Ensure(ws, "main", state, t0); err != nil || !res.Bootstrap {
		t.Fatalf("after chmod: %+v %v", res, err)
	}
}

func TestEnsureBadStateFile(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	bad := []byte("{not json")
	os.WriteFile(filepath.Join(state, StateFile), bad, 0o600)
	res, err := Ensure(ws, "main", state, t0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Bootstrap || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], StateFile) {
		t.Fatalf("result %+v", res)
	}
	if !slices.Equal(res.Written, Standing) {
		t.Fatalf("written %v", res.Written)
	}
	if b, _ := os.ReadFile(filepath.Join(state, StateFile)); string(b) != string(bad) {
		t.Fatal("a bad state file was rewritten")
	}
}

func TestEnsureRelative(t *testing.T) {
	if _, err := Ensure("ws", "main", t.TempDir(), t0); err == nil {
		t.Fatal("relative workspace accepted")
	}
}

// The templates stay small: they are in every request of a tiny model.
func TestTemplatesSmall(t *testing.T) {
	total := 0
	for _, name := range append(slices.Clone(Standing), Bootstrap) {
		s, err := Template(name)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(s, "# "+name) {
			t.Errorf("%s does not start with its title", name)
		}
		total += len(s)
	}
	if total > 2400 {
		t.Errorf("bootstrap templates total %d bytes; keep them under 2400", total)
	}
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if fi, _ := os.Lstat(p); fi.Mode()&os.ModeSymlink != 0 {
			l, _ := os.Readlink(p)
			m[e.Name()] = "->" + l
			continue
		}
		b, _ := os.ReadFile(p)
		m[e.Name()] = string(b)
	}
	return m
}

func TestIsReadOnly(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&os.PathError{Op: "open", Path: "x", Err: syscall.EROFS}, true},
		{&os.PathError{Op: "open", Path: "x", Err: syscall.EACCES}, true},
		{&os.PathError{Op: "open", Path: "x", Err: syscall.ENOSPC}, false},
		{nil, false},
	} {
		if got := isReadOnly(c.err); got != c.want {
			t.Errorf("isReadOnly(%v) = %v", c.err, got)
		}
	}
}
