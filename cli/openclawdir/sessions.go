package openclawdir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/openclaw-edge/edge/engine/transcriptfmt"
)

// SessionOptions says which sessions Sessions lists.
type SessionOptions struct {
	// Deleted also lists deleted-session archives
	// (<id>.jsonl.deleted.<stamp>[.zst]).
	Deleted bool
}

// Session is one transcript found in the state dir.
type Session struct {
	Key      string // OpenClaw's session key ("agent:main:main", …); "" when unknown
	ID       string // the transcript's session id (its header's id)
	Source   string // "sqlite", "jsonl" or "zst": where it is read from
	Archived bool   // an archived (reset or rotated) session, not its key's current one
	Deleted  bool   // from a deleted-session archive
	Updated  time.Time
	// Open yields the transcript as OpenClaw JSONL: the header line, then
	// one line per entry, each value exactly as stored.
	Open func() (io.ReadCloser, error)
}

// Source values.
const (
	SourceSQLite = "sqlite"
	SourceJSONL  = "jsonl"
	SourceZst    = "zst"
)

// Sessions lists the agent's sessions: those in its SQLite store, then
// legacy JSONL files under agents/<id>/sessions/ whose id the store does
// not hold (OpenClaw imports legacy files into the store and keeps them),
// then archives. Sorted by Updated, oldest first.
func (d *Dir) Sessions(agentID string, opt SessionOptions) ([]Session, error) {
	if err := checkAgentID(agentID); err != nil {
		return nil, err
	}
	var out []Session
	have := map[string]bool{}
	st, err := d.store(agentID)
	if err != nil {
		return nil, err
	}
	if st != nil {
		ss, err := st.sessions()
		if err != nil {
			return nil, err
		}
		for _, s := range ss {
			have[s.ID] = true
		}
		out = append(out, ss...)
	}
	files, err := d.fileSessions(agentID, opt)
	if err != nil {
		return nil, err
	}
	for _, s := range files {
		// A deleted archive keeps its id even when the store has a newer
		// life of it; the live copy wins for everything else.
		if !s.Deleted && have[s.ID] {
			continue
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Updated.Before(out[j].Updated) })
	return out, nil
}

