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
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/openclaw-edge/edge/engine"
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

// Export writes h and entries as a transcript of version v (see
// ExportVersions): the header says v, the entries are written as they are.
func Export(w io.Writer, h Header, entries []Entry, v int) error {
	if !slices.Contains(ExportVersions, v) {
		return fmt.Errorf("cannot write transcript version %d: want 3 or 4", v)
	}
	h.Version = v
	return Write(w, h, entries)
}

// MaxLineBytes is the longest line Parse accepts.
const MaxLineBytes = 16 << 20

// TimeLayout is how timestamps are written: RFC 3339 with milliseconds in
// UTC, like JavaScript's Date.toISOString.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// Timestamp formats t as a transcript timestamp.
func Timestamp(t time.Time) string { return t.UTC().Format(TimeLayout) }

// Header is the first line of a transcript.
type Header struct {
	Type          string // always "session"
	Version       int
	ID            string // the session id
	Timestamp     string
	Cwd           string
	ParentSession string
	// Extra holds fields this package does not know, kept for export.
	Extra map[string]json.RawMessage
}

// NewHeader returns a header of the current Version for sessionID stamped now.
func NewHeader(sessionID, cwd string) Header {
	return Header{Type: "session", Version: Version, ID: sessionID, Timestamp: Timestamp(time.Now()), Cwd: cwd}
}

var headerKeys = []string{"type", "version", "id", "timestamp", "cwd", "parentSession"}

// MarshalJSON writes the header with its known fields first, then Extra.
func (h Header) MarshalJSON() ([]byte, error) {
	var o object
	typ := h.Type
	if typ == "" {
		typ = "session"
	}
	o.add("type", typ)
	o.add("version", h.Version)
	o.add("id", h.ID)
	o.add("timestamp", h.Timestamp)
	o.add("cwd", h.Cwd)
	if h.ParentSession != "" {
		o.add("parentSession", h.ParentSession)
	}
	o.extra(h.Extra, headerKeys)
	return o.bytes()
}

// UnmarshalJSON reads a header, keeping unknown fields in Extra. A missing
// version reads as 1.
func (h *Header) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if m == nil {
		return errors.New("header is null")
	}
	var out Header
	if err := takeFields(m, map[string]any{
		"type": &out.Type, "version": &out.Version, "id": &out.ID,
		"timestamp": &out.Timestamp, "cwd": &out.Cwd, "parentSession": &out.ParentSession,
	}); err != nil {
		return err
	}
	if _, ok := m["version"]; !ok {
		out.Version = 1
	}
	out.Extra = rest(m, headerKeys)
	*h = out
	return nil
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

// fieldsOf lists the known fields of each entry type besides the common ones.
var fieldsOf = map[EntryType][]string{
	EntryMessage:             {"message"},
	EntryCustomMessage:       {"customType", "content", "display", "details"},
	EntryCustom:              {"customType", "data"},
	EntryCompaction:          {"summary", "firstKeptEntryId", "tokensBefore", "details"},
	EntryBranchSummary:       {"fromId", "summary", "details"},
	EntryModelChange:         {"provider", "modelId"},
	EntryThinkingLevelChange: {"thinkingLevel"},
	EntryLabel:               {"targetId", "label"},
	EntryReset:               {"reason", "firstKeptEntryId"},
}

var commonKeys = []string{"type", "id", "parentId", "timestamp"}

