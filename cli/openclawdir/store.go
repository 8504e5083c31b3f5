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
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/openclaw-edge/edge/engine/transcriptfmt"
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
func (d *Dir) store(agentID string) (_ *db, err error) {
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
		tmp, err := os.MkdirTemp("", tmpPrefix)
		if err != nil {
			return nil, fmt.Errorf("copying %s: %w", file, err)
		}
		d.tmp = tmp
	}
	dst := filepath.Join(d.tmp, agentID+".sqlite")
	// Whatever fails below leaves no copy behind (Close removes the rest).
	defer func() {
		if err != nil {
			err = errors.Join(err, d.dropCopy(dst))
		}
	}()
	if err := d.copyOut(rel, dst, sqliteMagic); err != nil {
		return nil, err
	}
	// A -wal file holds committed transactions not yet in the main file.
	if d.exists(rel + "-wal") {
		if err := d.copyOut(rel+"-wal", dst+"-wal", ""); err != nil {
			return nil, err
		}
	}
	// No mode=ro: the copy is ours, and SQLite must be able to replay the
	// WAL into it. query_only keeps this code from writing by mistake;
	// trusted_schema(0) keeps the hostile file's views, triggers and
	// defaults from calling functions with side effects.
	dsn := "file:" + (&url.URL{Path: dst}).EscapedPath() + "?_pragma=query_only(1)&_pragma=trusted_schema(0)&_pragma=busy_timeout(5000)"
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

const (
	// tmpPrefix names the folder of private copies; Open sweeps stale ones.
	tmpPrefix = "openclaw-migrate-"
	// staleAfter: a copy folder untouched this long was left by a run that
	// died before Close.
	staleAfter = 24 * time.Hour
	// maxNameBytes bounds a session id or key read from the store; OpenClaw's
	// are far shorter.
	maxNameBytes = 4096
	// sqliteMagic is how every SQLite 3 database file begins.
	sqliteMagic = "SQLite format 3\x00"
)

// dropCopy removes the private copy at dst and its SQLite companions, and
// the temporary folder when no other store is open from it. Called with
// d.mu held.
func (d *Dir) dropCopy(dst string) error {
	var errs []error
	for _, p := range []string{dst, dst + "-wal", dst + "-shm", dst + "-journal"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing the private copy of OpenClaw's store: %w", err))
		}
	}
	if len(d.dbs) == 0 && d.tmp != "" {
		if err := os.Remove(d.tmp); err == nil {
			d.tmp = ""
		}
	}
	return errors.Join(errs...)
}

// sweepStaleCopies removes copy folders of this user's earlier runs that
// were killed before Close: only folders (never links) named like ours,
// owned by this user, with nothing in them touched for staleAfter. Best
// effort: a folder it cannot judge or remove is left alone, and it never
// fails Open.
func sweepStaleCopies(now time.Time) {
	tmp := os.TempDir()
	ents, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	old := func(fi fs.FileInfo) bool { return now.Sub(fi.ModTime()) > staleAfter }
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		p := filepath.Join(tmp, e.Name())
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() || !ownedByMe(fi) || !old(fi) {
			continue
		}
		inner, err := os.ReadDir(p)
		if err != nil {
			continue
		}
		fresh := false
		for _, ie := range inner {
			if ifi, err := ie.Info(); err != nil || !old(ifi) {
				fresh = true
				break
			}
		}
		if !fresh {
			os.RemoveAll(p) // best effort, see above
		}
	}
}

// copyOut copies rel from the state dir to dst, refusing links out of the
// state dir, anything but a plain file, a file that does not begin with
// magic, and copies past MaxDatabaseBytes for the whole Dir. Called with
// d.mu held.
func (d *Dir) copyOut(rel, dst, magic string) (err error) {
	name := filepath.Join(d.path, filepath.FromSlash(rel))
	src, err := openInRoot(d.root, d.path, rel, MaxDatabaseBytes)
	if err != nil {
		return rootErr(err, d.path)
	}
	defer src.Close()
	left := MaxDatabaseBytes - d.copied
	if src.size > left {
		return fmt.Errorf("%s is %d bytes; with the %d already copied from other agents' stores that passes the %d bytes read from OpenClaw's stores in all", name, src.size, d.copied, MaxDatabaseBytes)
	}
	// The file may grow while being copied: stop at the budget.
	src.left = left
	// Checked before anything is copied, so a file that is no database
	// costs no disk.
	head := make([]byte, len(magic))
	if _, err := io.ReadFull(src, head); err != nil || string(head) != magic {
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("reading %s: %w", name, err)
		}
		return fmt.Errorf("%s is not a SQLite database: it does not begin with %q", name, strings.TrimSuffix(magic, "\x00"))
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("copying %s: %w", name, err)
	}
	defer func() {
		if err != nil {
			out.Close()
			os.Remove(dst) // the error says what went wrong; the partial copy goes
		}
	}()
	if _, err := out.Write(head); err != nil {
		return fmt.Errorf("copying %s: %w", name, err)
	}
	n, err := io.Copy(out, src)
	if err != nil {
		return fmt.Errorf("copying %s: %w", name, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("copying %s: %w", name, err)
	}
	d.copied += int64(len(head)) + n
	return nil
}

// storeTables are the tables read; each must be a real table, not a view
// or a virtual table, whose code would run on every read. session_nodes
// is optional (it only marks archived windows).
var storeTables = []string{"session_nodes", "session_windows", "transcript_events"}

