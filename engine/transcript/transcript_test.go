package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// jsonLines decodes every non-empty line of b as a JSON value.
func jsonLines(t testing.TB, b []byte) []any {
	t.Helper()
	var out []any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, MaxLineBytes)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var v any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("line %d not JSON: %v", len(out)+1, err)
		}
		out = append(out, v)
	}
	return out
}

func parseFile(t *testing.T, name string) (Header, []Entry, []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	h, entries, err := Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("Parse %s: %v", name, err)
	}
	return h, entries, b
}

// Import then export keeps every line as the same JSON value, including
// unknown entry types, unknown fields and message fields engine.Message
// does not model.
func TestRoundTripLossless(t *testing.T) {
	for _, name := range []string{"openclaw.jsonl", "branch.jsonl", "v4.jsonl"} {
		t.Run(name, func(t *testing.T) {
			h, entries, in := parseFile(t, name)
			var out bytes.Buffer
			if err := Write(&out, h, entries); err != nil {
				t.Fatal(err)
			}
			want, got := jsonLines(t, in), jsonLines(t, out.Bytes())
			if len(want) != len(got) {
				t.Fatalf("wrote %d lines, want %d", len(got), len(want))
			}
			for i := range want {
				if !reflect.DeepEqual(want[i], got[i]) {
					w, _ := json.Marshal(want[i])
					g, _ := json.Marshal(got[i])
					t.Errorf("line %d changed:\n got %s\nwant %s", i+1, g, w)
				}
			}
		})
	}
}

func TestParseFields(t *testing.T) {
	h, entries, _ := parseFile(t, "openclaw.jsonl")
	if h.ID != "0b6c3f52-8d2e-4c43-9a51-2f1c6a7e9d10" || h.Version != 3 || h.Cwd != "/home/pi/.openclaw/workspace" {
		t.Errorf("header = %+v", h)
	}
	if _, ok := h.Extra["futureHeaderField"]; !ok {
		t.Errorf("header lost its unknown field: %+v", h.Extra)
	}
	byID := map[string]Entry{}
	for _, e := range entries {
		byID[e.ID] = e
	}
	if e := byID["a1b2c3d4"]; e.Provider != "local" || e.ModelID != "qwen3-1.7b" || e.ParentID != "" {
		t.Errorf("model_change = %+v", e)
	}
	if e := byID["10000001"]; e.Message.Text() != "What is in notes.txt?" {
		t.Errorf("string content not read as a text block: %+v", e.Message)
	}
	if e := byID["10000002"]; e.Message.Usage == nil || e.Message.Usage.TotalTokens != 135 || len(e.Message.ToolCalls()) != 1 {
		t.Errorf("assistant = %+v", e.Message)
	}
	if e := byID["30000001"]; e.Summary == "" || e.FirstKeptEntryID != "10000004" || e.TokensBefore != 4096 || string(e.Details) != `{"readFiles":["notes.txt"]}` || string(e.Extra["fromHook"]) != "false" {
		t.Errorf("compaction = %+v", e)
	}
	if e := byID["20000004"]; e.Type != "session_info" || string(e.Extra["name"]) != `"groceries"` {
		t.Errorf("unknown entry = %+v", e)
	}
	if e := byID["20000003"]; e.TargetID != "10000004" || e.Label != "milk" {
		t.Errorf("label = %+v", e)
	}
}