// MarshalJSON writes the entry: common fields, its type's fields, then Extra.
func (e Entry) MarshalJSON() ([]byte, error) {
	var o object
	o.add("type", e.Type)
	o.add("id", e.ID)
	if e.ParentID == "" {
		o.raw("parentId", json.RawMessage("null"))
	} else {
		o.add("parentId", e.ParentID)
	}
	o.add("timestamp", e.Timestamp)
	switch e.Type {
	case EntryMessage:
		if e.Message == nil {
			return nil, fmt.Errorf("message entry %s has no message", e.ID)
		}
		if raw := e.rawMessage; raw != nil {
			if m, err := decodeMessage(raw); err == nil && reflect.DeepEqual(m, *e.Message) {
				o.raw("message", raw)
				break
			}
		}
		o.add("message", e.Message)
	case EntryCustomMessage:
		o.add("customType", e.CustomType)
		o.raw("content", orNull(e.Content))
		o.add("display", e.Display)
		o.rawOpt("details", e.Details)
	case EntryCustom:
		o.add("customType", e.CustomType)
		o.rawOpt("data", e.Data)
	case EntryCompaction:
		o.add("summary", e.Summary)
		o.add("firstKeptEntryId", e.FirstKeptEntryID)
		o.add("tokensBefore", e.TokensBefore)
		o.rawOpt("details", e.Details)
	case EntryBranchSummary:
		o.add("fromId", e.FromID)
		o.add("summary", e.Summary)
		o.rawOpt("details", e.Details)
	case EntryModelChange:
		o.add("provider", e.Provider)
		o.add("modelId", e.ModelID)
	case EntryThinkingLevelChange:
		o.add("thinkingLevel", e.ThinkingLevel)
	case EntryLabel:
		o.add("targetId", e.TargetID)
		if e.Label != "" {
			o.add("label", e.Label)
		}
	case EntryReset:
		o.add("reason", e.Reason)
		if e.FirstKeptEntryID != "" {
			o.add("firstKeptEntryId", e.FirstKeptEntryID)
		}
	}
	o.extra(e.Extra, append(commonKeys, fieldsOf[e.Type]...))
	return o.bytes()
}

// UnmarshalJSON reads an entry, keeping unknown fields in Extra. It checks
// field types but not the tree; Parse does that.
func (e *Entry) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if m == nil {
		return errors.New("entry is null")
	}
	var out Entry
	var parent *string
	if err := takeFields(m, map[string]any{
		"type": &out.Type, "id": &out.ID, "parentId": &parent, "timestamp": &out.Timestamp,
	}); err != nil {
		return err
	}
	if parent != nil {
		out.ParentID = *parent
	}
	var fields map[string]any
	switch out.Type {
	case EntryMessage:
		raw, ok := m["message"]
		if !ok || string(raw) == "null" {
			return errors.New("message entry has no message")
		}
		msg, err := decodeMessage(raw)
		if err != nil {
			return fmt.Errorf("message: %w", err)
		}
		out.Message = &msg
		out.rawMessage = raw // a private copy made by json.Unmarshal
	case EntryCustomMessage:
		fields = map[string]any{"customType": &out.CustomType, "content": &out.Content, "display": &out.Display, "details": &out.Details}
	case EntryCustom:
		fields = map[string]any{"customType": &out.CustomType, "data": &out.Data}
	case EntryCompaction:
		fields = map[string]any{"summary": &out.Summary, "firstKeptEntryId": &out.FirstKeptEntryID, "tokensBefore": &out.TokensBefore, "details": &out.Details}
	case EntryBranchSummary:
		fields = map[string]any{"fromId": &out.FromID, "summary": &out.Summary, "details": &out.Details}
	case EntryModelChange:
		fields = map[string]any{"provider": &out.Provider, "modelId": &out.ModelID}
	case EntryThinkingLevelChange:
		fields = map[string]any{"thinkingLevel": &out.ThinkingLevel}
	case EntryLabel:
		fields = map[string]any{"targetId": &out.TargetID, "label": &out.Label}
	case EntryReset:
		fields = map[string]any{"reason": &out.Reason, "firstKeptEntryId": &out.FirstKeptEntryID}
	}
	if err := takeFields(m, fields); err != nil {
		return err
	}
	// Raw values are copies already (json.Unmarshal copies into
	// json.RawMessage); they are compacted when written.
	out.Extra = rest(m, append(commonKeys, fieldsOf[out.Type]...))
	*e = out
	return nil
}

