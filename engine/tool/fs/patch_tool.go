package fs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"strings"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/tool"
)

type patchTool struct{}

func (t *patchTool) Spec() engine.ToolSpec {
	return engine.ToolSpec{
		Name: "apply_patch",
		Description: "Apply a patch that adds, updates, moves or deletes files, all or nothing. Format:\n" +
			"*** Begin Patch\n*** Add File: path\n+new line\n*** Update File: path\n*** Move to: new/path (optional)\n" +
			"@@ a line just above the change (optional)\n context line\n-removed line\n+added line\n" +
			"*** Delete File: path\n*** End Patch\n" +
			"Give about 3 lines of unchanged context around each change.",
		Parameters: tool.MustSchema(`{"type":"object","properties":{` +
			`"input":{"type":"string","description":"The whole patch, from *** Begin Patch to *** End Patch"}},` +
			`"required":["input"]}`),
	}
}

type patchArgs struct {
	Input string `json:"input"`
	Patch string `json:"patch"`
}

// step is one planned change: write data to rel, or remove rel.
type step struct {
	rel    string
	data   []byte
	remove bool
}

// undo restores one path to how it was before the patch.
type undo struct {
	rel     string
	existed bool
	data    []byte
}

func (t *patchTool) Run(ctx context.Context, env tool.Env, raw json.RawMessage) engine.ToolResult {
	var a patchArgs
	if err := tool.DecodeArgs(raw, &a); err != nil {
		return engine.ErrorResult("apply_patch: %v", err)
	}
	text := pathArg(a.Input, a.Patch)
	if strings.TrimSpace(text) == "" {
		return engine.ErrorResult("apply_patch: input is required")
	}
	ops, err := parsePatch(text)
	if err != nil {
		return engine.ErrorResult("apply_patch: %v; nothing was changed", err)
	}
	w, err := openWorkspace(env)
	if err != nil {
		return engine.ErrorResult("apply_patch: %v", err)
	}
	defer w.Close()

	steps, summary, res := t.plan(w, ops)
	if res != nil {
		return *res
	}
	if err := ctx.Err(); err != nil {
		return engine.ErrorResult("apply_patch: %v; nothing was changed", err)
	}
	if err := commit(w, steps); err != nil {
		return engine.ErrorResult("apply_patch: %v", err)
	}
	details, _ := json.Marshal(map[string]any{"files": summary})
	return engine.ToolResult{
		Content: []engine.Block{engine.TextBlock("Success. Updated the following files:\n" + strings.Join(summary, "\n"))},
		Details: details,
	}
}

// plan validates every operation and computes every new file before
// anything is written. A non-nil result is the error to return.
func (t *patchTool) plan(w *workspace, ops []fileOp) ([]step, []string, *engine.ToolResult) {
	fail := func(format string, args ...any) ([]step, []string, *engine.ToolResult) {
		r := engine.ErrorResult("apply_patch: "+format+"; nothing was changed", args...)
		return nil, nil, &r
	}
	failPath := func(p string, err error) ([]step, []string, *engine.ToolResult) {
		r := w.fail("apply_patch", p, err)
		r.Content[0].Text += "; nothing was changed"
		return nil, nil, &r
	}
	touched := map[string]string{} // rel → the patch path that touched it
	claim := func(p string) (string, error) {
		rel, err := w.rel(p)
		if err != nil {
			return "", err
		}
		if rel == "." {
			return "", errors.New("is the workspace directory, not a file")
		}
		if prev, ok := touched[rel]; ok {
			return "", fmt.Errorf("is touched twice by this patch (also as %q)", prev)
		}
		touched[rel] = p
		return rel, nil
	}
	var steps []step
	var summary []string
	for _, op := range ops {
		rel, err := claim(op.path)
		if err != nil {
			return failPath(op.path, err)
		}
		switch op.kind {
		case opAdd:
			if _, err := w.writeTarget(rel); err != nil {
				return failPath(op.path, err)
			}
			data := ""
			if len(op.lines) > 0 {
				data = strings.Join(op.lines, "\n") + "\n"
			}
			steps = append(steps, step{rel: rel, data: []byte(data)})
			summary = append(summary, "A "+rel)
		case opDelete:
			fi, err := w.root.Lstat(rel)
			if err != nil {
				return failPath(op.path, err)
			}
			if fi.IsDir() {
				return fail("cannot delete %q: it is a directory", op.path)
			}
			steps = append(steps, step{rel: rel, remove: true})
			summary = append(summary, "D "+rel)
		case opUpdate:
			data, err := w.readText(rel)
			if err != nil {
				return failPath(op.path, err)
			}
			content := string(data)
			crlf := strings.Contains(content, "\r\n")
			if crlf {
				content = strings.ReplaceAll(content, "\r\n", "\n")
			}
			updated, err := applyChunks(content, op.chunks, rel)
			if err != nil {
				return fail("%v", err)
			}
			if crlf {
				updated = strings.ReplaceAll(updated, "\n", "\r\n")
			}
			dest := rel
			if op.moveTo != "" {
				if dest, err = claim(op.moveTo); err != nil {
					return failPath(op.moveTo, err)
				}
			}
			if _, err := w.writeTarget(dest); err != nil {
				return failPath(op.path, err)
			}
			steps = append(steps, step{rel: dest, data: []byte(updated)})
			if dest != rel {
				steps = append(steps, step{rel: rel, remove: true})
				summary = append(summary, "M "+rel+" -> "+dest)
			} else {
				summary = append(summary, "M "+rel)
			}
		}
	}
	return steps, summary, nil
}

// commit carries out the steps; if one fails it puts back what the earlier
// ones changed (best effort) and says so.
func commit(w *workspace, steps []step) error {
	var undos []undo
	for _, s := range steps {
		u := undo{rel: s.rel}
		if old, err := w.root.ReadFile(s.rel); err == nil {
			u.existed, u.data = true, old
		} else if !errors.Is(err, iofs.ErrNotExist) {
			return rollback(w, undos, s.rel, err)
		}
		var err error
		if s.remove {
			err = w.remove(s.rel)
		} else {
			err = w.writeFile(s.rel, s.data)
		}
		if err != nil {
			return rollback(w, undos, s.rel, err)
		}
		undos = append(undos, u)
	}
	return nil
}

func rollback(w *workspace, undos []undo, rel string, cause error) error {
	var failed []string
	for i := len(undos) - 1; i >= 0; i-- {
		u := undos[i]
		var err error
		if u.existed {
			err = w.writeFile(u.rel, u.data)
		} else {
			err = w.root.Remove(u.rel)
		}
		if err != nil && !errors.Is(err, iofs.ErrNotExist) {
			failed = append(failed, u.rel)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("writing %s failed: %v; restoring the files changed before it also failed for %s",
			rel, trimPathError(cause), strings.Join(failed, ", "))
	}
	return fmt.Errorf("writing %s failed: %v; the files changed before it were restored, so nothing was changed",
		rel, trimPathError(cause))
}