// A message changed after reading is written from the struct, not from the
// raw JSON it was read from.
func TestModifiedMessageReencoded(t *testing.T) {
	_, entries, _ := parseFile(t, "openclaw.jsonl")
	e := entries[3] // user message with string content
	e.Message.Content = []engine.Block{engine.TextBlock("changed")}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"content":[{"type":"text","text":"changed"}]`) {
		t.Errorf("modified message not re-encoded: %s", b)
	}
}

func TestParseVersion1(t *testing.T) {
	h, entries, _ := parseFile(t, "v1.jsonl")
	if h.Version != 1 || len(entries) != 2 {
		t.Fatalf("header %+v, %d entries", h, len(entries))
	}
	if entries[0].ID == "" || entries[0].ParentID != "" || entries[1].ParentID != entries[0].ID {
		t.Errorf("v1 entries not chained: %+v", entries)
	}
}

func TestParseErrors(t *testing.T) {
	head := `{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":""}` + "\n"
	user := func(id, parent string) string {
		p := "null"
		if parent != "" {
			p = `"` + parent + `"`
		}
		return `{"type":"message","id":"` + id + `","parentId":` + p + `,"timestamp":"t","message":{"role":"user","content":[]}}` + "\n"
	}
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "line 1: empty transcript"},
		{"blank only", "\n\n", "empty transcript"},
		{"not json", "{nope\n", "line 1: header"},
		{"entry first", user("a", ""), `line 1: first line must be the session header`},
		{"version 5", `{"type":"session","version":5,"id":"s"}` + "\n", "line 1: unsupported transcript version 5 (want 1..4): a newer OpenClaw"},
		{"version 0", `{"type":"session","version":0,"id":"s"}` + "\n", "unsupported transcript version 0"},
		{"no session id", `{"type":"session","version":3}` + "\n", "line 1: header has no session id"},
		{"no id", head + `{"type":"message","parentId":null,"message":{"role":"user","content":[]}}` + "\n", "line 2: message entry has no id"},
		{"duplicate id", head + user("a", "") + "\n" + user("a", ""), `line 4: duplicate entry id "a"`},
		{"forward parent", head + user("a", "b") + user("b", ""), `line 2: entry a: parentId "b" names no earlier entry`},
		{"bad role", head + `{"type":"message","id":"a","parentId":null,"message":{"role":"system","content":[]}}` + "\n", `line 2: entry a: message role "system"`},
		{"no message", head + `{"type":"message","id":"a","parentId":null}` + "\n", "line 2: message entry has no message"},
		{"bad field type", head + `{"type":"compaction","id":"a","parentId":null,"summary":"s","firstKeptEntryId":"a","tokensBefore":"many"}` + "\n", `line 2: field "tokensBefore"`},
		{"bad content", head + `{"type":"custom_message","id":"a","parentId":null,"customType":"x","content":5,"display":true}` + "\n", "line 2: entry a: content"},
		{"no type", head + `{"id":"a","parentId":null}` + "\n", "line 2: entry has no type"},
		{"second header", head + `{"type":"session","version":3,"id":"t"}` + "\n", "line 2: a second session header"},
		{"array line", head + "[1,2]\n", "line 2:"},
		{"parent not string", head + `{"type":"custom","id":"a","parentId":7,"customType":"x"}` + "\n", `line 2: field "parentId"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Parse(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestParseLongLine(t *testing.T) {
	head := `{"type":"session","version":3,"id":"s"}` + "\n"
	big := `{"type":"custom","id":"a","parentId":null,"customType":"x","data":"` + strings.Repeat("x", MaxLineBytes) + `"}` + "\n"
	_, _, err := Parse(strings.NewReader(head + "\n" + big))
	if err == nil || !strings.Contains(err.Error(), "line 3: longer than") {
		t.Fatalf("err = %v", err)
	}
	// Just under the limit is fine.
	ok := `{"type":"custom","id":"a","parentId":null,"customType":"x","data":"` + strings.Repeat("x", 1<<20) + `"}` + "\n"
	if _, _, err := Parse(strings.NewReader(head + ok)); err != nil {
		t.Fatal(err)
	}
}

func TestIDs(t *testing.T) {
	if id := NewID(); !regexp.MustCompile(`^[0-9a-f]{8}$`).MatchString(id) {
		t.Errorf("NewID() = %q", id)
	}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if id := NewSessionID(); !uuid.MatchString(id) {
		t.Errorf("NewSessionID() = %q", id)
	}
	if a, b := NewSessionID(), NewSessionID(); a == b {
		t.Error("two session ids are equal")
	}
}

func TestMessageEntry(t *testing.T) {
	e := MessageEntry(engine.UserText("hi"))
	if e.Type != EntryMessage || e.ID != "" || e.ParentID != "" || e.Message.Text() != "hi" {
		t.Errorf("MessageEntry = %+v", e)
	}
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`).MatchString(e.Timestamp) {
		t.Errorf("timestamp %q is not RFC 3339 ms UTC", e.Timestamp)
	}
	b, _ := json.Marshal(e)
	if !strings.Contains(string(b), `"parentId":null`) {
		t.Errorf("empty ParentID not written as null: %s", b)
	}
}

func TestPath(t *testing.T) {
	_, entries, _ := parseFile(t, "branch.jsonl")
	ids := func(p []Entry) string {
		var s []string
		for _, e := range p {
			s = append(s, e.ID)
		}
		return strings.Join(s, ",")
	}
	tests := []struct{ leaf, want string }{
		{"00000006", "00000001,00000002,00000004,00000005,00000006"},
		{"00000003", "00000001,00000002,00000003"},
		{"00000001", "00000001"},
		{"missing", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := ids(Path(entries, tt.leaf)); got != tt.want {
			t.Errorf("Path(%q) = %s, want %s", tt.leaf, got, tt.want)
		}
	}
	// A cycle (impossible after Parse) must not hang.
	cyc := []Entry{{ID: "a", ParentID: "b"}, {ID: "b", ParentID: "a"}}
	if p := Path(cyc, "a"); len(p) > 3 {
		t.Errorf("cycle gave %d entries", len(p))
	}
}

// The model context, as JSON, for each testdata transcript.
func TestContextGolden(t *testing.T) {
	for _, name := range []string{"openclaw", "branch", "v1", "v1_compaction", "v2", "v4"} {
		t.Run(name, func(t *testing.T) {
			_, entries, _ := parseFile(t, name+".jsonl")
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(Context(entries)); err != nil {
				t.Fatal(err)
			}
			got := buf.Bytes()
			golden := filepath.Join("testdata", "context_"+name+".golden")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Context differs from %s:\n%s", golden, got)
			}
		})
	}
}

