// Package memory holds the memory tools (docs/design.md §6): memory_search over
// the agent's memory index (engine/memory) and memory_get, which reads
// lines of MEMORY.md and memory/**/*.md — and nothing else.
//
// Choices where the spec was silent:
//   - memory_search answers JSON: {results:[{path,startLine,endLine,score,
//     snippet,source}], mode, provider, model, fallback, citations}, the
//     fields OpenClaw's tool returns; with memory.citations "auto" or "on"
//     each snippet ends with "Source: path#Lstart-Lend" ("auto" is "on":
//     the gateway has no UI that shows citations on its own).
//   - memory_get takes OpenClaw's `from` or DESIGN's `startLine` (1-based)
//     and `lines` (default: to the end, at most 400 lines); symbolic links
//     are refused at every level, as the index ignores them.
package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/openclaw-edge/edge/engine"
	mem "github.com/openclaw-edge/edge/engine/memory"
	"github.com/openclaw-edge/edge/engine/tool"
)

// Citations values (memory.citations).
const (
	CitationsAuto = "auto"
	CitationsOn   = "on"
	CitationsOff  = "off"
)

// Config is what the tools need.
type Config struct {
	// Index returns the agent's memory index; nil when memory search is
	// off for that agent.
	Index     func(agentID string) *mem.Index
	Citations string
}

// Tools returns memory_search and memory_get.
func Tools(cfg Config) []tool.Tool {
	return []tool.Tool{&searchTool{cfg}, &getTool{cfg}}
}

type searchTool struct{ cfg Config }

func (t *searchTool) Spec() engine.ToolSpec {
	return engine.ToolSpec{
		Name:        "memory_search",
		Description: "Search your memory notes (MEMORY.md, memory/*.md) by meaning and keywords. Returns snippets with path and line range; use memory_get for more lines.",
		Parameters: tool.MustSchema(`{"type":"object","properties":{` +
			`"query":{"type":"string","description":"What to look for"},` +
			`"maxResults":{"type":"integer","description":"Most results (default 6)"}},` +
			`"required":["query"]}`),
	}
}

type searchArgs struct {
	Query      string   `json:"query"`
	MaxResults tool.Int `json:"maxResults"`
	MinScore   *float64 `json:"minScore"`
}

// SearchOutput is memory_search's result, as JSON.
type SearchOutput struct {
	Results   []mem.Result `json:"results"`
	Mode      string       `json:"mode"`
	Provider  string       `json:"provider,omitempty"`
	Model     string       `json:"model,omitempty"`
	Fallback  bool         `json:"fallback"`
	Citations string       `json:"citations"`
	Warning   string       `json:"warning,omitempty"`
}

func (t *searchTool) Run(ctx context.Context, env tool.Env, raw json.RawMessage) engine.ToolResult {
	var a searchArgs
	if err := tool.DecodeArgs(raw, &a); err != nil {
		return engine.ErrorResult("memory_search: %v", err)
	}
	if strings.TrimSpace(a.Query) == "" {
		return engine.ErrorResult("memory_search: query is required")
	}
	if a.MaxResults < 0 {
		return engine.ErrorResult("memory_search: maxResults must be positive")
	}
	ix := t.index(env)
	if ix == nil {
		return engine.ErrorResult("memory_search: memory search is off for this agent (agents.defaults.memorySearch.enabled)")
	}
	resp, err := ix.Search(ctx, a.Query, mem.Options{MaxResults: int(a.MaxResults), MinScore: a.MinScore})
	if err != nil {
		return engine.ErrorResult("memory_search: %v", err)
	}
	out := SearchOutput{Results: resp.Results, Mode: resp.Mode, Provider: resp.Provider, Model: resp.Model, Fallback: resp.Fallback, Citations: citations(t.cfg.Citations), Warning: resp.Warning}
	if out.Citations != CitationsOff {
		for i := range out.Results {
			r := &out.Results[i]
			r.Snippet += fmt.Sprintf("\n\nSource: %s#L%d-L%d", r.Path, r.StartLine, r.EndLine)
		}
	}
	b, _ := json.Marshal(out)
	return engine.TextResult(string(b))
}

func (t *searchTool) index(env tool.Env) *mem.Index {
	if t.cfg.Index == nil {
		return nil
	}
	return t.cfg.Index(env.AgentID)
}

func citations(s string) string {
	switch s {
	case CitationsOn, CitationsOff:
		return s
	}
	return CitationsOn
}

