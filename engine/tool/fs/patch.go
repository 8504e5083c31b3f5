package fs

import (
	"fmt"
	"strings"
)

// The apply_patch format (OpenAI Codex):
//
//	*** Begin Patch
//	*** Add File: path
//	+line
//	*** Update File: path
//	*** Move to: new/path        (optional)
//	@@ optional context line
//	 context
//	-removed
//	+added
//	*** End of File              (optional: the hunk ends the file)
//	*** Delete File: path
//	*** End Patch

const (
	beginPatch   = "*** Begin Patch"
	endPatch     = "*** End Patch"
	addFile      = "*** Add File:"
	deleteFile   = "*** Delete File:"
	updateFile   = "*** Update File:"
	moveTo       = "*** Move to:"
	endOfFile    = "*** End of File"
	hunkMarker   = "@@"
	hunkMarkerSp = "@@ "
)

// opKind is what a patch does to one file.
type opKind int

const (
	opAdd opKind = iota + 1
	opDelete
	opUpdate
)

// fileOp is one file operation of a patch.
type fileOp struct {
	kind   opKind
	path   string
	moveTo string   // update only; "" when not moved
	lines  []string // add only: the new file's lines
	chunks []chunk  // update only
}

// chunk is one @@ hunk of an update.
type chunk struct {
	context   string // the text after "@@ ", to seek to first; "" for none
	oldLines  []string
	newLines  []string
	endOfFile bool
}

// patchError is a parse error at a line of the patch (1-based).
type patchError struct {
	line int
	msg  string
}

func (e *patchError) Error() string { return fmt.Sprintf("invalid patch: line %d: %s", e.line, e.msg) }

// parsePatch parses the text of an apply_patch call. It accepts CRLF line
// endings, whitespace around the markers, and a shell heredoc wrapper
// ("apply_patch <<'EOF' … EOF"), which models sometimes copy from Codex's
// instructions; it insists on Begin and End markers so that a patch cut off
// mid-way is refused rather than half-applied.
func parsePatch(text string) ([]fileOp, error) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	lines = stripHeredoc(lines)
	// Trim blank lines around the patch.
	start, end := 0, len(lines)
	for start < end && strings.TrimSpace(lines[start]) == "" {
		start++
	}
	for end > start && strings.TrimSpace(lines[end-1]) == "" {
		end--
	}
	if start == end || strings.TrimSpace(lines[start]) != beginPatch {
		return nil, &patchError{start + 1, fmt.Sprintf("the first line of the patch must be %q", beginPatch)}
	}
	if end-start < 2 || strings.TrimSpace(lines[end-1]) != endPatch {
		return nil, &patchError{end, fmt.Sprintf("the last line of the patch must be %q (was the patch cut off?)", endPatch)}
	}
	p := &patchParser{lines: lines[:end-1], i: start + 1}
	var ops []fileOp
	for p.i < len(p.lines) {
		if strings.TrimSpace(p.lines[p.i]) == "" {
			p.i++ // blank lines between file operations
			continue
		}
		op, err := p.fileOp()
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	if len(ops) == 0 {
		return nil, &patchError{start + 1, "the patch has no file operations"}
	}
	return ops, nil
}

// stripHeredoc removes a `<<'EOF'` … `EOF` wrapper around the patch.
func stripHeredoc(lines []string) []string {
	first, last := -1, -1
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 || first == last {
		return lines
	}
	head := strings.TrimSpace(lines[first])
	i := strings.Index(head, "<<")
	if i < 0 || strings.HasPrefix(head, "***") {
		return lines
	}
	tag := strings.Trim(strings.TrimSpace(head[i+2:]), `'"`)
	if tag == "" || strings.TrimSpace(lines[last]) != tag {
		return lines
	}
	return lines[first+1 : last]
}

type patchParser struct {
	lines []string
	i     int // next line, 0-based
}

func (p *patchParser) errf(format string, args ...any) error {
	return &patchError{p.i + 1, fmt.Sprintf(format, args...)}
}

