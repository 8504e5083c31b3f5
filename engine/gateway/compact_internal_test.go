package gateway

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
)

// memory_append writes today's note and nothing else: a symlinked note or
// memory/ directory (even one pointing inside the workspace) is refused,
// the target untouched.
func TestMemoryAppendRefusesLinks(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "AGENTS.md"), []byte("rules\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := appendNote(ws, "memory/2026-11-25.md", "- first"); err != nil {
		t.Fatal(err)
	}
	if err := appendNote(ws, "memory/2026-11-25.md", "- second"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(ws, "memory/2026-11-25.md"))
	if string(data) != "- first\n\n- second\n" {
		t.Errorf("note = %q", data)
	}
	if err := os.Symlink("../AGENTS.md", filepath.Join(ws, "memory/2026-11-26.md")); err != nil {
		t.Fatal(err)
	}
	if err := appendNote(ws, "memory/2026-11-26.md", "- evil"); err == nil {
		t.Error("appended through a symlinked note")
	}
	other := t.TempDir()
	if err := os.Symlink(other, filepath.Join(ws, "memory2")); err != nil {
		t.Fatal(err)
	}
	if err := appendNote(ws, "memory2/2026-11-26.md", "- evil"); err == nil {
		t.Error("appended through a symlinked directory")
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "AGENTS.md")); string(data) != "rules\n" {
		t.Errorf("AGENTS.md changed: %q", data)
	}
	tools := &flushTools{workspace: ws, path: "memory/2026-11-25.md"}
	if r := tools.Run(context.Background(), engine.ToolCall{Name: "write", Arguments: []byte(`{"path":"x"}`)}); !r.IsError {
		t.Error("the flush ran another tool")
	}
	if r := tools.Run(context.Background(), engine.ToolCall{Name: "memory_append", Arguments: []byte(`{"text":"` + strings.Repeat("x", maxFlushChars+1) + `"}`)}); !r.IsError {
		t.Error("an oversized note was appended")
	}
}
