package localapi

import (
	"bytes"
	"context"
	"errors"
	"github.com/openclaw-edge/edge/engine/gateway/gatewaytest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
)

// Importing with ifExists=skip twice stores one session: the second run
// (and a run with a prefix of the transcript) is skipped, one that differs
// is refused, and nothing of the skipped uploads is stored or bound.
func TestImportIfExistsSkip(t *testing.T) {
	h := gatewaytest.NewHarness(t, "fake/model", nil)
	c := client.New(serveUnix(t, New(h.G, nil, Config{})))
	ctx := context.Background()
	src, err := os.ReadFile(filepath.Join("..", "transcript", "testdata", "v4.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	skip := client.ImportOptions{Key: "agent:main:migrated", IfExists: api.ImportIfExistsSkip}
	res, err := c.ImportWith(ctx, skip, bytes.NewReader(src))
	if err != nil || res.Skipped || res.Entries != 16 {
		t.Fatalf("first import = %+v, %v", res, err)
	}
	res, err = c.ImportWith(ctx, client.ImportOptions{Key: "agent:main:other", IfExists: api.ImportIfExistsSkip}, bytes.NewReader(src))
	if err != nil || !res.Skipped || res.Existing != api.ExistingSame || res.SessionID != "019a4d2e-7c10-7b3e-9f2a-5d6c7e8f9a0b" {
		t.Fatalf("second import = %+v, %v", res, err)
	}
	if _, err := c.History(ctx, "agent:main:other"); err == nil {
		t.Error("a skipped import bound its key")
	}
	lines := bytes.SplitAfter(src, []byte("\n"))
	prefix := bytes.Join(lines[:5], nil)
	res, err = c.ImportWith(ctx, skip, bytes.NewReader(prefix))
	if err != nil || !res.Skipped || res.Existing != api.ExistingExtended || res.Entries != 4 {
		t.Fatalf("prefix import = %+v, %v", res, err)
	}
	changed := bytes.Replace(src, []byte("Good morning"), []byte("Good evening"), 1)
	_, err = c.ImportWith(ctx, skip, bytes.NewReader(changed))
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeConflict || !strings.Contains(ae.Message, "different entries") {
		t.Fatalf("changed import = %v, want a conflict", err)
	}
	// A broken upload is still reported with its line, even when skipping.
	broken := append(bytes.Join(lines[:3], nil), []byte("{nope\n")...)
	if _, err := c.ImportWith(ctx, skip, bytes.NewReader(broken)); err == nil || !strings.Contains(err.Error(), "line 4") {
		t.Errorf("broken import = %v", err)
	}
	list, err := c.Sessions(ctx, "main")
	if err != nil || len(list) != 1 {
		t.Errorf("sessions after the imports = %+v, %v; want only the first", list, err)
	}
	if _, err := c.ImportWith(ctx, client.ImportOptions{IfExists: "merge"}, bytes.NewReader(src)); err == nil || !strings.Contains(err.Error(), "unknown ?ifExists=merge") {
		t.Errorf("bad ifExists = %v", err)
	}

	// Export gives the version asked for, entries value for value.
	for _, f := range []string{"", "v4", "v3"} {
		var out bytes.Buffer
		if err := c.ExportFormat(ctx, "agent:main:migrated", f, &out); err != nil {
			t.Fatal(err)
		}
		want := jsonValues(t, src)
		if f == "v3" {
			want[0].(map[string]any)["version"] = float64(3)
		}
		if !reflect.DeepEqual(want, jsonValues(t, out.Bytes())) {
			t.Errorf("export as %q differs:\n%s", f, out.Bytes())
		}
	}
	if err := c.ExportFormat(ctx, "agent:main:migrated", "v2", &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "want v3 or v4") {
		t.Errorf("export as v2 = %v", err)
	}
}

func TestWorkspaceFile(t *testing.T) {
	h := gatewaytest.NewHarness(t, "fake/model", nil)
	c := client.New(serveUnix(t, New(h.G, nil, Config{})))
	ctx := context.Background()
	put := func(rel, body string, overwrite bool) (*api.WorkspaceFileResult, error) {
		return c.PutWorkspaceFile(ctx, "", rel, strings.NewReader(body), overwrite, false)
	}
	// A dry run says what would happen and writes nothing.
	if res, err := c.PutWorkspaceFile(ctx, "", "memory/2026/notes.md", strings.NewReader("milk"), false, true); err != nil || res.Action != api.FileCreated || !res.DryRun {
		t.Fatalf("dry run = %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(h.Workspace, "memory")); !os.IsNotExist(err) {
		t.Fatalf("a dry run wrote: %v", err)
	}
	res, err := put("memory/2026/notes.md", "milk", false)
	if err != nil || res.Action != api.FileCreated || res.Agent != "main" || res.Size != 4 {
		t.Fatalf("create = %+v, %v", res, err)
	}
	if b, _ := os.ReadFile(filepath.Join(h.Workspace, "memory", "2026", "notes.md")); string(b) != "milk" {
		t.Errorf("file = %q", b)
	}
	// Private, like the files the gateway seeds.
	if fi, err := os.Stat(filepath.Join(h.Workspace, "memory", "2026", "notes.md")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode = %v, %v; want 0600", fi.Mode(), err)
	}
	if fi, err := os.Stat(filepath.Join(h.Workspace, "memory", "2026")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("folder mode = %v, %v; want 0700", fi.Mode(), err)
	}
	if res, err := put("memory/2026/notes.md", "milk", false); err != nil || res.Action != api.FileUnchanged {
		t.Errorf("same again = %+v, %v", res, err)
	}
	var ae *api.Error
	if _, err := put("memory/2026/notes.md", "eggs", false); !errors.As(err, &ae) || ae.Code != api.CodeConflict {
		t.Errorf("different without overwrite = %v", err)
	}
	if res, err := c.PutWorkspaceFile(ctx, "", "memory/2026/notes.md", strings.NewReader("eggs"), true, true); err != nil || res.Action != api.FileReplaced {
		t.Errorf("dry run overwrite = %+v, %v", res, err)
	}
	if res, err := put("memory/2026/notes.md", "eggs", true); err != nil || res.Action != api.FileReplaced {
		t.Errorf("overwrite = %+v, %v", res, err)
	}
	if b, _ := os.ReadFile(filepath.Join(h.Workspace, "memory", "2026", "notes.md")); string(b) != "eggs" {
		t.Errorf("file after overwrite = %q", b)
	}

	// Links are never followed, not even inside the workspace.
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(h.Workspace, "memory", "linkdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "target.md"), filepath.Join(h.Workspace, "USER.md")); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"memory/linkdir/x.md", "USER.md"} {
		if _, err := put(rel, "x", true); !errors.As(err, &ae) || ae.Code != api.CodeConflict || !strings.Contains(ae.Message, "symlink") {
			t.Errorf("%s: %v, want a conflict naming the symlink", rel, err)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("wrote outside the workspace: %v", ents)
	}

	for rel, want := range map[string]string{
		"":               "missing ?path=",
		"/etc/passwd":    "absolute",
		"../x.md":        "hidden file or folder or leaves",
		"a/../../x.md":   "not clean",
		"a\\b.md":        "backslash",
		".git/config":    "hidden",
		"a//b.md":        "not clean",
		"a/b.md\x00":     "control character",
		"memory/\x1b.md": "control character",
		// Only bootstrap files and memory notes: never a skill or a script.
		"skills/x/SKILL.md": "not a bootstrap file",
		"notes.md":          "not a bootstrap file",
		"memory/run.sh":     "not a bootstrap file",
	} {
		if _, err := put(rel, "x", false); !errors.As(err, &ae) || ae.Code != api.CodeBadRequest || !strings.Contains(ae.Message, want) {
			t.Errorf("path %q: %v, want %q", rel, err, want)
		}
	}
	big := strings.Repeat("x", api.MaxWorkspaceFile+1)
	if _, err := put("memory/big.md", big, false); err == nil || !strings.Contains(err.Error(), "larger than 8 MiB") {
		t.Errorf("big file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(h.Workspace, "memory", "big.md")); !os.IsNotExist(err) {
		t.Errorf("big file written: %v", err)
	}
}
