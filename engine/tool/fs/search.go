package fs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/tool"
)

const (
	defaultGrepLimit = 100
	defaultFindLimit = 1000
	defaultLsLimit   = 500
	maxGrepFileSize  = 16 << 20
	maxGrepLineChars = 500
	maxGrepContext   = 10
	binarySniffBytes = 8 << 10
)

// outputBudget is the characters a listing may use before it stops.
func outputBudget(env tool.Env) int {
	if env.ResultChars > 0 {
		return max(env.ResultChars-noteRoom, 200)
	}
	return tool.DefaultResultChars - noteRoom
}

// skipDir reports directories that searches never enter.
func skipDir(name string) bool { return name == ".git" }

type grepTool struct{}

func (t *grepTool) Spec() engine.ToolSpec {
	return engine.ToolSpec{
		Name: "grep",
		Description: "Search file contents in the workspace with a regular expression (Go RE2 syntax). " +
			"Prints matching lines as path:line: text. Skips .git and binary files.",
		Parameters: tool.MustSchema(`{"type":"object","properties":{` +
			`"pattern":{"type":"string","description":"Regular expression, or plain text with literal=true"},` +
			`"path":{"type":"string","description":"File or directory to search (default: the workspace)"},` +
			`"glob":{"type":"string","description":"Only files matching this glob, e.g. *.go or src/**/*.ts"},` +
			`"ignoreCase":{"type":"boolean"},` +
			`"literal":{"type":"boolean","description":"Treat pattern as plain text"},` +
			`"context":{"type":"integer","description":"Lines of context around each match (default 0)"},` +
			`"limit":{"type":"integer","description":"Most matches to show (default 100)"}},` +
			`"required":["pattern"]}`),
	}
}

type grepArgs struct {
	Pattern    string    `json:"pattern"`
	Path       string    `json:"path"`
	Glob       string    `json:"glob"`
	IgnoreCase tool.Bool `json:"ignoreCase"`
	Literal    tool.Bool `json:"literal"`
	Context    tool.Int  `json:"context"`
	Limit      tool.Int  `json:"limit"`
}

func (t *grepTool) Run(ctx context.Context, env tool.Env, raw json.RawMessage) engine.ToolResult {
	var a grepArgs
	if err := tool.DecodeArgs(raw, &a); err != nil {
		return engine.ErrorResult("grep: %v", err)
	}
	if a.Pattern == "" {
		return engine.ErrorResult("grep: pattern is required")
	}
	expr := a.Pattern
	if a.Literal {
		expr = regexp.QuoteMeta(expr)
	}
	if a.IgnoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return engine.ErrorResult("grep: bad regular expression %q: %v (set literal=true to search for plain text)", a.Pattern, err)
	}
	var glob *globMatcher
	if a.Glob != "" {
		if glob, err = compileGlob(a.Glob); err != nil {
			return engine.ErrorResult("grep: %v", err)
		}
	}
	limit := int(a.Limit)
	if limit <= 0 {
		limit = defaultGrepLimit
	}
	nctx := min(max(int(a.Context), 0), maxGrepContext)

	w, err := openWorkspace(env)
	if err != nil {
		return engine.ErrorResult("grep: %v", err)
	}
	defer w.Close()
	start, err := w.rel(a.Path)
	if err != nil {
		return w.fail("grep", a.Path, err)
	}
	if _, err := w.root.Stat(start); err != nil {
		return w.fail("grep", a.Path, err)
	}

	g := &grepper{w: w, re: re, ctx: nctx, limit: limit, budget: outputBudget(env)}
	fsys := w.root.FS()
	err = iofs.WalkDir(fsys, start, func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			if p == start {
				return err
			}
			return nil // unreadable entries are skipped
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if d.IsDir() {
			if p != start && skipDir(d.Name()) {
				return iofs.SkipDir
			}
			return nil
		}
		if glob != nil && !glob.match(relTo(start, p)) {
			return nil
		}
		if !d.Type().IsRegular() && d.Type()&iofs.ModeSymlink == 0 {
			return nil
		}
		return g.file(p)
	})
	if err != nil && !errors.Is(err, errStop) {
		if ctx.Err() != nil {
			return engine.ErrorResult("grep: %v", ctx.Err())
		}
		return w.fail("grep", a.Path, err)
	}
	return g.result()
}

