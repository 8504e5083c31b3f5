package toolcall

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/openclaw-edge/edge/engine"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

var testTools = []engine.ToolSpec{
	{
		Name:        "read",
		Description: "Read a file from the workspace.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"Workspace path","pattern":"^[^/].*$","maxLength":4096},"limit":{"type":"integer","minimum":1,"maximum":2000}},"required":["path"],"additionalProperties":false}`),
	},
	{
		Name:        "message",
		Description: "Send a message <to> someone & wait.",
		Parameters:  json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"to":{"type":"string","format":"email","title":"Recipient"},"text":{"type":"string","maxLength":100},"attachments":{"type":"array","items":{"type":"string","format":"uri"},"maxItems":100000}},"required":["to","text"]}`),
	},
	{Name: "status", Description: "Show status."},
}

func TestToolsSystemPrompt(t *testing.T) {
	checkGolden(t, "tools_system_prompt", ToolsSystemPrompt(testTools))
	if ToolsSystemPrompt(nil) != "" {
		t.Error("ToolsSystemPrompt(nil) is not empty")
	}
}

// TestToolsSystemPromptRoundTrip: a call written as the prompt asks parses.
func TestToolsSystemPromptRoundTrip(t *testing.T) {
	calls := []engine.ToolCall{{ID: "call_1", Name: "read", Arguments: json.RawMessage(`{"path":"a.md"}`)}}
	for _, f := range []Family{FamilyNone, FamilyHermes, FamilyLlama3, FamilyGranite} {
		text, got, err := Parse(f, "Reading.\n"+FormatCalls(f, calls))
		if err != nil || text != "Reading." || len(got) != 1 || got[0].Name != "read" || string(got[0].Arguments) != `{"path":"a.md"}` {
			t.Errorf("%v: Parse(FormatCalls) = %q, %v, %v", f, text, got, err)
		}
	}
}

func TestFormatCalls(t *testing.T) {
	calls := []engine.ToolCall{
		{ID: "1", Name: "a", Arguments: json.RawMessage(`{"x":1,"b":"é"}`)},
		{ID: "2", Name: "b", Arguments: json.RawMessage(`oops`)},
	}
	tests := []struct {
		family Family
		want   string
	}{
		{FamilyHermes, "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1, \"b\": \"é\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>"},
		{FamilyLlama3, `{"name": "a", "parameters": {"x": 1, "b": "é"}}; {"name": "b", "parameters": {}}`},
		{FamilyGranite, `<|tool_call|>[{"name": "a", "arguments": {"x": 1, "b": "é"}}, {"name": "b", "arguments": {}}]`},
	}
	for _, tt := range tests {
		if got := FormatCalls(tt.family, calls); got != tt.want {
			t.Errorf("FormatCalls(%v) =\n%s\nwant\n%s", tt.family, got, tt.want)
		}
	}
}

func TestDetectFamily(t *testing.T) {
	tests := []struct {
		src  string
		want Family
	}{
		{`{{ '<tool_call>\n' }}`, FamilyHermes},
		{`{{ '<|tool_call|>' }}<|start_header_id|>`, FamilyGranite},
		{`<|start_header_id|>{{ '"parameters": ' }}`, FamilyLlama3},
		{`{{ '<|python_tag|>' }}`, FamilyLlama3},
		{`<|im_start|>{{ m.content }}`, FamilyHermes},
		{`<start_of_turn>{{ m.content }}`, FamilyNone},
	}
	for _, tt := range tests {
		if got := DetectFamily(tt.src); got != tt.want {
			t.Errorf("DetectFamily(%q) = %v, want %v", tt.src, got, tt.want)
		}
	}
}

func TestSimplifySchema(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"type":"string","pattern":"^a+$","format":"email","maxLength":100}`, `{"type":"string","maxLength":100}`},
		{`{"type":"string","maxLength":100000,"minLength":1}`, `{"type":"string","minLength":1}`},
		{`{"type":"object","properties":{"pattern":{"type":"string","pattern":"x","description":"a property named pattern"}}}`,
			`{"type":"object","properties":{"pattern":{"type":"string","description":"a property named pattern"}}}`},
		{`{"anyOf":[{"type":"string","format":"date"},{"type":"array","items":{"type":"string","pattern":"x"},"maxItems":1000}]}`,
			`{"anyOf":[{"type":"string"},{"type":"array","items":{"type":"string"}}]}`},
		{`{"$defs":{"a":{"type":"string","pattern":"x"}},"$ref":"#/$defs/a"}`, `{"$defs":{"a":{"type":"string"}},"$ref":"#/$defs/a"}`},
		{`{"enum":["pattern","format"],"default":"x"}`, `{"enum":["pattern","format"],"default":"x"}`},
		{`not json`, `not json`},
		{`[1,2]`, `[1,2]`},
	}
	for _, tt := range tests {
		if got := string(SimplifySchema(json.RawMessage(tt.in))); got != tt.want {
			t.Errorf("SimplifySchema(%s) =\n%s\nwant\n%s", tt.in, got, tt.want)
		}
	}
}

func TestCallSchema(t *testing.T) {
	got := CallSchema(testTools)
	if !json.Valid(got) {
		t.Fatalf("CallSchema is not valid JSON: %s", got)
	}
	var pretty map[string]any
	if err := json.Unmarshal(got, &pretty); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "call_schema", string(got)+"\n")
	if CallSchema(nil) != nil {
		t.Error("CallSchema(nil) is not nil")
	}
	one := CallSchema(testTools[2:])
	if want := `{"type":"object","properties":{"name":{"const":"status"},"arguments":{"type":"object"}},"required":["name","arguments"],"additionalProperties":false}`; string(one) != want {
		t.Errorf("CallSchema(one tool) =\n%s\nwant\n%s", one, want)
	}
}

func TestLenientJSON(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{`{"a": 1, "b": [true, false, null]}`, `{"a":1,"b":[true,false,null]}`, ""},
		{`{'a': 'x', b: "y",}`, `{"a":"x","b":"y"}`, ""},
		{`{"a": True, "b": None, "c": False}`, `{"a":true,"b":null,"c":false}`, ""},
		{`{"a": .5, "b": 1., "c": +2, "d": -0.0, "e": 1e3}`, `{"a":0.5,"b":1,"c":2,"d":-0.0,"e":1e3}`, ""},
		{`{"a": "\u00e9\ud83d\ude00\n\"\/"}`, `{"a":"é😀\n\"/"}`, ""},
		{`{"a": "<&>"}`, `{"a":"<&>"}`, ""},
		{`{"a": 1, "a": 2}`, `{"a":2}`, ""},
		{`{"a": [1, 2`, ``, "end"},
		{`{"a": nope}`, ``, "unexpected word"},
		{`{"a" 1}`, ``, "expected ':'"},
		{`{"a": 1}}`, ``, "trailing"},
		{`{"a": 0x10}`, ``, "expected ','"},
	}
	for _, tt := range tests {
		v, err := parseDocument(tt.in)
		switch {
		case tt.err != "":
			if err == nil || !contains(err.Error(), tt.err) {
				t.Errorf("parseDocument(%s) err = %v, want %q", tt.in, err, tt.err)
			}
		case err != nil:
			t.Errorf("parseDocument(%s): %v", tt.in, err)
		case v.String() != tt.want:
			t.Errorf("parseDocument(%s) = %s, want %s", tt.in, v.String(), tt.want)
		}
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}
