package transcript

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/transcriptfmt"
)

// Export writes h and entries as a transcript of version v (see
// ExportVersions): the header says v, the entries are written as they are.
func Export(w io.Writer, h Header, entries []Entry, v int) error {
	if !slices.Contains(ExportVersions, v) {
		return fmt.Errorf("cannot write transcript version %d: want 3 or 4", v)
	}
	h.Version = v
	return Write(w, h, entries)
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
	var o transcriptfmt.Object
	o.Add("type", e.Type)
	o.Add("id", e.ID)
	if e.ParentID == "" {
		o.Raw("parentId", json.RawMessage("null"))
	} else {
		o.Add("parentId", e.ParentID)
	}
	o.Add("timestamp", e.Timestamp)
	switch e.Type {
	case EntryMessage:
		if e.Message == nil {
			return nil, fmt.Errorf("message entry %s has no message", e.ID)
		}
		if raw := e.rawMessage; raw != nil {
			if m, err := decodeMessage(raw); err == nil && reflect.DeepEqual(m, *e.Message) {
				o.Raw("message", raw)
				break
			}
		}
		o.Add("message", e.Message)
	case EntryCustomMessage:
		o.Add("customType", e.CustomType)
		o.Raw("content", orNull(e.Content))
		o.Add("display", e.Display)
		o.RawOpt("details", e.Details)
	case EntryCustom:
		o.Add("customType", e.CustomType)
		o.RawOpt("data", e.Data)
	case EntryCompaction:
		o.Add("summary", e.Summary)
		o.Add("firstKeptEntryId", e.FirstKeptEntryID)
		o.Add("tokensBefore", e.TokensBefore)
		o.RawOpt("details", e.Details)
	case EntryBranchSummary:
		o.Add("fromId", e.FromID)
		o.Add("summary", e.Summary)
		o.RawOpt("details", e.Details)
	case EntryModelChange:
		o.Add("provider", e.Provider)
		o.Add("modelId", e.ModelID)
	case EntryThinkingLevelChange:
		o.Add("thinkingLevel", e.ThinkingLevel)
	case EntryLabel:
		o.Add("targetId", e.TargetID)
		if e.Label != "" {
			o.Add("label", e.Label)
		}
	case EntryReset:
		o.Add("reason", e.Reason)
		if e.FirstKeptEntryID != "" {
			o.Add("firstKeptEntryId", e.FirstKeptEntryID)
		}
	}
	o.Extra(e.Extra, append(commonKeys, fieldsOf[e.Type]...))
	return o.Bytes()
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
	if err := transcriptfmt.TakeFields(m, map[string]any{
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
	if err := transcriptfmt.TakeFields(m, fields); err != nil {
		return err
	}
	// Raw values are copies already (json.Unmarshal copies into
	// json.RawMessage); they are compacted when written.
	out.Extra = transcriptfmt.Rest(m, append(commonKeys, fieldsOf[out.Type]...))
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
		return msg, transcriptfmt.TypeError(err)
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
		return engine.Message{}, transcriptfmt.TypeError(err)
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
		return engine.Message{}, fmt.Errorf("content: %w", transcriptfmt.TypeError(err))
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

func orNull(raw json.RawMessage) json.RawMessage {
	if len(strings.TrimSpace(string(raw))) == 0 {
		return json.RawMessage("null")
	}
	return raw
}