func TestContextRules(t *testing.T) {
	_, entries, _ := parseFile(t, "openclaw.jsonl")
	msgs := Context(entries)
	first := msgs[0].Text()
	if !strings.HasPrefix(first, "The conversation history before this point was compacted into the following summary:\n\n<summary>\n") ||
		!strings.HasSuffix(first, "buy milk.\n</summary>") {
		t.Errorf("summary message = %q", first)
	}
	for _, m := range msgs {
		if m.Role == engine.RoleToolResult && m.ToolCallID == "call_9" {
			t.Error("orphan tool result kept")
		}
	}
	var synthetic *engine.Message
	for i, m := range msgs {
		if m.ToolCallID == "call_2" {
			synthetic = &msgs[i]
			if msgs[i-1].ToolCallID != "call_3" || msgs[i+1].Text() != "Sunny." {
				t.Error("synthetic result not placed after the existing results")
			}
		}
	}
	if synthetic == nil || !synthetic.IsError || synthetic.Text() != MissingToolResult {
		t.Errorf("missing tool result not synthesized: %+v", synthetic)
	}
	if Context(nil) != nil {
		t.Error("Context(nil) != nil")
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"openclaw.jsonl", "branch.jsonl", "v1.jsonl", "v1_compaction.jsonl", "v2.jsonl", "v4.jsonl"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"type":"session","version":4,"id":"s"}` + "\n" + `{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"x"}}` + "\n" + `{"type":"leaf","id":"l","parentId":"a","targetId":null}` + "\n" + `{"type":"reset","id":"r","parentId":"l","reason":"new","firstKeptEntryId":"a"}`))
	f.Add([]byte(`{"type":"session","version":3,"id":"s"}` + "\n" + `{"type":"x","id":"a","parentId":null,"k":[1,{"z":null}]}`))
	f.Add([]byte(`{"type":"session","version":2,"id":"s"}` + "\n" + `{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"\u00e9"}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		h, entries, err := Parse(bytes.NewReader(in))
		if err != nil {
			return
		}
		// Whatever parses can be written, and reads back the same.
		var out bytes.Buffer
		if err := Write(&out, h, entries); err != nil {
			t.Fatalf("Write after Parse: %v", err)
		}
		h2, entries2, err := Parse(bytes.NewReader(out.Bytes()))
		if err != nil {
			t.Fatalf("Parse after Write: %v\n%s", err, out.Bytes())
		}
		var out2 bytes.Buffer
		if err := Write(&out2, h2, entries2); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(jsonLines(t, out.Bytes()), jsonLines(t, out2.Bytes())) {
			t.Fatalf("not stable:\n%s\n%s", out.Bytes(), out2.Bytes())
		}
		_ = Context(entries)
		if len(entries) > 0 {
			_ = Path(entries, entries[len(entries)-1].ID)
		}
	})
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]int{"": 4, "v4": 4, "4": 4, "V3": 3, " v3 ": 3} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"v2", "v5", "json", "v"} {
		if _, err := ParseFormat(in); err == nil || !strings.Contains(err.Error(), "want v3 or v4") {
			t.Errorf("ParseFormat(%q) = %v, want an error", in, err)
		}
	}
}

// Converting between versions 3 and 4 changes the header's version only.
func TestExportVersions(t *testing.T) {
	for _, name := range []string{"openclaw.jsonl", "v4.jsonl"} {
		h, entries, in := parseFile(t, name)
		want := jsonLines(t, in)
		for _, v := range ExportVersions {
			var out bytes.Buffer
			if err := Export(&out, h, entries, v); err != nil {
				t.Fatal(err)
			}
			got := jsonLines(t, out.Bytes())
			if got[0].(map[string]any)["version"] != float64(v) {
				t.Errorf("%s as v%d: header %v", name, v, got[0])
			}
			wantHead := want[0].(map[string]any)
			wantHead["version"] = float64(v)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s as v%d: entries changed", name, v)
			}
			h2, _, err := Parse(&out)
			if err != nil || h2.Version != v {
				t.Errorf("%s as v%d reads back as %d, %v", name, v, h2.Version, err)
			}
		}
	}
	h, entries, _ := parseFile(t, "v4.jsonl")
	if err := Export(io.Discard, h, entries, 2); err == nil {
		t.Error("Export as version 2 succeeded")
	}
}