var errStop = errors.New("stop")

// grepper accumulates grep output across files.
type grepper struct {
	w       *workspace
	re      *regexp.Regexp
	ctx     int
	limit   int
	budget  int
	out     strings.Builder
	matches int
	files   int
	skipped int // large files
	full    string
}

func (g *grepper) file(p string) error {
	// Stat first (opening a FIFO would block); an escaping symlink or a
	// vanished file is skipped.
	fi, err := g.w.root.Stat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	f, err := g.w.root.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi.Size() > maxGrepFileSize {
		g.skipped++
		return nil
	}
	br := bufio.NewReaderSize(f, 64<<10)
	if head, _ := br.Peek(binarySniffBytes); bytes.IndexByte(head, 0) >= 0 {
		return nil
	}
	var before []string // ring of context lines before a match
	after := 0          // context lines still to print after a match
	lastPrinted := 0
	matched := false
	for line := 1; ; line++ {
		text, err := br.ReadString('\n')
		if text == "" && err != nil {
			break
		}
		text = strings.TrimRight(text, "\r\n")
		if g.re.MatchString(text) {
			if !matched {
				g.files++
				matched = true
			}
			if g.ctx > 0 && lastPrinted > 0 && line-len(before) > lastPrinted+1 {
				g.emit("--")
			}
			for i, b := range before {
				g.emit(fmt.Sprintf("%s-%d- %s", p, line-len(before)+i, clip(b)))
			}
			before = before[:0]
			if !g.emit(fmt.Sprintf("%s:%d: %s", p, line, clip(text))) {
				return errStop
			}
			lastPrinted = line
			g.matches++
			if g.matches >= g.limit {
				g.full = fmt.Sprintf("[... stopped at %d matches; narrow the pattern, path or glob, or raise limit]", g.limit)
				return errStop
			}
			after = g.ctx
		} else if after > 0 {
			g.emit(fmt.Sprintf("%s-%d- %s", p, line, clip(text)))
			lastPrinted = line
			after--
		} else if g.ctx > 0 {
			before = append(before, text)
			if len(before) > g.ctx {
				before = before[1:]
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil
		}
	}
	return nil
}

// emit adds a line to the output unless that would pass the budget.
func (g *grepper) emit(s string) bool {
	if g.full != "" {
		return false
	}
	if g.out.Len()+len(s)+1 > g.budget {
		g.full = "[... output limit reached; narrow the pattern, path or glob]"
		return false
	}
	g.out.WriteString(s)
	g.out.WriteByte('\n')
	return true
}

func (g *grepper) result() engine.ToolResult {
	details, _ := json.Marshal(map[string]any{"matches": g.matches, "files": g.files, "truncated": g.full != ""})
	if g.matches == 0 {
		msg := "No matches found"
		if g.skipped > 0 {
			msg += fmt.Sprintf(" (%d files over 16 MiB were skipped)", g.skipped)
		}
		return engine.ToolResult{Content: []engine.Block{engine.TextBlock(msg)}, Details: details}
	}
	text := g.out.String()
	if g.full != "" {
		text += g.full + "\n"
	}
	if g.skipped > 0 {
		text += fmt.Sprintf("(%d files over 16 MiB were skipped)\n", g.skipped)
	}
	return engine.ToolResult{Content: []engine.Block{engine.TextBlock(strings.TrimSuffix(text, "\n"))}, Details: details}
}

// clip shortens a long line for grep output.
func clip(s string) string {
	if utf8.RuneCountInString(s) <= maxGrepLineChars {
		return s
	}
	return s[:runePrefix(s, maxGrepLineChars)] + " [… line clipped]"
}

// relTo returns p relative to the directory start (both root-relative).
func relTo(start, p string) string {
	if start == "." {
		return p
	}
	if p == start {
		return path.Base(p)
	}
	return strings.TrimPrefix(p, start+"/")
}

type findTool struct{}

func (t *findTool) Spec() engine.ToolSpec {
	return engine.ToolSpec{
		Name: "find",
		Description: "Find files and directories in the workspace by glob. A pattern without / matches names at any depth " +
			"(*.go); with / it matches paths under the search directory (src/**/*.ts). Directories end with /.",
		Parameters: tool.MustSchema(`{"type":"object","properties":{` +
			`"pattern":{"type":"string","description":"Glob pattern; ** matches any number of directories"},` +
			`"path":{"type":"string","description":"Directory to search (default: the workspace)"},` +
			`"limit":{"type":"integer","description":"Most results (default 1000)"}},` +
			`"required":["pattern"]}`),
	}
}

type findArgs struct {
	Pattern string   `json:"pattern"`
	Path    string   `json:"path"`
	Limit   tool.Int `json:"limit"`
}

func (t *findTool) Run(ctx context.Context, env tool.Env, raw json.RawMessage) engine.ToolResult {
	var a findArgs
	if err := tool.DecodeArgs(raw, &a); err != nil {
		return engine.ErrorResult("find: %v", err)
	}
	if a.Pattern == "" {
		return engine.ErrorResult("find: pattern is required")
	}
	glob, err := compileGlob(a.Pattern)
	if err != nil {
		return engine.ErrorResult("find: %v", err)
	}
	limit := int(a.Limit)
	if limit <= 0 {
		limit = defaultFindLimit
	}
	w, err := openWorkspace(env)
	if err != nil {
		return engine.ErrorResult("find: %v", err)
	}
	defer w.Close()
	start, err := w.rel(a.Path)
	if err != nil {
		return w.fail("find", a.Path, err)
	}
	if fi, err := w.root.Stat(start); err != nil {
		return w.fail("find", a.Path, err)
	} else if !fi.IsDir() {
		return engine.ErrorResult("find: %q is not a directory", a.Path)
	}
	var found []string
	more, budget, used := false, outputBudget(env), 0
	err = iofs.WalkDir(w.root.FS(), start, func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			if p == start {
				return err
			}
			return nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if p == start {
			return nil
		}
		if d.IsDir() && skipDir(d.Name()) {
			return iofs.SkipDir
		}
		if !glob.match(relTo(start, p)) {
			return nil
		}
		entry := p
		if d.IsDir() {
			entry += "/"
		}
		if len(found) >= limit || used+len(entry)+1 > budget {
			more = true
			return errStop
		}
		found = append(found, entry)
		used += len(entry) + 1
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		if ctx.Err() != nil {
			return engine.ErrorResult("find: %v", ctx.Err())
		}
		return w.fail("find", a.Path, err)
	}
	details, _ := json.Marshal(map[string]any{"count": len(found), "truncated": more})
	if len(found) == 0 {
		return engine.ToolResult{Content: []engine.Block{engine.TextBlock("No files found matching " + a.Pattern)}, Details: details}
	}
	text := strings.Join(found, "\n")
	if more {
		text += fmt.Sprintf("\n[... more results; showing the first %d: narrow the pattern or path]", len(found))
	}
	return engine.ToolResult{Content: []engine.Block{engine.TextBlock(text)}, Details: details}
}

type lsTool struct{}

func (t *lsTool) Spec() engine.ToolSpec {
	return engine.ToolSpec{
		Name:        "ls",
		Description: "List a directory in the workspace, sorted by name. Directories end with /.",
		Parameters: tool.MustSchema(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"Directory to list (default: the workspace)"},` +
			`"limit":{"type":"integer","description":"Most entries (default 500)"}}}`),
	}
}

type lsArgs struct {
	Path  string   `json:"path"`
	Limit tool.Int `json:"limit"`
}

func (t *lsTool) Run(ctx context.Context, env tool.Env, raw json.RawMessage) engine.ToolResult {
	var a lsArgs
	if err := tool.DecodeArgs(raw, &a); err != nil {
		return engine.ErrorResult("ls: %v", err)
	}
	limit := int(a.Limit)
	if limit <= 0 {
		limit = defaultLsLimit
	}
	w, err := openWorkspace(env)
	if err != nil {
		return engine.ErrorResult("ls: %v", err)
	}
	defer w.Close()
	rel, err := w.rel(a.Path)
	if err != nil {
		return w.fail("ls", a.Path, err)
	}
	f, err := w.root.Open(rel)
	if err != nil {
		return w.fail("ls", a.Path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return w.fail("ls", a.Path, err)
	} else if !fi.IsDir() {
		return engine.ErrorResult("ls: %q is a file, not a directory; use read", a.Path)
	}
	entries, err := f.ReadDir(-1)
	if err != nil {
		return w.fail("ls", a.Path, err)
	}
	slices.SortFunc(entries, func(x, y iofs.DirEntry) int { return strings.Compare(x.Name(), y.Name()) })
	var names []string
	for _, e := range entries {
		if len(names) == limit {
			break
		}
		name := e.Name()
		isDir := e.IsDir()
		if e.Type()&iofs.ModeSymlink != 0 {
			// Show a link to a directory as one, if it stays inside.
			if fi, err := w.root.Stat(path.Join(rel, name)); err == nil && fi.IsDir() {
				isDir = true
			}
		}
		if isDir {
			name += "/"
		}
		names = append(names, name)
	}
	details, _ := json.Marshal(map[string]any{"path": rel, "entries": len(entries)})
	if len(entries) == 0 {
		return engine.ToolResult{Content: []engine.Block{engine.TextBlock("(empty directory)")}, Details: details}
	}
	text := strings.Join(names, "\n")
	if n := len(entries) - len(names); n > 0 {
		text += fmt.Sprintf("\n[... %d more entries; raise limit or list a subdirectory]", n)
	}
	return engine.ToolResult{Content: []engine.Block{engine.TextBlock(text)}, Details: details}
}

// globMatcher matches slash-separated paths against a glob with "**" and
// {a,b} alternatives. A glob without "/" matches the base name.
type globMatcher struct {
	alts     [][]string // each alternative, split into segments
	baseOnly bool
}

// maxGlobAlternatives bounds brace expansion.
const maxGlobAlternatives = 64

func compileGlob(pattern string) (*globMatcher, error) {
	p := strings.TrimPrefix(strings.TrimSpace(pattern), "./")
	alts, err := expandBraces(p)
	if err != nil {
		return nil, fmt.Errorf("bad glob %q: %v", pattern, err)
	}
	g := &globMatcher{baseOnly: !strings.Contains(p, "/")}
	for _, a := range alts {
		var segs []string
		for _, s := range strings.Split(a, "/") {
			// "**/**" is "**"; collapsing keeps matching polynomial.
			if s == "**" && len(segs) > 0 && segs[len(segs)-1] == "**" {
				continue
			}
			segs = append(segs, s)
		}
		for _, s := range segs {
			if s == "**" {
				continue
			}
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("bad glob %q: %v", pattern, err)
			}
		}
		g.alts = append(g.alts, segs)
	}
	return g, nil
}

func (g *globMatcher) match(rel string) bool {
	if g.baseOnly {
		rel = path.Base(rel)
	}
	segs := strings.Split(rel, "/")
	for _, a := range g.alts {
		if matchSegs(a, segs) {
			return true
		}
	}
	return false
}

func matchSegs(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			for i := 0; i <= len(segs); i++ {
				if matchSegs(rest, segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}

// expandBraces expands {a,b} alternatives (nesting allowed).
func expandBraces(p string) ([]string, error) {
	open := strings.IndexByte(p, '{')
	if open < 0 {
		if strings.IndexByte(p, '}') >= 0 {
			return nil, errors.New("unmatched }")
		}
		return []string{p}, nil
	}
	depth, end := 0, -1
	var commas []int
	for i := open; i < len(p) && end < 0; i++ {
		switch p[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				end = i
			}
		case ',':
			if depth == 1 {
				commas = append(commas, i)
			}
		}
	}
	if end < 0 {
		return nil, errors.New("unmatched {")
	}
	var parts []string
	prev := open + 1
	for _, c := range commas {
		parts = append(parts, p[prev:c])
		prev = c + 1
	}
	parts = append(parts, p[prev:end])
	var out []string
	for _, part := range parts {
		subs, err := expandBraces(p[:open] + part + p[end+1:])
		if err != nil {
			return nil, err
		}
		out = append(out, subs...)
		if len(out) > maxGlobAlternatives {
			return nil, fmt.Errorf("more than %d alternatives", maxGlobAlternatives)
		}
	}
	return out, nil
}