// decodeMessage decodes a message, reading a string content as one text
// block and an object content (a tool result written by older versions)
// as a list of that one block.
func decodeMessage(raw json.RawMessage) (engine.Message, error) {
	var msg engine.Message
	err := json.Unmarshal(raw, &msg)
	var te *json.UnmarshalTypeError
	if err == nil || !errors.As(err, &te) || te.Field != "content" || (te.Value != "string" && te.Value != "object") {
		return msg, typeError(err)
	}
	// Decode the rest without the content, then the content.
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return engine.Message{}, err
	}
	content := m["content"]
	delete(m, "content")
	b, err := json.Marshal(m)
	if err != nil {
		return engine.Message{}, err
	}
	msg = engine.Message{}
	if err := json.Unmarshal(b, &msg); err != nil {
		return engine.Message{}, typeError(err)
	}
	if te.Value == "string" {
		var s string
		if err := json.Unmarshal(content, &s); err != nil {
			return engine.Message{}, fmt.Errorf("content: %w", err)
		}
		msg.Content = []engine.Block{engine.TextBlock(s)}
		return msg, nil
	}
	var blk engine.Block
	if err := json.Unmarshal(content, &blk); err != nil {
		return engine.Message{}, fmt.Errorf("content: %w", typeError(err))
	}
	msg.Content = []engine.Block{blk}
	return msg, nil
}

// Parse reads a whole transcript. It checks that the header comes first,
// that ids are unique and that every parentId names an earlier entry, so a
// transcript that parses is a well-formed tree. Errors name the line (a
// *LineError). To read a transcript of any size in bounded memory, use a
// Decoder.
func Parse(r io.Reader) (Header, []Entry, error) {
	d := NewDecoder(r)
	h, err := d.Header()
	if err != nil {
		return Header{}, nil, err
	}
	var entries []Entry
	for {
		e, err := d.Next()
		if err == io.EOF {
			return h, entries, nil
		}
		if err != nil {
			return Header{}, nil, err
		}
		entries = append(entries, e)
	}
}

// checkEntry validates e against the ids seen so far.
func checkEntry(e Entry, seen map[string]bool) error {
	if e.ID == "" {
		return fmt.Errorf("%s entry has no id", e.Type)
	}
	if len(e.ID) > MaxIDBytes {
		return fmt.Errorf("entry id %s is %d bytes long, the limit is %d", quoteShort(e.ID), len(e.ID), MaxIDBytes)
	}
	if seen[e.ID] {
		return fmt.Errorf("duplicate entry id %q", e.ID)
	}
	if e.ParentID != "" && !seen[e.ParentID] {
		return fmt.Errorf("entry %s: parentId %q names no earlier entry", e.ID, e.ParentID)
	}
	if err := e.Check(); err != nil {
		return fmt.Errorf("entry %s: %w", e.ID, err)
	}
	return nil
}

// Check validates the fields of e that do not depend on other entries: a
// type, a message with a known role, custom_message content that is a
// string or a block list.
func (e *Entry) Check() error {
	switch e.Type {
	case "":
		return errors.New("entry has no type")
	case "session":
		return errors.New("entry of type session (a second header)")
	case EntryMessage:
		if e.Message == nil {
			return errors.New("message entry has no message")
		}
		switch e.Message.Role {
		case engine.RoleUser, engine.RoleAssistant, engine.RoleToolResult, RoleCustom, RoleBashExecution:
		default:
			return fmt.Errorf("message role %q is not user, assistant, toolResult, custom or bashExecution", e.Message.Role)
		}
	case EntryCustomMessage:
		if _, err := contentBlocks(e.Content); err != nil {
			return fmt.Errorf("content: %w", err)
		}
	}
	return nil
}

// CheckAppend validates entries appended to a transcript whose ids are in
// seen (which it extends). The store uses it so the tree stays well formed.
func CheckAppend(seen map[string]bool, entries ...Entry) error {
	for _, e := range entries {
		if err := checkEntry(e, seen); err != nil {
			return err
		}
		seen[e.ID] = true
	}
	return nil
}