func TestParseVersion4(t *testing.T) {
	_, entries, _ := parseFile(t, "v4.jsonl")
	byID := map[string]Entry{}
	for _, e := range entries {
		byID[e.ID[len(e.ID)-2:]] = e
	}
	if e := byID["0f"]; e.Type != EntryReset || e.Reason != "daily" || e.FirstKeptEntryID != "6f1e2d3c-0001-4a5b-8c7d-00000000000c" {
		t.Errorf("reset = %+v", e)
	}
	if e := byID["0b"]; e.Reason != "new" || e.FirstKeptEntryID != "" {
		t.Errorf("reset without firstKeptEntryId = %+v", e)
	}
	if e := byID["07"]; e.Message.Role != RoleBashExecution {
		t.Errorf("bashExecution = %+v", e.Message)
	}
	msgs := Context(entries)
	var texts []string
	for _, m := range msgs {
		if m.Role != engine.RoleUser && m.Role != engine.RoleAssistant {
			t.Errorf("role %q in the context", m.Role)
		}
		texts = append(texts, m.Text())
	}
	// The second reset keeps the conversation from its firstKeptEntryId;
	// nothing from before the first reset survives.
	want := []string{"Fresh start: what time is it?", "Nine.", "Good morning"}
	if !reflect.DeepEqual(texts, want) {
		t.Errorf("context after resets = %q, want %q", texts, want)
	}
}

// Before the first reset, custom and bashExecution messages reach the
// model as user text; excluded ones do not.
func TestContextRoles(t *testing.T) {
	_, entries, _ := parseFile(t, "v4.jsonl")
	var cut []Entry
	for _, e := range entries {
		if e.Type == EntryReset {
			break
		}
		cut = append(cut, e)
	}
	var texts []string
	for _, m := range Context(cut) {
		texts = append(texts, m.Text())
	}
	got := strings.Join(texts, "|")
	for _, want := range []string{"Ran `ls`\n```\nnotes.md\n```", "Remember the shopping list."} {
		if !strings.Contains(got, want) {
			t.Errorf("context %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "date") {
		t.Errorf("excluded message in the context: %q", got)
	}
}

// A leaf entry moves the branch: to its target, or to nothing.
func TestLeafEntries(t *testing.T) {
	head := `{"type":"session","version":4,"id":"s"}` + "\n"
	msg := func(id, parent, text string) string {
		p := "null"
		if parent != "" {
			p = `"` + parent + `"`
		}
		return `{"type":"message","id":"` + id + `","parentId":` + p + `,"message":{"role":"user","content":"` + text + `"}}` + "\n"
	}
	tests := []struct {
		name, in string
		want     []string
	}{
		{"back to a", msg("a", "", "A") + msg("b", "a", "B") + `{"type":"leaf","id":"l","parentId":"b","targetId":"a"}` + "\n", []string{"A"}},
		{"then a branch", msg("a", "", "A") + msg("b", "a", "B") + `{"type":"leaf","id":"l","parentId":"b","targetId":"a"}` + "\n" + msg("c", "l", "C"), []string{"A", "C"}},
		{"empty", msg("a", "", "A") + `{"type":"leaf","id":"l","parentId":"a","targetId":null}` + "\n", nil},
		{"side append", msg("a", "", "A") + `{"type":"custom_message","id":"s","parentId":"a","customType":"x","content":"side","display":false,"appendMode":"side"}` + "\n", []string{"A"}},
		{"unknown last", msg("a", "", "A") + `{"type":"future","id":"f","parentId":"a"}` + "\n", []string{"A"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, entries, err := Parse(strings.NewReader(head + tt.in))
			if err != nil {
				t.Fatal(err)
			}
			var texts []string
			for _, m := range Context(entries) {
				texts = append(texts, m.Text())
			}
			if !reflect.DeepEqual(texts, tt.want) {
				t.Errorf("context = %q, want %q", texts, tt.want)
			}
		})
	}
}

// Versions 1 and 2 are migrated as OpenClaw's doctor does.
func TestMigrateOldVersions(t *testing.T) {
	_, entries, _ := parseFile(t, "v1_compaction.jsonl")
	c := entries[4]
	if c.Type != EntryCompaction || c.FirstKeptEntryID != entries[2].ID || c.Extra["firstKeptEntryIndex"] != nil {
		t.Errorf("v1 compaction = %+v, want firstKeptEntryId %s", c, entries[2].ID)
	}
	_, entries, _ = parseFile(t, "v2.jsonl")
	m := entries[1]
	b, _ := json.Marshal(m)
	if m.Message.Role != RoleCustom || !strings.Contains(string(b), `"customType":"hook"`) || !strings.Contains(string(b), `"role":"custom"`) || !strings.Contains(string(b), `"display":true`) {
		t.Errorf("v2 hookMessage = %s", b)
	}
}