type getTool struct{ cfg Config }

func (t *getTool) Spec() engine.ToolSpec {
	return engine.ToolSpec{
		Name:        "memory_get",
		Description: "Read lines of MEMORY.md or a file under memory/ (after memory_search; results from other folders: use read).",
		Parameters: tool.MustSchema(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"MEMORY.md or memory/…"},` +
			`"from":{"type":"integer","description":"First line, 1-based"},` +
			`"lines":{"type":"integer","description":"How many lines"}},` +
			`"required":["path"]}`),
	}
}

type getArgs struct {
	Path      string   `json:"path"`
	From      tool.Int `json:"from"`
	StartLine tool.Int `json:"startLine"`
	Lines     tool.Int `json:"lines"`
}

// maxGetLines bounds one memory_get (the result is truncated anyway; this
// keeps the read itself small).
const maxGetLines = 400

// GetOutput is memory_get's result, as JSON.
type GetOutput struct {
	Path      string `json:"path"`
	StartLine int    `json:"startLine"`
	EndLine   int    `json:"endLine"`
	Text      string `json:"text"`
	More      bool   `json:"more,omitempty"` // lines follow
}

func (t *getTool) Run(ctx context.Context, env tool.Env, raw json.RawMessage) engine.ToolResult {
	var a getArgs
	if err := tool.DecodeArgs(raw, &a); err != nil {
		return engine.ErrorResult("memory_get: %v", err)
	}
	if t.cfg.Index != nil && t.cfg.Index(env.AgentID) == nil {
		return engine.ErrorResult("memory_get: memory search is off for this agent")
	}
	rel, err := MemoryPath(env, a.Path)
	if err != nil {
		return engine.ErrorResult("memory_get: %v", err)
	}
	from := int(a.From)
	if from == 0 {
		from = int(a.StartLine)
	}
	if from < 0 || a.Lines < 0 {
		return engine.ErrorResult("memory_get: from and lines must be positive")
	}
	from = max(from, 1)
	n := int(a.Lines)
	if n == 0 || n > maxGetLines {
		n = maxGetLines
	}
	b, err := readNoLinks(env.Workspace, rel)
	if err != nil {
		return engine.ErrorResult("memory_get: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n"), "\n")
	if len(b) == 0 {
		lines = nil
	}
	out := GetOutput{Path: rel, StartLine: from}
	if from <= len(lines) {
		end := min(from-1+n, len(lines))
		out.Text = strings.Join(lines[from-1:end], "\n")
		out.EndLine = end
		out.More = end < len(lines)
	} else {
		out.EndLine = from - 1
	}
	js, _ := json.Marshal(out)
	return engine.TextResult(string(js))
}

// MemoryPath checks that p names MEMORY.md (or memory.md) or a Markdown
// file under memory/ of the workspace and returns it clean and relative.
func MemoryPath(env tool.Env, p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", errors.New("path is required")
	}
	rel, err := env.Rel(p)
	if err != nil {
		return "", err
	}
	rel = path.Clean(rel)
	switch {
	case rel == "MEMORY.md" || rel == "memory.md":
	case strings.HasPrefix(rel, "memory/") && strings.EqualFold(path.Ext(rel), ".md") && !strings.Contains(rel, "/."):
		// Hidden files and folders are not indexed: not read either.
	default:
		return "", fmt.Errorf("%q is not a memory file: only MEMORY.md and memory/**/*.md can be read with memory_get (use read for other files)", p)
	}
	return rel, nil
}

// readNoLinks reads rel inside the workspace through os.Root (no escape
// by ".." or a link) and refuses a symbolic link at any level.
func readNoLinks(workspace, rel string) ([]byte, error) {
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	defer root.Close()
	parts := strings.Split(rel, "/")
	for i := range parts {
		fi, err := root.Lstat(strings.Join(parts[:i+1], "/"))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("%s does not exist", rel)
			}
			return nil, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%s is a symbolic link: memory files must be plain files", strings.Join(parts[:i+1], "/"))
		}
		if i == len(parts)-1 && !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is not a file", rel)
		}
	}
	// O_NOFOLLOW: a file swapped for a link after the checks above.
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, errors.Unwrap(err))
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a file", rel)
	}
	return io.ReadAll(io.LimitReader(f, 4<<20))
}

var (
	_ tool.Tool = (*searchTool)(nil)
	_ tool.Tool = (*getTool)(nil)
)