// Write writes h and entries as JSONL, one object a line.
func Write(w io.Writer, h Header, entries []Entry) error {
	bw := bufio.NewWriter(w)
	b, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("header: %w", err)
	}
	bw.Write(b)
	bw.WriteByte('\n')
	for _, e := range entries {
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("entry %s: %w", e.ID, err)
		}
		bw.Write(b)
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write transcript: %w", err)
	}
	return nil
}

// NewID returns a fresh entry id: 8 lowercase hex digits.
func NewID() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// uniqueID returns a NewID not in seen.
func uniqueID(seen map[string]bool) string {
	for {
		if id := NewID(); !seen[id] {
			return id
		}
	}
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

// Path returns the entries from the root to leafID, following parentId
// (through a leaf entry to its target). Leaf entries are not in it. It
// returns nil if leafID is not among entries.
func Path(entries []Entry, leafID string) []Entry {
	idx := pathIndex(entries, leafID)
	if idx == nil {
		return nil
	}
	path := make([]Entry, len(idx))
	for i, j := range idx {
		path[i] = entries[j]
	}
	return path
}

// ActiveLeaf returns the id of the entry the current branch ends at: the
// last entry of a known content type, or the target of a later leaf entry
// ("" for an empty branch). Entries of unknown types do not move it, as in
// OpenClaw, unless nothing else does: then it is the last entry.
func ActiveLeaf(entries []Entry) string {
	leaf, moved := "", false
	for i := range entries {
		e := &entries[i]
		switch {
		case e.Type == EntryLeaf:
			leaf, moved = leafTarget(e), true
		case e.Type == EntrySessionInfo || fieldsOf[e.Type] != nil:
			if !sideAppend(e) {
				leaf, moved = e.ID, true
			}
		}
	}
	if !moved && len(entries) > 0 {
		return entries[len(entries)-1].ID
	}
	return leaf
}

// leafTarget returns a leaf entry's targetId, "" for null or none.
func leafTarget(e *Entry) string {
	var t string
	if raw, ok := e.Extra["targetId"]; ok {
		_ = json.Unmarshal(raw, &t) // null or not a string: no target
	}
	return t
}

// sideAppend reports an entry appended beside the branch (appendMode
// "side"), which does not move the leaf.
func sideAppend(e *Entry) bool {
	raw, ok := e.Extra["appendMode"]
	return ok && string(bytes.TrimSpace(raw)) == `"side"`
}

// pathIndex returns the indexes in entries of the path from the root to
// leafID, skipping leaf entries (a leaf entry's place in the tree is its
// target).
func pathIndex(entries []Entry, leafID string) []int {
	byID := make(map[string]int, len(entries))
	for i := range entries {
		byID[entries[i].ID] = i
	}
	var idx []int
	id := leafID
	for steps := 0; id != "" && steps <= len(entries); steps++ {
		i, ok := byID[id]
		if !ok {
			break
		}
		if entries[i].Type == EntryLeaf {
			id = leafTarget(&entries[i])
			continue
		}
		idx = append(idx, i)
		id = entries[i].ParentID
	}
	slices.Reverse(idx)
	return idx
}

// Prefixes and suffixes of the user messages that carry summaries, as pi
// writes them.
const (
	CompactionSummaryPrefix = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
	CompactionSummarySuffix = "\n</summary>"
	BranchSummaryPrefix     = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
	BranchSummarySuffix     = "</summary>"
	// MissingToolResult is the text of a synthetic result for a tool call
	// that has none.
	MissingToolResult = "No result provided"
)

// Context rebuilds the model context for the next turn from a transcript:
// the branch ending at the last entry, from the latest compaction on (its
// summary first), with transcript hygiene applied to tool calls. The
// messages own their content: editing them leaves entries unchanged.
func Context(entries []Entry) []engine.Message {
	items := ContextItems(entries)
	if items == nil {
		return nil
	}
	msgs := make([]engine.Message, len(items))
	for i := range items {
		msgs[i] = items[i].Message
	}
	return msgs
}

// ContextItem is one message of the model context and the id of the
// transcript entry it comes from ("" for a compaction summary and for a
// synthetic tool result): compaction names its first kept entry by it.
type ContextItem struct {
	Message engine.Message
	EntryID string
}

// ContextItems is Context with the entry id of every message.
func ContextItems(entries []Entry) []ContextItem {
	if len(entries) == 0 {
		return nil
	}
	path := pathIndex(entries, ActiveLeaf(entries))
	boundary := -1 // the latest reset or compaction on the path
	for i, j := range path {
		if t := entries[j].Type; t == EntryCompaction || t == EntryReset {
			boundary = i
		}
	}
	items := make([]ContextItem, 0, len(path)+1)
	if boundary < 0 {
		for _, j := range path {
			items = appendContext(items, &entries[j])
		}
		return hygiene(items)
	}
	c := &entries[path[boundary]]
	if c.Type == EntryCompaction {
		items = append(items, ContextItem{Message: summaryMessage(CompactionSummaryPrefix+c.Summary+CompactionSummarySuffix, c.Timestamp)})
	}
	kept := false
	for _, j := range path[:boundary] {
		e := &entries[j]
		if e.ID == c.FirstKeptEntryID {
			kept = true
		}
		if !kept {
			continue
		}
		// Before a reset only the conversation itself is kept (OpenClaw's
		// selectResetKeptEntries); hygiene drops the unpaired results.
		if c.Type == EntryReset && (e.Type != EntryMessage || e.Message == nil ||
			(e.Message.Role != engine.RoleUser && e.Message.Role != engine.RoleAssistant && e.Message.Role != engine.RoleToolResult)) {
			continue
		}
		items = appendContext(items, e)
	}
	for _, j := range path[boundary+1:] {
		items = appendContext(items, &entries[j])
	}
	return hygiene(items)
}

// appendContext appends what e contributes to the model context.
func appendContext(items []ContextItem, e *Entry) []ContextItem {
	switch e.Type {
	case EntryMessage:
		// A failed or stopped turn's assistant entry (the "⚠️ …" error
		// note, the note closing a turn a crash interrupted, a partial reply
		// cut by an error or /stop) is for the user to see, never for the
		// model: it would read our error text as its own words. pi skips
		// them the same way.
		if e.Message == nil || e.Message.Role == engine.RoleAssistant &&
			(e.Message.StopReason == engine.StopError || e.Message.StopReason == engine.StopAborted) {
			break
		}
		if e.excluded() {
			break
		}
		m := *e.Message
		m.Content = slices.Clone(m.Content)
		if m.Usage != nil {
			u := *m.Usage
			m.Usage = &u
		}
		switch m.Role {
		case engine.RoleUser, engine.RoleAssistant, engine.RoleToolResult:
		case RoleCustom:
			// OpenClaw's convertToLlm: a custom message is the user's.
			m = engine.Message{Role: engine.RoleUser, Content: m.Content, Timestamp: m.Timestamp}
		case RoleBashExecution:
			m = engine.Message{Role: engine.RoleUser, Content: []engine.Block{engine.TextBlock(bashText(e.rawMessage))}, Timestamp: m.Timestamp}
		default:
			return items
		}
		// A reply continued after the output limit ([continue] rounds
		// are custom entries, not in the context) is one message to
		// the model: its parts are joined.
		if n := len(items); n > 0 && m.Role == engine.RoleAssistant && continuable(&items[n-1].Message) {
			prev := &items[n-1].Message
			prev.Content = append(prev.Content, m.Content...)
			prev.StopReason, prev.Usage = m.StopReason, m.Usage
			break
		}
		items = append(items, ContextItem{Message: m, EntryID: e.ID})
	case EntryCustomMessage:
		blocks, err := contentBlocks(e.Content)
		if err == nil {
			items = append(items, ContextItem{Message: engine.Message{Role: engine.RoleUser, Content: blocks, Timestamp: millis(e.Timestamp)}, EntryID: e.ID})
		}
	case EntryBranchSummary:
		if e.Summary != "" {
			items = append(items, ContextItem{Message: summaryMessage(BranchSummaryPrefix+e.Summary+BranchSummarySuffix, e.Timestamp), EntryID: e.ID})
		}
	}
	return items
}

// excluded reports a message OpenClaw keeps out of the model context
// ("excludeFromContext": true, e.g. a command's own output).
func (e *Entry) excluded() bool {
	if !bytes.Contains(e.rawMessage, []byte(`"excludeFromContext"`)) {
		return false
	}
	var m struct {
		Exclude bool `json:"excludeFromContext"`
	}
	return json.Unmarshal(e.rawMessage, &m) == nil && m.Exclude
}

// bashText renders a bashExecution message as OpenClaw shows it to the
// model (bashExecutionToText).
func bashText(raw json.RawMessage) string {
	var m struct {
		Command        string `json:"command"`
		Output         string `json:"output"`
		Cancelled      bool   `json:"cancelled"`
		ExitCode       *int   `json:"exitCode"`
		Truncated      bool   `json:"truncated"`
		FullOutputPath string `json:"fullOutputPath"`
	}
	_ = json.Unmarshal(raw, &m) // decoded before; a field of another type reads as empty
	var b strings.Builder
	fmt.Fprintf(&b, "Ran `%s`\n", m.Command)
	if m.Output != "" {
		fmt.Fprintf(&b, "```\n%s\n```", m.Output)
	} else {
		b.WriteString("(no output)")
	}
	if m.Cancelled {
		b.WriteString("\n\n(command cancelled)")
	} else if m.ExitCode != nil && *m.ExitCode != 0 {
		fmt.Fprintf(&b, "\n\nCommand exited with code %d", *m.ExitCode)
	}
	if m.Truncated && m.FullOutputPath != "" {
		fmt.Fprintf(&b, "\n\n[Output truncated. Full output: %s]", m.FullOutputPath)
	}
	return b.String()
}

// continuable reports whether m is an assistant reply cut at the output
// limit without tool calls: the next assistant message continues it.
func continuable(m *engine.Message) bool {
	return m.Role == engine.RoleAssistant && m.StopReason == engine.StopLength && len(m.ToolCalls()) == 0
}

func summaryMessage(text, ts string) engine.Message {
	return engine.Message{Role: engine.RoleUser, Content: []engine.Block{engine.TextBlock(text)}, Timestamp: millis(ts)}
}

// contentBlocks reads custom_message content: a string or a block list.
func contentBlocks(raw json.RawMessage) ([]engine.Block, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New("missing")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []engine.Block{engine.TextBlock(s)}, nil
	}
	var blocks []engine.Block
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, errors.New("want a string or a list of content blocks")
	}
	return blocks, nil
}

