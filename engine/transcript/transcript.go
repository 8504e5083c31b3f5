// Package transcript reads, writes and interprets OpenClaw session
// transcripts: the pi-coding-agent session JSONL format, versions 1 to 4.
// The first line is a session header; every later line is an entry with an
// id and a parentId, so a transcript is a tree whose current branch ends at
// the active leaf (normally the last entry).
//
// The package is pure (no I/O beyond the reader and writer it is given) so the
// store, the gateway's import/export and the tests share one definition of the
// format.
//
// Versions, as OpenClaw 2026.9 defines them: version 1 has no ids (entries
// form a list; compaction names its first kept entry by index); version 2
// adds id/parentId; version 3 renames the "hookMessage" role to "custom";
// version 4 (what OpenClaw 2026.9 writes for new sessions) keeps the entry
// format of version 3 and adds "reset" entries (a /new inside one session
// file: the model context starts again after it) and "leaf" entries (tree
// navigation: they move the active leaf to their targetId).
//
// Choices made where the spec was silent:
//   - Import→export is lossless as JSON values, not bytes: unknown entry types
//     and unknown fields are kept in Extra, and a message entry remembers the
//     raw JSON it was read from and writes it back unchanged unless the
//     decoded Message was modified. (engine.Message does not model every
//     field pi writes, e.g. usage.cost, so re-encoding alone would lose data.)
//   - A message whose content is a plain string (allowed by pi) is read
//     as one text block; a tool result whose content is one object as a
//     list of that block.
//   - Versions 1 and 2 are migrated on read as OpenClaw's doctor does:
//     version 1 entries without an id get one (derived from the session
//     id and the line, so the same file always reads the same) and are
//     chained in file order, a version 1 compaction's firstKeptEntryIndex becomes
//     firstKeptEntryId, and a "hookMessage" becomes a "custom" message
//     (customType "hook"). A header without a version counts as version 1.
//     The header keeps the version it was read with; Export sets the one
//     written.
//   - Export writes version 3 or 4 (OpenClaw 2026.9 refuses older ones at
//     run time). Converting between them changes the header's version and
//     nothing else: entries are written value for value. A version 3 file
//     may so carry "reset" and "leaf" entries; OpenClaw 2026.9 honours them
//     whatever the header says, and older pi readers ignore entry types
//     they do not know (they would then show the history before a reset to
//     the model). Dropping or rewriting them would lose data, so we do not.
//   - Context follows OpenClaw's projection: the branch ending at the active
//     leaf, from the latest reset or compaction on it. After a compaction the
//     summary comes first, then the kept entries; after a reset only the
//     user, assistant and tool result messages from its firstKeptEntryId (if
//     any) are kept, then everything after it. Messages marked
//     excludeFromContext are left out; "custom" messages reach the model as
//     user messages and "bashExecution" ones as the user text OpenClaw
//     renders. OpenClaw's extra re-parenting of entries written after a
//     reset that do not descend from it (a repair for concurrent writers) is
//     not reproduced: we follow parentId as written.
//   - Transcript hygiene in Context: tool calls left without a result get a
//     synthetic error result ("No result provided") placed after the results
//     that do exist, also at the very end of the transcript, so a crash
//     between a tool call and its result never leaves the model a dangling
//     call and the tool is never re-run behind the user's back; tool results
//     that answer no pending call (orphans, duplicates) are dropped.
package transcript

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/transcriptfmt"
)

// Version is the newest transcript format version this package reads, the
// one it gives new sessions and the default of Export (what OpenClaw 2026.9
// writes).
const Version = 4

// ExportVersions are the versions Export writes: those OpenClaw 2026.9
// reads at run time.
var ExportVersions = []int{3, 4}

// ParseFormat reads an export format name: "v3", "v4" (or "3", "4"); ""
// is Version.
func ParseFormat(s string) (int, error) {
	f := strings.ToLower(strings.TrimSpace(s))
	if f == "" {
		return Version, nil
	}
	switch strings.TrimPrefix(f, "v") {
	case "3":
		return 3, nil
	case "4":
		return 4, nil
	}
	return 0, fmt.Errorf("unknown transcript format %q: want v3 or v4", s)
}

// TimeLayout is how timestamps are written: RFC 3339 with milliseconds in
// UTC, like JavaScript's Date.toISOString.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// Timestamp formats t as a transcript timestamp.
func Timestamp(t time.Time) string { return t.UTC().Format(TimeLayout) }

