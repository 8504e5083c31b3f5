package openclawdir

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/openclaw-edge/edge/engine/transcript"
)

// storeName is the per-agent SQLite store, under agents/<id>/agent/.
const storeName = "openclaw-agent.sqlite"

// MaxEventBytes is the largest transcript event OpenClaw stores
// (MAX_COMPRESSED_EVENT_BYTES in its transcript-payload.ts); a compressed
// event claiming more is refused before it is decompressed.
const MaxEventBytes = 4 << 20

// db is one agent's SQLite store, opened from a private copy.
type db struct {
	sql  *sql.DB
	file string // the store in the state dir, for messages
	cols map[string]bool
}

func (s *db) close() error { return s.sql.Close() }

// store opens the agent's SQLite store, nil when it has none. The store
// and its -wal file are copied to a private temporary folder first: SQLite
// needs a -shm file beside a WAL database even to read it, and this never
// creates files in the user's state dir.
func (d *Dir) store(agentID string) (*db, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, errors.New("OpenClaw state dir is closed")
	}
	if s, ok := d.dbs[agentID]; ok {
		return s, nil
	}
	rel := path.Join("agents", agentID, "agent", storeName)
	file := filepath.Join(d.path, filepath.FromSlash(rel))
	if !d.exists(rel) {
		return nil, nil
	}
	if d.tmp == "" {
		tmp, err := os.MkdirTemp("", "openclaw-migrate-")
		if err != nil {
			return nil, fmt.Errorf("copying %s: %w", file, err)
		}
		d.tmp = tmp
	}
	dst := filepath.Join(d.tmp, agentID+".sqlite")
	if err := d.copyOut(rel, dst); err != nil {
		return nil, err
	}
	// A -wal file holds committed transactions not yet in the main file.
	if d.exists(rel + "-wal") {
		if err := d.copyOut(rel+"-wal", dst+"-wal"); err != nil {
			return nil, err
		}
	}
	// No mode=ro: the copy is ours, and SQLite must be able to replay the
	// WAL into it. query_only keeps this code from writing by mistake.
	dsn := "file:" + (&url.URL{Path: dst}).EscapedPath() + "?_pragma=query_only(1)&_pragma=busy_timeout(5000)"
	sdb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	s := &db{sql: sdb, file: file, cols: map[string]bool{}}
	if err := s.check(); err != nil {
		sdb.Close()
		return nil, err
	}
	d.dbs[agentID] = s
	return s, nil
}

// copyOut copies rel from the state dir to dst, refusing links out of the
// state dir, anything but a plain file, and files past MaxDatabaseBytes.
func (d *Dir) copyOut(rel, dst string) error {
	src, err := openInRoot(d.root, d.path, rel, MaxDatabaseBytes)
	if err != nil {
		return rootErr(err, d.path)
	}
	defer src.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("copying %s: %w", rel, err)
	}
	if _, err := io.Copy(out, src); err != nil {
		out.Close()
		return fmt.Errorf("copying %s: %w", filepath.Join(d.path, rel), err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("copying %s: %w", filepath.Join(d.path, rel), err)
	}
	return nil
}