// hygiene pairs tool calls with results: a call without a result gets a
// synthetic error result after the results that exist; a result that
// answers no pending call is dropped.
func hygiene(in []ContextItem) []ContextItem {
	if paired(in) {
		return in // the common case: nothing to repair, nothing to copy
	}
	out := make([]ContextItem, 0, len(in)+1)
	var pending []engine.ToolCall // calls of the latest assistant message still unanswered
	var ts int64
	flush := func() {
		for _, c := range pending {
			out = append(out, ContextItem{Message: engine.Message{
				Role:       engine.RoleToolResult,
				Content:    []engine.Block{engine.TextBlock(MissingToolResult)},
				ToolCallID: c.ID,
				ToolName:   c.Name,
				IsError:    true,
				Timestamp:  ts,
			}})
		}
		pending = nil
	}
	for _, it := range in {
		m := &it.Message
		switch m.Role {
		case engine.RoleToolResult:
			i := slices.IndexFunc(pending, func(c engine.ToolCall) bool { return c.ID == m.ToolCallID })
			if i < 0 {
				continue
			}
			pending = slices.Delete(pending, i, i+1)
			out = append(out, it)
		case engine.RoleAssistant:
			flush()
			out = append(out, it)
			pending = m.ToolCalls()
			ts = m.Timestamp
		default:
			flush()
			out = append(out, it)
		}
	}
	flush()
	return out
}