func (p *patchParser) fileOp() (fileOp, error) {
	line := strings.TrimSpace(p.lines[p.i])
	switch {
	case strings.HasPrefix(line, addFile):
		path, err := p.path(line, addFile)
		if err != nil {
			return fileOp{}, err
		}
		p.i++
		op := fileOp{kind: opAdd, path: path, lines: []string{}}
		for p.i < len(p.lines) && strings.HasPrefix(p.lines[p.i], "+") {
			op.lines = append(op.lines, p.lines[p.i][1:])
			p.i++
		}
		return op, nil
	case strings.HasPrefix(line, deleteFile):
		path, err := p.path(line, deleteFile)
		if err != nil {
			return fileOp{}, err
		}
		p.i++
		return fileOp{kind: opDelete, path: path}, nil
	case strings.HasPrefix(line, updateFile):
		path, err := p.path(line, updateFile)
		if err != nil {
			return fileOp{}, err
		}
		p.i++
		op := fileOp{kind: opUpdate, path: path}
		if p.i < len(p.lines) && strings.HasPrefix(strings.TrimSpace(p.lines[p.i]), moveTo) {
			if op.moveTo, err = p.path(strings.TrimSpace(p.lines[p.i]), moveTo); err != nil {
				return fileOp{}, err
			}
			p.i++
		}
		for p.i < len(p.lines) {
			l := p.lines[p.i]
			if strings.TrimSpace(l) == "" {
				p.i++ // blank lines between hunks
				continue
			}
			if strings.HasPrefix(l, "***") {
				break
			}
			c, err := p.chunk(len(op.chunks) == 0)
			if err != nil {
				return fileOp{}, err
			}
			op.chunks = append(op.chunks, c)
		}
		if len(op.chunks) == 0 {
			return fileOp{}, p.errf("update of %q has no hunks", path)
		}
		return op, nil
	}
	return fileOp{}, p.errf("%q is not a valid file operation; want %q, %q or %q followed by a path",
		line, addFile, updateFile, deleteFile)
}

func (p *patchParser) path(line, prefix string) (string, error) {
	path := strings.TrimSpace(strings.TrimPrefix(line, prefix))
	if path == "" {
		return "", p.errf("%q needs a path", prefix)
	}
	return path, nil
}

// chunk parses one hunk. The first hunk of an update may omit its @@ line.
func (p *patchParser) chunk(first bool) (chunk, error) {
	var c chunk
	l := p.lines[p.i]
	switch {
	case strings.TrimSpace(l) == hunkMarker:
		p.i++
	case strings.HasPrefix(l, hunkMarkerSp):
		c.context = strings.TrimPrefix(l, hunkMarkerSp)
		// "@@ -1,3 +1,4 @@" (unified diff numbers) carries no context line.
		if strings.HasPrefix(c.context, "-") && strings.HasSuffix(strings.TrimSpace(c.context), "@@") {
			c.context = ""
		}
		p.i++
	case !first:
		return c, p.errf("expected a hunk starting with @@, got %q", l)
	}
	n := 0
	for p.i < len(p.lines) {
		l := p.lines[p.i]
		if strings.TrimSpace(l) == endOfFile {
			c.endOfFile = true
			p.i++
			break
		}
		if l == "" {
			// An empty line is an empty context line (editors strip the
			// leading space).
			c.oldLines = append(c.oldLines, "")
			c.newLines = append(c.newLines, "")
		} else {
			switch l[0] {
			case ' ':
				c.oldLines = append(c.oldLines, l[1:])
				c.newLines = append(c.newLines, l[1:])
			case '-':
				c.oldLines = append(c.oldLines, l[1:])
			case '+':
				c.newLines = append(c.newLines, l[1:])
			default:
				if n == 0 {
					return c, p.errf("unexpected line in hunk: %q (hunk lines start with ' ', '-' or '+')", l)
				}
				// The next hunk or file operation.
				return c.trimmed(), nil
			}
		}
		n++
		p.i++
	}
	if n == 0 {
		return c, p.errf("empty hunk")
	}
	return c.trimmed(), nil
}

// trimmed drops trailing empty context lines that are really the blank
// lines between hunks.
func (c chunk) trimmed() chunk {
	for len(c.oldLines) > 0 && len(c.newLines) > 0 &&
		c.oldLines[len(c.oldLines)-1] == "" && c.newLines[len(c.newLines)-1] == "" &&
		!(len(c.oldLines) == 1 && len(c.newLines) == 1) {
		c.oldLines = c.oldLines[:len(c.oldLines)-1]
		c.newLines = c.newLines[:len(c.newLines)-1]
	}
	return c
}

// formatPatch renders ops back into patch text (for tests and fuzzing).
func formatPatch(ops []fileOp) string {
	var b strings.Builder
	b.WriteString(beginPatch + "\n")
	for _, op := range ops {
		switch op.kind {
		case opAdd:
			b.WriteString(addFile + " " + op.path + "\n")
			for _, l := range op.lines {
				b.WriteString("+" + l + "\n")
			}
		case opDelete:
			b.WriteString(deleteFile + " " + op.path + "\n")
		case opUpdate:
			b.WriteString(updateFile + " " + op.path + "\n")
			if op.moveTo != "" {
				b.WriteString(moveTo + " " + op.moveTo + "\n")
			}
			for _, c := range op.chunks {
				if c.context != "" {
					b.WriteString(hunkMarkerSp + c.context + "\n")
				} else {
					b.WriteString(hunkMarker + "\n")
				}
				// Rendered as removed-then-added: equivalent for applying.
				for _, l := range c.oldLines {
					b.WriteString("-" + l + "\n")
				}
				for _, l := range c.newLines {
					b.WriteString("+" + l + "\n")
				}
				if c.endOfFile {
					b.WriteString(endOfFile + "\n")
				}
			}
		}
	}
	b.WriteString(endPatch + "\n")
	return b.String()
}