// check makes sure the file is a SQLite database with OpenClaw's session
// tables, and notes which optional columns it has (older stores lack the
// compressed-event columns).
func (s *db) check() error {
	// lower(name): SQLite's names ignore case, so SESSION_WINDOWS would be
	// what a query of session_windows reads.
	rows, err := s.sql.Query(`SELECT lower(name), type, coalesce(sql, '') FROM sqlite_schema WHERE lower(name) IN ('session_nodes', 'session_windows', 'transcript_events')`)
	if err != nil {
		return fmt.Errorf("%s: not a readable SQLite database: %w", s.file, err)
	}
	found := map[string]bool{}
	for rows.Next() {
		var name, typ, def string
		if err := rows.Scan(&name, &typ, &def); err != nil {
			rows.Close()
			return fmt.Errorf("%s: not a readable SQLite database: %w", s.file, err)
		}
		if typ != "table" {
			rows.Close()
			return fmt.Errorf("%s: %s is a %q, not a table: not an OpenClaw agent store this reads", s.file, name, typ)
		}
		if f := strings.Fields(strings.ToUpper(def)); len(f) < 2 || f[0] != "CREATE" || f[1] != "TABLE" {
			rows.Close()
			return fmt.Errorf("%s: %s is a virtual or unusual table: not an OpenClaw agent store this reads", s.file, name)
		}
		found[name] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: not a readable SQLite database: %w", s.file, err)
	}
	if !found["session_windows"] || !found["transcript_events"] {
		return fmt.Errorf("%s: no session_windows and transcript_events tables: not an OpenClaw 2026.9 agent store", s.file)
	}
	for _, t := range storeTables {
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
	// Ids and keys past maxNameBytes are handed over as NULL and the row
	// refused by its length, so a huge value is never read into memory.
	capped := func(e string) string {
		return fmt.Sprintf("CASE WHEN octet_length(%[1]s) <= %[2]d THEN %[1]s END", e, maxNameBytes)
	}
	id, key := "session_windows.session_id", "session_windows.session_key"
	q := fmt.Sprintf(`SELECT %s, %s, %s,
		max(coalesce(%s, 0), coalesce(%s, 0), coalesce(%s, 0), coalesce(%s, 0)),
		max(coalesce(octet_length(%s), 0), coalesce(octet_length(%s), 0), coalesce(octet_length(%s), 0)),
		session_windows.rowid
		FROM session_windows %s
		WHERE EXISTS (SELECT 1 FROM transcript_events WHERE transcript_events.session_id = session_windows.session_id)
		ORDER BY session_windows.rowid`,
		capped(id), capped(key), capped(current),
		s.col("session_windows", "created_at", "0"), s.col("session_windows", "updated_at", "0"),
		s.col("session_windows", "transcript_updated_at", "0"), s.col("session_windows", "ended_at", "0"),
		id, key, current,
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
		var upd, longest, rowid sql.NullInt64
		if err := rows.Scan(&id, &key, &r.current, &upd, &longest, &rowid); err != nil {
			rows.Close()
			return nil, fmt.Errorf("%s: session_windows: %w", s.file, err)
		}
		if longest.Int64 > maxNameBytes {
			rows.Close()
			return nil, fmt.Errorf("%s: session_windows row %d: a session id or key is %d bytes, more than the %d one may be", s.file, rowid.Int64, longest.Int64, maxNameBytes)
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
		if err := transcriptfmt.ValidSessionID(r.id); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		// The transcript's first line is its header.
		rc := s.open(r.id)
		line, err := readLine(bufio.NewReader(rc), transcriptfmt.MaxLineBytes)
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
	// octet_length reads a value's size from the record without loading
	// it, and the CASE hands over only values within MaxEventBytes: an
	// over-long event is refused without ever being read into memory.
	z := s.col("transcript_events", "event_zstd", "NULL")
	q := fmt.Sprintf(`SELECT seq,
		octet_length(event_json), CASE WHEN octet_length(event_json) <= %[1]d THEN event_json END,
		octet_length(%[2]s), CASE WHEN octet_length(%[2]s) <= %[1]d THEN %[2]s END,
		%[3]s FROM transcript_events
		WHERE session_id = ? AND (? OR seq > ?) ORDER BY seq LIMIT %[4]d`,
		MaxEventBytes, z, s.col("transcript_events", "event_utf8_bytes", "NULL"), pageRows)
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
		var textLen, zLen, size sql.NullInt64
		if err := rows.Scan(&seq, &textLen, &text, &zLen, &z, &size); err != nil {
			return fmt.Errorf("%s: transcript_events session %s: %w", s.file, r.id, err)
		}
		where := fmt.Sprintf("%s: transcript_events session %s seq %d", s.file, r.id, seq)
		r.started, r.lastSeq = true, seq
		if textLen.Int64 > MaxEventBytes {
			return fmt.Errorf("%s: event_json is %d bytes, more than the %d an event may be; the row is too large to read", where, textLen.Int64, MaxEventBytes)
		}
		if zLen.Int64 > MaxEventBytes {
			return fmt.Errorf("%s: event_zstd is %d bytes, more than the %d an event may be; the row is too large to read", where, zLen.Int64, MaxEventBytes)
		}
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

// zstdDecoder is shared (DecodeAll is safe for concurrent use) and made
// on first use: every `openclaw` command links this package.
var zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
	d, _ := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(MaxEventBytes),
		zstd.WithDecoderMaxWindow(MaxEventBytes))
	return d
})

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
		out, err := zstdDecoder().DecodeAll(z, make([]byte, 0, size.Int64))
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