// paired reports whether every tool call in items is answered exactly
// once, right after its assistant message, and every result answers a call.
func paired(items []ContextItem) bool {
	var pending []string
	for i := range items {
		m := &items[i].Message
		switch m.Role {
		case engine.RoleToolResult:
			j := slices.Index(pending, m.ToolCallID)
			if j < 0 {
				return false
			}
			pending = slices.Delete(pending, j, j+1)
		default:
			if len(pending) > 0 {
				return false
			}
			if m.Role == engine.RoleAssistant {
				for _, b := range m.Content {
					if b.Type == engine.BlockToolCall {
						pending = append(pending, b.ID)
					}
				}
			}
		}
	}
	return len(pending) == 0
}

// millis converts a transcript timestamp to Unix milliseconds, 0 if it does
// not parse.
func millis(ts string) int64 {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return 0
	}
	return t.UnixMilli()
}

// object builds a JSON object with keys in insertion order.
type object struct {
	buf bytes.Buffer
	err error
}

func (o *object) key(k string) {
	if o.buf.Len() == 0 {
		o.buf.WriteByte('{')
	} else {
		o.buf.WriteByte(',')
	}
	kb, _ := json.Marshal(k)
	o.buf.Write(kb)
	o.buf.WriteByte(':')
}

func (o *object) add(k string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		if o.err == nil {
			o.err = fmt.Errorf("%s: %w", k, err)
		}
		return
	}
	o.key(k)
	o.buf.Write(b)
}

