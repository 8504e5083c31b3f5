// Package openclawdir reads a real OpenClaw (2026.9) state dir — by
// default ~/.openclaw, or $OPENCLAW_STATE_DIR — for `openclaw migrate
// openclaw`. It reads foreign files only, never our store, and never writes
// to the directory. openclaw-migrate links it (openclaw does not: SQLite
// and zstd slowed every command's start; see cli/migrate), so it imports
// only the standard library, engine/transcriptfmt (the transcript header
// and id rules), modernc.org/sqlite and klauspost/compress/zstd.
//
// What OpenClaw 2026.9 keeps there (learned from openclaw@2026.9.6's code
// and a real run; testdata/regen.sh remakes the fixtures with it):
//
//   - openclaw.json (JSON5): the config. agents.list[] {id, workspace,
//     default}, agents.defaults.workspace.
//   - workspace/ (default agent) or workspace-<id>/ (others), or what the
//     config says (defaults.workspace/<id> for non-default agents): the
//     bootstrap files (AGENTS.md, SOUL.md, TOOLS.md, IDENTITY.md, USER.md,
//     BOOTSTRAP.md, HEARTBEAT.md), MEMORY.md and memory/*.md.
//   - agents/<id>/agent/openclaw-agent.sqlite, in WAL mode: the sessions.
//     session_nodes has one row per session key ("agent:main:main") with
//     current_session_id, the key's live session. session_windows has one
//     row per session id with its session_key, previous_session_id and a
//     reason (initial, reset, rollover, …); a window that is not its key's
//     current one is an archived session. transcript_events(session_id,
//     seq, event_json, event_zstd, event_utf8_bytes, navigation_json,
//     created_at) holds the transcript, one row per JSONL line in seq
//     order: the header ({"type":"session","version":4,"id":…,"cwd":…})
//     then the entries. A line is event_json, or, when that is NULL,
//     event_zstd decompressed (one zstd frame) to exactly event_utf8_bytes
//     bytes: OpenClaw compresses events of 1 KiB to 4 MiB that shrink by a
//     tenth, never the header. navigation_json is OpenClaw's own index and
//     is not part of the transcript.
//   - agents/<id>/sessions/: what older versions wrote and 2026.9 still
//     reads and imports: sessions.json (session key → {sessionId,
//     updatedAt, …}) and <sessionId>.jsonl; archives
//     <sessionId>.jsonl.reset.<stamp> and <sessionId>.jsonl.deleted.<stamp>,
//     with .zst when compressed (one zstd frame of the whole JSONL), where
//     <stamp> is an ISO time with '-' for ':' (2026-11-26T10-41-03.123Z),
//     optionally followed by .<32 hex>. Session maintenance (pruning) and
//     the gateway's sessions.delete write the deleted archives (the
//     fixture has one of each kind of name).
//
// Version 4 transcripts: user content may be a plain string; a /new or
// /reset that reaches the gateway's reply pipeline appends
// {"type":"reset","id":…,"parentId":…,"timestamp":…,"reason":"new"|…} to
// the same session, which goes on after it (seen in a real run: the
// fixture's agent:main:webchat); `openclaw agent --local` instead sends
// "/new" to the model as text. Entry ids are UUIDs, but the reset entry's
// is 8 hex digits; messages carry extra fields (__openclaw,
// idempotencyKey, usage.cost, …). Session.Open yields the lines exactly as
// stored, so every value survives.
//
// Choices made where the spec was silent:
//   - The SQLite store and its -wal are copied to a private temporary folder
//     (removed by Close) and opened there: SQLite needs a -shm file beside a
//     WAL database even to read it, and the user's folder must not change.
//     The copies of all agents' stores of one Dir together are bounded by
//     MaxDatabaseBytes; a file that does not begin with SQLite's magic is
//     refused before it is copied; a failed open removes its copy at once,
//     and Open sweeps this user's copy folders (openclaw-migrate-*) left
//     untouched for a day by a run that died before Close.
//   - The copy is opened with trusted_schema off and query_only on;
//     session_windows, transcript_events and (when present) session_nodes
//     must be ordinary tables, not views or virtual tables, whose code
//     would run on every read. session_nodes stays optional, as before.
//   - An event longer than MaxEventBytes (event_json or event_zstd) and a
//     session id or key longer than 4 KiB are refused by their length,
//     read with octet_length, before their value is loaded.
//   - Only regular files are opened: a FIFO, socket, device or folder
//     where a file is read is refused from its Lstat, naming it, and the
//     open itself uses O_NONBLOCK and checks the opened file again, so a
//     FIFO swapped in between cannot block the read.
//   - Everything is read through os.Root: a symbolic link that leaves the
//     state dir is refused with an error naming it; symbolic links in a
//     workspace and in sessions/ are skipped; workspace files are read with
//     the workspace as root.
//   - A transcript file whose first line is not a session header is still
//     listed, under the id its name gives, and its Open returns the error,
//     so one broken file does not hide the others; a broken SQLite row
//     fails the listing or the read naming the file, table, session and
//     seq.
//   - A legacy .jsonl whose session id the store also holds is skipped
//     (OpenClaw imported it); deleted archives are always listed when asked.
//   - An event must be one line of valid JSON; a compressed event is
//     decompressed only within OpenClaw's own 4 MiB bound, and a transcript
//     stops at MaxSessionBytes (zstd bombs included).
//   - A relative workspace path in the config is taken relative to the
//     state dir; "~" is the current user's home.
//   - Cold-storage archives (session_cold_*, <sha256>.jsonl.zst under the
//     store's artifact folder, written for sessions idle for many days when
//     session.maintenance.coldStorage is on) are not read yet.
package openclawdir
