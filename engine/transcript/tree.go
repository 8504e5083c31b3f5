package transcript

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/transcriptfmt"
)

// checkEntry validates e against the ids seen so far.
func checkEntry(e Entry, seen map[string]bool) error {
	if e.ID == "" {
		return fmt.Errorf("%s entry has no id", e.Type)
	}
	if len(e.ID) > MaxIDBytes {
		return fmt.Errorf("entry id %s is %d bytes long, the limit is %d", transcriptfmt.QuoteShort(e.ID), len(e.ID), MaxIDBytes)
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
