package fs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/tool"
)

type writeTool struct{}

func (t *writeTool) Spec() engine.ToolSpec {
	return engine.ToolSpec{
		Name:        "write",
		Description: "Create or overwrite a file in the workspace with the given content. Parent directories are created.",
		Parameters: tool.MustSchema(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"File path, relative to the workspace"},` +
			`"content":{"type":"string","description":"The complete new content of the file"}},` +
			`"required":["path","content"]}`),
	}
}

type writeArgs struct {
	Path     string  `json:"path"`
	FilePath string  `json:"file_path"`
	Content  *string `json:"content"`
}

func (t *writeTool) Run(ctx context.Context, env tool.Env, raw json.RawMessage) engine.ToolResult {
	var a writeArgs
	if err := tool.DecodeArgs(raw, &a); err != nil {
		return engine.ErrorResult("write: %v", err)
	}
	p := pathArg(a.Path, a.FilePath)
	if p == "" {
		return engine.ErrorResult("write: path is required")
	}
	if a.Content == nil {
		return engine.ErrorResult("write: content is required (use an empty string for an empty file)")
	}
	w, err := openWorkspace(env)
	if err != nil {
		return engine.ErrorResult("write: %v", err)
	}
	defer w.Close()
	rel, err := w.rel(p)
	if err != nil {
		return w.fail("write", p, err)
	}
	if rel == "." {
		return engine.ErrorResult("write: %q is the workspace directory, not a file", p)
	}
	if err := ctx.Err(); err != nil {
		return engine.ErrorResult("write: %v", err)
	}
	if err := w.writeFile(rel, []byte(*a.Content)); err != nil {
		return w.fail("write", p, err)
	}
	details, _ := json.Marshal(map[string]any{"path": rel, "bytesWritten": len(*a.Content)})
	return engine.ToolResult{
		Content: []engine.Block{engine.TextBlock(fmt.Sprintf("Wrote %d bytes to %s", len(*a.Content), rel))},
		Details: details,
	}
}

type editTool struct{}

func (t *editTool) Spec() engine.ToolSpec {
	return engine.ToolSpec{
		Name: "edit",
		Description: "Replace one exact occurrence of oldText with newText in a file. oldText must match the file exactly " +
			"(whitespace included) and occur exactly once; include surrounding lines to make it unique.",
		Parameters: tool.MustSchema(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"File path, relative to the workspace"},` +
			`"oldText":{"type":"string","description":"Exact text to replace"},` +
			`"newText":{"type":"string","description":"Replacement text"}},` +
			`"required":["path","oldText","newText"]}`),
	}
}

type editArgs struct {
	Path      string  `json:"path"`
	FilePath  string  `json:"file_path"`
	OldText   *string `json:"oldText"`
	NewText   *string `json:"newText"`
	OldString *string `json:"old_string"`
	NewString *string `json:"new_string"`
}

func (t *editTool) Run(ctx context.Context, env tool.Env, raw json.RawMessage) engine.ToolResult {
	var a editArgs
	if err := tool.DecodeArgs(raw, &a); err != nil {
		return engine.ErrorResult("edit: %v", err)
	}
	p := pathArg(a.Path, a.FilePath)
	oldText, newText := firstSet(a.OldText, a.OldString), firstSet(a.NewText, a.NewString)
	switch {
	case p == "":
		return engine.ErrorResult("edit: path is required")
	case oldText == nil || *oldText == "":
		return engine.ErrorResult("edit: oldText is required and must not be empty (use write to create a file)")
	case newText == nil:
		return engine.ErrorResult("edit: newText is required (use an empty string to delete oldText)")
	case *oldText == *newText:
		return engine.ErrorResult("edit: oldText and newText are identical; nothing to change")
	}
	w, err := openWorkspace(env)
	if err != nil {
		return engine.ErrorResult("edit: %v", err)
	}
	defer w.Close()
	rel, err := w.rel(p)
	if err != nil {
		return w.fail("edit", p, err)
	}
	data, err := w.readText(rel)
	if err != nil {
		return w.fail("edit", p, err)
	}
	content := string(data)
	oldT, newT := *oldText, *newText
	if strings.Count(content, oldT) == 0 && strings.Contains(content, "\r\n") && !strings.Contains(oldT, "\r") {
		// A CRLF file edited with LF text: match and write CRLF.
		oldT = strings.ReplaceAll(oldT, "\n", "\r\n")
		newT = strings.ReplaceAll(newT, "\n", "\r\n")
	}
	switch n := strings.Count(content, oldT); {
	case n == 0:
		hint := ""
		if strings.Contains(content, strings.TrimSpace(oldT)) {
			hint = " (it does occur with different surrounding whitespace: copy it exactly, indentation included)"
		}
		return engine.ErrorResult("edit: oldText was not found in %s%s; read the file and copy the text exactly", rel, hint)
	case n > 1:
		return engine.ErrorResult("edit: oldText occurs %d times in %s (at lines %s); include more surrounding lines so it matches exactly once",
			n, rel, occurrenceLines(content, oldT, 10))
	}
	if err := ctx.Err(); err != nil {
		return engine.ErrorResult("edit: %v", err)
	}
	idx := strings.Index(content, oldT)
	updated := content[:idx] + newT + content[idx+len(oldT):]
	if err := w.writeFile(rel, []byte(updated)); err != nil {
		return w.fail("edit", p, err)
	}
	line := 1 + strings.Count(content[:idx], "\n")
	removed, added := lineCount(oldT), lineCount(newT)
	details, _ := json.Marshal(map[string]any{"path": rel, "line": line, "linesRemoved": removed, "linesAdded": added})
	var b strings.Builder
	fmt.Fprintf(&b, "Edited %s: replaced %d line%s with %d line%s at line %d\n", rel, removed, plural(removed), added, plural(added), line)
	writeDiff(&b, line, oldT, newT)
	return engine.ToolResult{Content: []engine.Block{engine.TextBlock(b.String())}, Details: details}
}

func firstSet(ps ...*string) *string {
	for _, p := range ps {
		if p != nil {
			return p
		}
	}
	return nil
}

func lineCount(s string) int {
	if s == "" {
		return 0
	}
	return strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// occurrenceLines lists the 1-based lines where sub starts in s, at most
// max of them.
func occurrenceLines(s, sub string, max int) string {
	var lines []string
	line, from := 1, 0
	for len(lines) < max {
		i := strings.Index(s[from:], sub)
		if i < 0 {
			break
		}
		line += strings.Count(s[from:from+i], "\n")
		lines = append(lines, fmt.Sprint(line))
		line += strings.Count(sub, "\n")
		from += i + len(sub)
	}
	return strings.Join(lines, ", ")
}

// diffLines is how many removed and added lines the edit summary shows.
const diffLines = 12

// writeDiff writes a small -/+ view of the change.
func writeDiff(b *strings.Builder, line int, oldT, newT string) {
	fmt.Fprintf(b, "@@ line %d @@\n", line)
	for _, side := range []struct {
		sign string
		text string
	}{{"-", oldT}, {"+", newT}} {
		if side.text == "" {
			continue
		}
		ls := strings.Split(strings.TrimSuffix(strings.ReplaceAll(side.text, "\r\n", "\n"), "\n"), "\n")
		for i, l := range ls {
			if i == diffLines {
				fmt.Fprintf(b, "%s… (%d more lines)\n", side.sign, len(ls)-diffLines)
				break
			}
			b.WriteString(side.sign + l + "\n")
		}
	}
}