// applyChunks applies an update's hunks to a file's content (LF line
// endings) and returns the new content, which always ends with a newline.
func applyChunks(content string, chunks []chunk, path string) (string, error) {
	lines := strings.Split(content, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	type replacement struct {
		at, n    int
		newLines []string
	}
	var reps []replacement
	at := 0
	for ci, c := range chunks {
		if c.context != "" {
			i := seekSequence(lines, []string{c.context}, at, false)
			if i < 0 {
				return "", fmt.Errorf("hunk %d: context line %q was not found in %s", ci+1, c.context, path)
			}
			at = i + 1
		}
		if len(c.oldLines) == 0 {
			// Pure addition: after the context line when there was one,
			// else at the end of the file.
			pos := len(lines)
			if c.context != "" {
				pos = at
			}
			reps = append(reps, replacement{pos, 0, c.newLines})
			continue
		}
		old, nw := c.oldLines, c.newLines
		i := seekSequence(lines, old, at, c.endOfFile)
		if i < 0 && len(old) > 0 && old[len(old)-1] == "" {
			// The trailing empty line may be the file's final newline.
			old = old[:len(old)-1]
			if len(nw) > 0 && nw[len(nw)-1] == "" {
				nw = nw[:len(nw)-1]
			}
			if len(old) > 0 {
				i = seekSequence(lines, old, at, c.endOfFile)
			}
		}
		if i < 0 {
			return "", fmt.Errorf("hunk %d: these lines were not found in %s (at or after line %d):\n%s",
				ci+1, path, at+1, strings.Join(c.oldLines, "\n"))
		}
		reps = append(reps, replacement{i, len(old), nw})
		at = i + len(old)
	}
	// Hunks must not overlap; applying from the end keeps indexes valid.
	for k := 1; k < len(reps); k++ {
		if reps[k].at < reps[k-1].at+reps[k-1].n {
			return "", fmt.Errorf("hunks %d and %d of %s overlap", k, k+1, path)
		}
	}
	for k := len(reps) - 1; k >= 0; k-- {
		r := reps[k]
		tail := append([]string{}, lines[r.at+r.n:]...)
		lines = append(append(lines[:r.at], r.newLines...), tail...)
	}
	if len(lines) == 0 {
		return "", nil
	}
	return strings.Join(lines, "\n") + "\n", nil
}

// seekSequence finds pattern in lines at or after start, trying exact
// matches first and then ever looser ones (Codex's order). With eof it tries
// the end of the file first. It returns -1 when there is no match.
func seekSequence(lines, pattern []string, start int, eof bool) int {
	if len(pattern) == 0 {
		return start
	}
	if len(pattern) > len(lines) {
		return -1
	}
	last := len(lines) - len(pattern)
	for _, eq := range []func(a, b string) bool{
		func(a, b string) bool { return a == b },
		func(a, b string) bool { return strings.TrimRight(a, " \t\r") == strings.TrimRight(b, " \t\r") },
		func(a, b string) bool { return strings.TrimSpace(a) == strings.TrimSpace(b) },
		func(a, b string) bool { return normalizePunct(a) == normalizePunct(b) },
	} {
		if eof && matchAt(lines, pattern, last, eq) {
			return last
		}
		for i := max(start, 0); i <= last; i++ {
			if matchAt(lines, pattern, i, eq) {
				return i
			}
		}
	}
	return -1
}

func matchAt(lines, pattern []string, at int, eq func(a, b string) bool) bool {
	for j, p := range pattern {
		if !eq(lines[at+j], p) {
			return false
		}
	}
	return true
}

// punct maps typographic punctuation to ASCII, as models often type it.
var punct = strings.NewReplacer(
	"\u2010", "-", "\u2011", "-", "\u2012", "-", "\u2013", "-", "\u2014", "-", "\u2015", "-", "\u2212", "-",
	"\u2018", "'", "\u2019", "'", "\u201A", "'", "\u201B", "'",
	"\u201C", `"`, "\u201D", `"`, "\u201E", `"`, "\u201F", `"`,
	"\u00A0", " ", "\u2002", " ", "\u2003", " ", "\u2009", " ", "\u202F", " ", "\u3000", " ",
)

func normalizePunct(s string) string { return strings.TrimSpace(punct.Replace(s)) }
