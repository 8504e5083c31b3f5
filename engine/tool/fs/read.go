package fs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/tool"
)

const defaultReadLimit = 2000

// noteRoom is kept free in a page for the continuation note.
const noteRoom = 120

type readTool struct{ cfg Config }

func (t *readTool) Spec() engine.ToolSpec {
	return engine.ToolSpec{
		Name: "read",
		Description: "Read a file in the workspace. Text comes back as-is, " + fmt.Sprint(defaultReadLimit) +
			" lines at a time by default; page with offset (1-based line) and limit. Images (png, jpeg, gif, webp) come back as images.",
		Parameters: tool.MustSchema(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"File path, relative to the workspace"},` +
			`"offset":{"type":"integer","description":"First line to read, 1-based (default 1)"},` +
			`"limit":{"type":"integer","description":"Most lines to read (default 2000)"}},` +
			`"required":["path"]}`),
	}
}

type readArgs struct {
	Path     string   `json:"path"`
	FilePath string   `json:"file_path"`
	Offset   tool.Int `json:"offset"`
	Limit    tool.Int `json:"limit"`
}

func (t *readTool) Run(ctx context.Context, env tool.Env, raw json.RawMessage) engine.ToolResult {
	var a readArgs
	if err := tool.DecodeArgs(raw, &a); err != nil {
		return engine.ErrorResult("read: %v", err)
	}
	p := pathArg(a.Path, a.FilePath)
	if p == "" {
		return engine.ErrorResult("read: path is required")
	}
	if a.Offset < 0 || a.Limit < 0 {
		return engine.ErrorResult("read: offset and limit must be positive")
	}
	offset, limit := int(a.Offset), int(a.Limit)
	if offset == 0 {
		offset = 1
	}
	if limit == 0 {
		limit = defaultReadLimit
	}
	w, err := openWorkspace(env)
	if err != nil {
		return engine.ErrorResult("read: %v", err)
	}
	defer w.Close()
	rel, err := w.rel(p)
	if err != nil {
		return w.fail("read", p, err)
	}
	// Stat before opening: opening a FIFO would block.
	fi, err := w.root.Stat(rel)
	switch {
	case err != nil:
		return w.fail("read", p, err)
	case fi.IsDir():
		return engine.ErrorResult("read: %q is a directory; use ls", p)
	case !fi.Mode().IsRegular():
		return engine.ErrorResult("read: %q is not a regular file", p)
	}
	f, err := w.root.Open(rel)
	if err != nil {
		return w.fail("read", p, err)
	}
	defer f.Close()

	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(8 << 10)
	if mime := imageType(head); mime != "" {
		return t.image(br, p, fi.Size(), mime)
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return engine.ErrorResult("read: %q is a binary file (%d bytes); read handles text and images only", p, fi.Size())
	}

	budget := t.cfg.MaxReadBytes
	if env.ResultChars > 0 && env.ResultChars < budget {
		budget = env.ResultChars
	}
	budget = max(budget-noteRoom, 1)
	return readPage(ctx, br, p, offset, limit, budget)
}

// readPage returns lines [offset, offset+limit) of r, within budget
// characters, with a note saying where to continue.
func readPage(ctx context.Context, r *bufio.Reader, p string, offset, limit, budget int) engine.ToolResult {
	var out strings.Builder
	line, used, first, last := 0, 0, 0, 0
	more, cutLine := false, false
	for {
		if line%4096 == 0 && ctx.Err() != nil {
			return engine.ErrorResult("read: %v", ctx.Err())
		}
		keep := 0
		if line+1 >= offset {
			keep = budget*utf8.UTFMax + utf8.UTFMax
		}
		text, complete, size, err := readLine(r, keep)
		if size == 0 && err != nil {
			if !errors.Is(err, io.EOF) {
				return engine.ErrorResult("read: %q: %v", p, trimPathError(err))
			}
			break
		}
		line++
		if line < offset {
			continue
		}
		if line >= offset+limit {
			more = true
			break
		}
		n := utf8.RuneCountInString(text)
		if !complete || used+n > budget {
			if first == 0 {
				// A single line longer than the whole budget: show its start.
				text = text[:runePrefix(text, budget)]
				out.WriteString(text)
				first, last, cutLine = line, line, true
			}
			more = true
			break
		}
		if first == 0 {
			first = line
		}
		out.WriteString(text)
		used += n
		last = line
	}
	if first == 0 {
		if line == 0 {
			return engine.TextResult("(empty file)")
		}
		return engine.ErrorResult("read: offset %d is beyond the end of %q (%d lines)", offset, p, line)
	}
	details, _ := json.Marshal(map[string]any{"path": p, "firstLine": first, "lastLine": last})
	switch {
	case cutLine:
		fmt.Fprintf(&out, "\n\n[... line %d is longer than this page and was cut; use exec with cut or grep to see the rest; use offset=%d for the next line]", last, last+1)
	case more:
		if !strings.HasSuffix(out.String(), "\n") {
			out.WriteByte('\n')
		}
		fmt.Fprintf(&out, "\n[... more lines; use offset=%d]", last+1)
	}
	return engine.ToolResult{Content: []engine.Block{engine.TextBlock(out.String())}, Details: details}
}

// readLine reads one line including its '\n', keeping at most keep bytes
// of it so that a huge line never sits in memory whole. complete reports
// whether the whole line was kept; size is the line's length in bytes.
func readLine(r *bufio.Reader, keep int) (text string, complete bool, size int, err error) {
	var b []byte
	complete = true
	for {
		chunk, err := r.ReadSlice('\n')
		size += len(chunk)
		if room := keep - len(b); room > 0 {
			b = append(b, chunk[:min(room, len(chunk))]...)
		}
		if len(b) < size {
			complete = false
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return string(b), complete, size, err
	}
}

// runePrefix returns the byte length of the first n runes of s.
func runePrefix(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

func (t *readTool) image(r io.Reader, p string, size int64, mime string) engine.ToolResult {
	if size > int64(t.cfg.MaxReadBytes) {
		return engine.ErrorResult("read: image %q is %d bytes; the limit is %d", p, size, t.cfg.MaxReadBytes)
	}
	data, err := io.ReadAll(io.LimitReader(r, int64(t.cfg.MaxReadBytes)+1))
	if err != nil {
		return engine.ErrorResult("read: %q: %v", p, trimPathError(err))
	}
	if len(data) > t.cfg.MaxReadBytes {
		return engine.ErrorResult("read: image %q is over the %d-byte limit", p, t.cfg.MaxReadBytes)
	}
	details, _ := json.Marshal(map[string]any{"path": p, "mimeType": mime, "bytes": len(data)})
	return engine.ToolResult{
		Content: []engine.Block{
			engine.TextBlock(fmt.Sprintf("Read image file %s [%s, %d bytes]", p, mime, len(data))),
			{Type: engine.BlockImage, Data: base64.StdEncoding.EncodeToString(data), MimeType: mime},
		},
		Details: details,
	}
}

// imageType returns the MIME type of a png, jpeg, gif or webp image from its
// first bytes, or "".
func imageType(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(b, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "image/gif"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}