// check makes sure the file is a SQLite database with OpenClaw's session
// tables, and notes which optional columns it has (older stores lack the
// compressed-event columns).
func (s *db) check() error {
	var n int
	if err := s.sql.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN ('session_windows', 'transcript_events')`).Scan(&n); err != nil {
		return fmt.Errorf("%s: not a readable SQLite database: %w", s.file, err)
	}
	if n != 2 {
		return fmt.Errorf("%s: no session_windows and transcript_events tables: not an OpenClaw 2026.9 agent store", s.file)
	}
	for _, t := range []string{"session_windows", "transcript_events", "session_nodes"} {
		rows, err := s.sql.Query(`SELECT name FROM pragma_table_info(?)`, t)
		if err != nil {
			return fmt.Errorf("%s: reading the columns of %s: %w", s.file, t, err)
		}
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				rows.Close()
				return fmt.Errorf("%s: reading the columns of %s: %w", s.file, t, err)
			}
			s.cols[t+"."+c] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("%s: reading the columns of %s: %w", s.file, t, err)
		}
	}
	for _, c := range []string{"session_windows.session_id", "session_windows.session_key", "transcript_events.session_id", "transcript_events.seq", "transcript_events.event_json"} {
		if !s.cols[c] {
			return fmt.Errorf("%s: table %s has no column %s: not a store this reads", s.file, strings.Split(c, ".")[0], strings.Split(c, ".")[1])
		}
	}
	return nil
}

// col returns table.name when the column exists, else def (an SQL
// expression standing in for it).
func (s *db) col(table, name, def string) string {
	if s.cols[table+"."+name] {
		return table + "." + name
	}
	return def
}

// sessions lists the store's sessions: one per session_windows row with at
// least one transcript event.
func (s *db) sessions() ([]Session, error) {
	current := "NULL"
	join := ""
	if s.cols["session_nodes.session_key"] && s.cols["session_nodes.current_session_id"] {
		current = "session_nodes.current_session_id"
		join = "LEFT JOIN session_nodes ON session_nodes.session_key = session_windows.session_key"
	}
	q := fmt.Sprintf(`SELECT session_windows.session_id, session_windows.session_key, %s,
		max(coalesce(%s, 0), coalesce(%s, 0), coalesce(%s, 0), coalesce(%s, 0))
		FROM session_windows %s
		WHERE EXISTS (SELECT 1 FROM transcript_events WHERE transcript_events.session_id = session_windows.session_id)
		ORDER BY session_windows.rowid`,
		current,
		s.col("session_windows", "created_at", "0"), s.col("session_windows", "updated_at", "0"),
		s.col("session_windows", "transcript_updated_at", "0"), s.col("session_windows", "ended_at", "0"),
		join)
	rows, err := s.sql.Query(q)
	if err != nil {
		return nil, fmt.Errorf("%s: listing sessions: %w", s.file, err)
	}
	type row struct {
		id, key string
		current sql.NullString
		updated int64
	}
	var rs []row
	for rows.Next() {
		var r row
		var id, key sql.NullString
		var upd sql.NullInt64
		if err := rows.Scan(&id, &key, &r.current, &upd); err != nil {
			rows.Close()
			return nil, fmt.Errorf("%s: session_windows: %w", s.file, err)
		}
		r.id, r.key, r.updated = id.String, key.String, upd.Int64
		rs = append(rs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: listing sessions: %w", s.file, err)
	}
	var out []Session
	for _, r := range rs {
		where := fmt.Sprintf("%s: session_windows row %q", s.file, r.id)
		if err := transcript.ValidSessionID(r.id); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		// The transcript's first line is its header.
		rc := s.open(r.id)
		line, err := readLine(bufio.NewReader(rc), transcript.MaxLineBytes)
		rc.Close()
		if err != nil {
			return nil, err
		}
		h, err := parseHeader(line)
		if err != nil {
			return nil, fmt.Errorf("%s: transcript header: %w", where, err)
		}
		id := r.id
		out = append(out, Session{
			Key:      r.key,
			ID:       h.ID,
			Source:   SourceSQLite,
			Archived: r.current.Valid && r.current.String != r.id,
			Updated:  time.UnixMilli(r.updated),
			Open:     func() (io.ReadCloser, error) { return s.open(id), nil },
		})
	}
	return out, nil
}

// open streams the transcript of session id: its events in seq order, one
// line each. Errors (a bad row, a bomb) surface from Read, naming the row.
func (s *db) open(id string) io.ReadCloser {
	return &eventReader{s: s, id: id, left: MaxSessionBytes}
}

// eventReader reads transcript_events in pages of rows, so no query stays
// open between Reads and a slow consumer holds no lock.
type eventReader struct {
	s       *db
	id      string
	lastSeq int64
	started bool
	done    bool
	buf     bytes.Buffer
	left    int64 // bytes still allowed
	err     error
}

const pageRows = 256

func (r *eventReader) Read(p []byte) (int, error) {
	for r.buf.Len() == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if r.done {
			return 0, io.EOF
		}
		r.err = r.fill()
	}
	return r.buf.Read(p)
}

func (r *eventReader) Close() error { r.done = true; r.buf.Reset(); return nil }

// fill reads the next page of events into buf.
func (r *eventReader) fill() error {
	s := r.s
	q := fmt.Sprintf(`SELECT seq, event_json, %s, %s FROM transcript_events
		WHERE session_id = ? AND (? OR seq > ?) ORDER BY seq LIMIT %d`,
		s.col("transcript_events", "event_zstd", "NULL"), s.col("transcript_events", "event_utf8_bytes", "NULL"), pageRows)
	rows, err := s.sql.QueryContext(context.Background(), q, r.id, !r.started, r.lastSeq)
	if err != nil {
		return fmt.Errorf("%s: reading session %s: %w", s.file, r.id, err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
		var seq int64
		var text sql.NullString
		var z []byte
		var size sql.NullInt64
		if err := rows.Scan(&seq, &text, &z, &size); err != nil {
			return fmt.Errorf("%s: transcript_events session %s: %w", s.file, r.id, err)
		}
		where := fmt.Sprintf("%s: transcript_events session %s seq %d", s.file, r.id, seq)
		r.started, r.lastSeq = true, seq
		line, err := eventLine(text, z, size)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if r.left -= int64(len(line) + 1); r.left < 0 {
			return fmt.Errorf("%s: the transcript is longer than %d bytes", where, MaxSessionBytes)
		}
		r.buf.Write(line)
		r.buf.WriteByte('\n')
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: reading session %s: %w", s.file, r.id, err)
	}
	if n < pageRows {
		r.done = true
	}
	if !r.started {
		return fmt.Errorf("%s: session %s has no transcript events", s.file, r.id)
	}
	return nil
}

// zstdDecoder is shared: DecodeAll is safe for concurrent use.
var zstdDecoder, _ = zstd.NewReader(nil,
	zstd.WithDecoderConcurrency(1),
	zstd.WithDecoderMaxMemory(MaxEventBytes),
	zstd.WithDecoderMaxWindow(MaxEventBytes))

// eventLine returns one event's JSON text: event_json as stored, or
// event_zstd decompressed to exactly event_utf8_bytes bytes.
func eventLine(text sql.NullString, z []byte, size sql.NullInt64) ([]byte, error) {
	var line []byte
	switch {
	case text.Valid && z != nil:
		return nil, errors.New("has both event_json and event_zstd")
	case text.Valid:
		line = []byte(text.String)
	case z != nil:
		if !size.Valid || size.Int64 < 1 || size.Int64 > MaxEventBytes {
			return nil, fmt.Errorf("event_utf8_bytes %d is outside 1..%d", size.Int64, MaxEventBytes)
		}
		if len(z) > MaxEventBytes {
			return nil, fmt.Errorf("event_zstd is %d bytes, more than %d", len(z), MaxEventBytes)
		}
		out, err := zstdDecoder.DecodeAll(z, make([]byte, 0, size.Int64))
		if err != nil {
			return nil, fmt.Errorf("event_zstd: %w", err)
		}
		if int64(len(out)) != size.Int64 {
			return nil, fmt.Errorf("event_zstd decompresses to %d bytes, event_utf8_bytes says %d", len(out), size.Int64)
		}
		line = out
	default:
		return nil, errors.New("has neither event_json nor event_zstd")
	}
	// One event is one JSONL line: a newline inside would forge entries.
	if bytes.ContainsAny(line, "\r\n") {
		return nil, errors.New("event spans several lines")
	}
	if !json.Valid(line) {
		return nil, errors.New("event is not valid JSON")
	}
	return line, nil
}