// The header, the id rules and the line bound live in engine/transcriptfmt,
// which the CLI's reader of OpenClaw state dirs links without the tree and
// context code here; they are named here too so callers keep one import.

// Header is the first line of a transcript (transcriptfmt.Header).
type Header = transcriptfmt.Header

// MaxLineBytes is the longest line Parse accepts.
const MaxLineBytes = transcriptfmt.MaxLineBytes

// MaxIDBytes is the longest session or entry id accepted
// (transcriptfmt.MaxIDBytes).
const MaxIDBytes = transcriptfmt.MaxIDBytes

// ValidSessionID checks a session id (transcriptfmt.ValidSessionID).
func ValidSessionID(id string) error { return transcriptfmt.ValidSessionID(id) }

// NewHeader returns a header of the current Version for sessionID stamped now.
func NewHeader(sessionID, cwd string) Header {
	return Header{Type: "session", Version: Version, ID: sessionID, Timestamp: Timestamp(time.Now()), Cwd: cwd}
}

// EntryType names the kind of a transcript entry.
type EntryType string

// Entry types pi-coding-agent writes. Others are kept as they are.
const (
	EntryMessage             EntryType = "message"
	EntryCustomMessage       EntryType = "custom_message"
	EntryCustom              EntryType = "custom"
	EntryCompaction          EntryType = "compaction"
	EntryBranchSummary       EntryType = "branch_summary"
	EntryModelChange         EntryType = "model_change"
	EntryThinkingLevelChange EntryType = "thinking_level_change"
	EntryLabel               EntryType = "label"
	// EntryReset (version 4) starts the model context again: a /new or a
	// daily/idle reset inside one session file. Reason says which;
	// FirstKeptEntryID optionally names the first entry before it whose
	// messages stay in the context.
	EntryReset EntryType = "reset"
	// EntryLeaf (version 4) is tree navigation, not content: it moves the
	// active leaf to its targetId (null: an empty branch). Its fields stay
	// in Extra.
	EntryLeaf EntryType = "leaf"
	// EntrySessionInfo names the session. Its fields stay in Extra.
	EntrySessionInfo EntryType = "session_info"
)

// Message roles OpenClaw writes besides engine's user, assistant and
// toolResult. They are kept as they are; Context renders them for the model.
const (
	RoleCustom        engine.Role = "custom"
	RoleBashExecution engine.Role = "bashExecution"
	// roleHookMessage is the version 1–2 name of RoleCustom.
	roleHookMessage engine.Role = "hookMessage"
)

// Entry is one transcript line after the header. Only the fields of its Type
// are written; the rest of a read entry is kept in Extra.
type Entry struct {
	Type      EntryType
	ID        string
	ParentID  string // "" is JSON null: the root of the tree
	Timestamp string

	// message
	Message *engine.Message

	// custom_message: CustomType, Content (a string or []engine.Block),
	// Display, Details. custom: CustomType, Data.
	CustomType string
	Content    json.RawMessage
	Display    bool
	Data       json.RawMessage
	Details    json.RawMessage // also on compaction and branch_summary

	// compaction: Summary, FirstKeptEntryID, TokensBefore, Details.
	// branch_summary: FromID, Summary, Details.
	Summary          string
	FirstKeptEntryID string
	TokensBefore     int
	FromID           string

	// model_change
	Provider string
	ModelID  string
	// thinking_level_change
	ThinkingLevel string
	// label: TargetID, Label ("" clears the label)
	TargetID string
	Label    string
	// reset: Reason ("new", "reset", "idle", "daily", …) and
	// FirstKeptEntryID ("" when nothing before it is kept).
	Reason string

	// Extra holds fields this package does not know, and every field of an
	// entry type it does not know.
	Extra map[string]json.RawMessage

	// rawMessage is the message JSON as read, written back if Message still
	// decodes from it unchanged.
	rawMessage json.RawMessage
}

// MessageEntry returns a message entry holding m, stamped now. ID and
// ParentID are left for the store to fill.
func MessageEntry(m engine.Message) Entry {
	return Entry{Type: EntryMessage, Timestamp: Timestamp(time.Now()), Message: &m}
}

// NewSessionID returns a random UUID (version 4).
func NewSessionID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