// archiveName matches OpenClaw's session archive names:
// <id>.jsonl.<reason>.<ISO stamp with - for :>[.<32 hex>][.zst].
var archiveName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(.+)\.jsonl\.(reset|deleted|bak)\.(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d{3})?Z)(?:\.[0-9a-f]{32})?(\.zst)?$`)
})

// legacyEntry is the part of a sessions.json entry this reads.
type legacyEntry struct {
	SessionID string `json:"sessionId"`
	UpdatedAt *int64 `json:"updatedAt"`
}

// fileSessions lists agents/<id>/sessions/*.jsonl and its archives.
func (d *Dir) fileSessions(agentID string, opt SessionOptions) ([]Session, error) {
	dir := path.Join("agents", agentID, "sessions")
	if !d.isDir(dir) {
		return nil, nil
	}
	keys := map[string]string{}
	updated := map[string]time.Time{}
	if d.exists(path.Join(dir, "sessions.json")) {
		b, err := d.readFile(path.Join(dir, "sessions.json"), MaxIndexBytes)
		if err != nil {
			return nil, err
		}
		var idx map[string]json.RawMessage
		if err := json.Unmarshal(b, &idx); err != nil {
			return nil, fmt.Errorf("%s: not a JSON object: %w", filepath.Join(d.path, dir, "sessions.json"), err)
		}
		for key, raw := range idx {
			var e legacyEntry
			if json.Unmarshal(raw, &e) != nil || transcriptfmt.ValidSessionID(e.SessionID) != nil {
				continue // not a session entry; the file names the rest
			}
			// Two keys sharing a session: keep the first in sort order, so
			// the result does not depend on map order.
			if k, ok := keys[e.SessionID]; !ok || key < k {
				keys[e.SessionID] = key
			}
			if e.UpdatedAt != nil {
				updated[e.SessionID] = time.UnixMilli(*e.UpdatedAt)
			}
		}
	}
	ents, err := fs.ReadDir(d.root.FS(), dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(d.path, dir), err)
	}
	var out []Session
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || strings.HasPrefix(name, ".") {
			continue // symbolic links included: they may point anywhere
		}
		s := Session{Source: SourceJSONL}
		m := archiveName().FindStringSubmatch(name)
		switch {
		case m != nil:
			switch m[2] {
			case "reset":
				s.Archived = true
			case "deleted":
				if !opt.Deleted {
					continue
				}
				s.Deleted = true
			default:
				continue // .bak: a copy OpenClaw made before a repair
			}
			if m[4] != "" {
				s.Source = SourceZst
			}
		case strings.HasSuffix(name, ".jsonl") && !strings.HasSuffix(name, ".trajectory.jsonl") && !strings.Contains(name, ".checkpoint."):
		default:
			continue
		}
		rel := path.Join(dir, name)
		zst := s.Source == SourceZst
		id := strings.TrimSuffix(name, ".jsonl")
		if m != nil {
			id = m[1]
		}
		h, herr := d.fileHeader(rel, zst)
		switch {
		case herr == nil:
			s.ID = h.ID
		case transcriptfmt.ValidSessionID(id) == nil:
			// Listed under the id its name gives; Open says what is wrong,
			// so one bad file does not hide the others.
			s.ID = id
		default:
			return nil, herr
		}
		// An archive's key is known only while sessions.json still points
		// at its id.
		s.Key = keys[s.ID]
		if t, ok := updated[s.ID]; ok && !s.Archived && !s.Deleted {
			s.Updated = t
		} else if fi, err := e.Info(); err == nil {
			s.Updated = fi.ModTime()
		}
		s.Open = func() (io.ReadCloser, error) {
			if herr != nil {
				return nil, herr
			}
			return d.openFileTranscript(rel, zst)
		}
		out = append(out, s)
	}
	return out, nil
}

// fileHeader reads the first line of a transcript file and checks that it
// is a session header with a valid id.
func (d *Dir) fileHeader(rel string, zst bool) (transcriptfmt.Header, error) {
	name := filepath.Join(d.path, filepath.FromSlash(rel))
	rc, err := d.openFileTranscript(rel, zst)
	if err != nil {
		return transcriptfmt.Header{}, err
	}
	defer rc.Close()
	line, err := readLine(bufio.NewReader(rc), transcriptfmt.MaxLineBytes)
	var le lineError
	if errors.As(err, &le) {
		return transcriptfmt.Header{}, fmt.Errorf("%s: line 1: %w", name, err)
	} else if err != nil {
		return transcriptfmt.Header{}, err // names the file already
	}
	h, err := parseHeader(line)
	if err != nil {
		return transcriptfmt.Header{}, fmt.Errorf("%s: line 1: %w", name, err)
	}
	return h, nil
}

// parseHeader checks a transcript's first line.
func parseHeader(line []byte) (transcriptfmt.Header, error) {
	var h transcriptfmt.Header
	if err := json.Unmarshal(line, &h); err != nil {
		return h, fmt.Errorf("not a session header: %w", err)
	}
	if h.Type != "session" {
		return h, fmt.Errorf("not a session header (type %q)", h.Type)
	}
	if err := transcriptfmt.ValidSessionID(h.ID); err != nil {
		return h, err
	}
	return h, nil
}

// lineError is a line that is not there or too long, not a read failure.
type lineError string

func (e lineError) Error() string { return string(e) }

// readLine reads one line without its newline, failing past limit bytes.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > limit+1 {
			return nil, lineError(fmt.Sprintf("line longer than %d bytes", limit))
		}
		switch {
		case err == nil:
			return bytes.TrimRight(line, "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return line, nil
		case errors.Is(err, io.EOF):
			return nil, lineError("empty file")
		default:
			return nil, err
		}
	}
}

// openFileTranscript opens a transcript file, decompressing .zst, capped
// at MaxSessionBytes of output.
func (d *Dir) openFileTranscript(rel string, zst bool) (io.ReadCloser, error) {
	name := filepath.Join(d.path, filepath.FromSlash(rel))
	f, err := openInRoot(d.root, d.path, rel, MaxSessionBytes)
	if err != nil {
		return nil, rootErr(err, d.path)
	}
	if !zst {
		return f, nil
	}
	dec, err := zstd.NewReader(f,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(uint64(MaxSessionBytes)),
		zstd.WithDecoderMaxWindow(uint64(min(MaxSessionBytes, 1<<30))))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &zstReader{dec: dec, f: f, name: name, left: MaxSessionBytes}, nil
}

// zstReader decompresses a file, failing once the output passes its cap
// (a zstd bomb stops there).
type zstReader struct {
	dec  *zstd.Decoder
	f    io.Closer
	name string
	left int64
	err  error // sticky
}

func (z *zstReader) Read(p []byte) (int, error) {
	if z.err != nil {
		return 0, z.err
	}
	if int64(len(p)) > z.left+1 {
		p = p[:z.left+1]
	}
	n, err := z.dec.Read(p)
	if int64(n) > z.left {
		z.err = fmt.Errorf("%s: decompresses to more than %d bytes", z.name, MaxSessionBytes)
		return int(z.left), z.err
	}
	z.left -= int64(n)
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
		z.err = fmt.Errorf("%s: decompresses to more than %d bytes", z.name, MaxSessionBytes)
		return n, z.err
	}
	if err != nil && !errors.Is(err, io.EOF) {
		z.err = fmt.Errorf("%s: zstd: %w", z.name, err)
		return n, z.err
	}
	return n, err
}

func (z *zstReader) Close() error {
	z.dec.Close()
	return z.f.Close()
}