func (o *object) raw(k string, v json.RawMessage) {
	if !json.Valid(v) {
		if o.err == nil {
			o.err = fmt.Errorf("%s: invalid JSON", k)
		}
		return
	}
	o.key(k)
	json.Compact(&o.buf, v)
}

func (o *object) rawOpt(k string, v json.RawMessage) {
	if len(v) > 0 {
		o.raw(k, v)
	}
}

// extra adds the fields of m not in known, sorted by key.
func (o *object) extra(m map[string]json.RawMessage, known []string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		if !slices.Contains(known, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		o.raw(k, m[k])
	}
}

func (o *object) bytes() ([]byte, error) {
	if o.err != nil {
		return nil, o.err
	}
	if o.buf.Len() == 0 {
		o.buf.WriteByte('{')
	}
	o.buf.WriteByte('}')
	return o.buf.Bytes(), nil
}

// takeFields decodes the named fields of m into their targets. A JSON null
// leaves the target at its zero value.
func takeFields(m map[string]json.RawMessage, fields map[string]any) error {
	for k, dst := range fields {
		raw, ok := m[k]
		if !ok || string(raw) == "null" {
			continue
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			return fmt.Errorf("field %q: %w", k, typeError(err))
		}
	}
	return nil
}

func typeError(err error) error {
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Errorf("%s: want %s, got a JSON %s", te.Field, te.Type, te.Value)
		}
		return fmt.Errorf("want %s, got a JSON %s", te.Type, te.Value)
	}
	return err
}

// rest returns the fields of m not in known, or nil.
func rest(m map[string]json.RawMessage, known []string) map[string]json.RawMessage {
	var out map[string]json.RawMessage
	for k, v := range m {
		if slices.Contains(known, k) {
			continue
		}
		if out == nil {
			out = map[string]json.RawMessage{}
		}
		out[k] = v
	}
	return out
}

func orNull(raw json.RawMessage) json.RawMessage {
	if len(strings.TrimSpace(string(raw))) == 0 {
		return json.RawMessage("null")
	}
	return raw
}
