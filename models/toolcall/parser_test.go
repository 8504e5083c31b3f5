package toolcall

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
)

type parseCase struct {
	name    string
	family  Family
	in      string
	text    string
	calls   []string // "name args"
	wantErr error    // ErrTruncated, ErrMalformed or nil
}

var parseCases = []parseCase{
	{name: "plain text", in: "Hello there! 2 < 3 and `x`.", text: "Hello there! 2 < 3 and `x`."},
	{name: "empty", in: "", text: ""},
	{name: "hermes call", in: "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.md\"}}\n</tool_call>",
		calls: []string{`read {"path":"a.md"}`}},
	{name: "text before and after", in: "Let me check.\n<tool_call>{\"name\":\"read\",\"arguments\":{}}</tool_call>\nDone.",
		text: "Let me check.\nDone.", calls: []string{`read {}`}},
	{name: "several calls", in: "<tool_call>{\"name\":\"a\",\"arguments\":{\"x\":1}}</tool_call>\n<tool_call>{\"name\":\"b\",\"arguments\":{\"y\":[1,2]}}</tool_call>",
		calls: []string{`a {"x":1}`, `b {"y":[1,2]}`}},
	{name: "two objects in one tag", in: "<tool_call>\n{\"name\":\"a\",\"arguments\":{}}\n{\"name\":\"b\",\"arguments\":{}}\n</tool_call>",
		calls: []string{`a {}`, `b {}`}},
	{name: "array in tag", in: "<tool_call>[{\"name\":\"a\",\"arguments\":{}},{\"name\":\"b\",\"arguments\":{}}]</tool_call>",
		calls: []string{`a {}`, `b {}`}},
	{name: "stray text between", in: "First <tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call> then <tool_call>{\"name\":\"b\",\"arguments\":{}}</tool_call> end",
		text: "First then end", calls: []string{`a {}`, `b {}`}},
	{name: "fence inside tags", in: "<tool_call>\n```json\n{\"name\": \"a\", \"arguments\": {\"q\": \"x\"}}\n```\n</tool_call>",
		calls: []string{`a {"q":"x"}`}},
	{name: "fence instead of tags", in: "Sure.\n```json\n{\"name\": \"a\", \"arguments\": {\"q\": \"x\"}}\n```",
		text: "Sure.", calls: []string{`a {"q":"x"}`}},
	{name: "fence around tags", in: "```\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n```",
		calls: []string{`a {}`}},
	{name: "json fence that is not a call", in: "Here:\n```json\n{\"city\": \"Paris\"}\n```\nok",
		text: "Here:\n```json\n{\"city\": \"Paris\"}\n```\nok"},
	{name: "code fence passes through", in: "```python\nprint('<tool_call>')\n```\nafter",
		text: "```python\nprint('<tool_call>')\n```\nafter"},
	{name: "parameters key", in: "<tool_call>{\"name\":\"a\",\"parameters\":{\"k\":\"v\"}}</tool_call>", calls: []string{`a {"k":"v"}`}},
	{name: "arguments as JSON string", in: "<tool_call>{\"name\":\"a\",\"arguments\":\"{\\\"k\\\": 2}\"}</tool_call>", calls: []string{`a {"k":2}`}},
	{name: "openai shape", in: "<tool_call>{\"type\":\"function\",\"function\":{\"name\":\"a\",\"arguments\":\"{}\"}}</tool_call>", calls: []string{`a {}`}},
	{name: "missing arguments", in: "<tool_call>{\"name\":\"a\"}</tool_call>", calls: []string{`a {}`}},
	{name: "lenient JSON", in: "<tool_call>{'name': 'a', arguments: {'q': 'it''s', 'n': [1, 2,], 'ok': True, 'z': None,},}</tool_call>",
		wantErr: ErrMalformed},
	{name: "single quotes and trailing commas", in: "<tool_call>{'name': 'a', arguments: {'q': \"it's\", 'n': [1, 2,], 'ok': True, 'z': None,},}</tool_call>",
		calls: []string{`a {"q":"it's","n":[1,2],"ok":true,"z":null}`}},
	{name: "raw newline in string", in: "<tool_call>{\"name\":\"write\",\"arguments\":{\"text\":\"line1\nline2\"}}</tool_call>",
		calls: []string{`write {"text":"line1\nline2"}`}},
	{name: "unknown tool kept", in: "<tool_call>{\"name\":\"no_such_tool\",\"arguments\":{}}</tool_call>", calls: []string{`no_such_tool {}`}},
	{name: "key order kept", in: "<tool_call>{\"name\":\"a\",\"arguments\":{\"z\":1,\"a\":2}}</tool_call>", calls: []string{`a {"z":1,"a":2}`}},
	{name: "unterminated complete", in: "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}", calls: []string{`a {"x":1}`}},
	{name: "unterminated then text", in: "<tool_call>{\"name\": \"a\", \"arguments\": {}}\nI called it.", text: "I called it.", calls: []string{`a {}`}},
	{name: "truncated", in: "Checking.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": \"abc", text: "Checking.", wantErr: ErrTruncated},
	{name: "truncated right after tag", in: "Checking. <tool_call>", text: "Checking.", wantErr: ErrTruncated},
	{name: "forgotten closing tag", in: "<tool_call>{\"name\":\"a\",\"arguments\":{}}\n<tool_call>{\"name\":\"b\",\"arguments\":{}}</tool_call>",
		calls: []string{`a {}`, `b {}`}},
	{name: "malformed body", in: "A <tool_call>not json</tool_call> B", text: "A B", wantErr: ErrMalformed},
	{name: "bad arguments", in: "<tool_call>{\"name\":\"a\",\"arguments\":[1]}</tool_call>", wantErr: ErrMalformed},
	{name: "no name", in: "<tool_call>{\"arguments\":{}}</tool_call>", wantErr: ErrMalformed},
	{name: "empty tag", in: "x<tool_call></tool_call>y", text: "xy", wantErr: ErrMalformed},
	{name: "stray closing tag", in: "Hi</tool_call> there", text: "Hi there"},
	{name: "bare JSON call", in: "{\"name\": \"a\", \"arguments\": {\"x\": 1}}", calls: []string{`a {"x":1}`}},
	{name: "bare JSON not a call", in: "{\"answer\": 42}", text: "{\"answer\": 42}"},
	{name: "bare JSON later is text", in: "Result: {\"name\": \"a\", \"arguments\": {}}", text: "Result: {\"name\": \"a\", \"arguments\": {}}"},
	{name: "brace text", in: "{not json} ok", text: "{not json} ok"},
	{name: "bare truncated call", in: "{\"name\": \"a\", \"arguments\": {\"x\"", wantErr: ErrTruncated},
	{name: "bare truncated non-call", in: "{\"answer\": ", text: "{\"answer\": "},
	{name: "llama3 bare", family: FamilyLlama3, in: "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
		calls: []string{`get_weather {"city":"Paris"}`}},
	{name: "llama3 call on its own line", family: FamilyLlama3, in: "I'll check.\n\n{\"name\": \"a\", \"parameters\": {}}",
		text: "I'll check.", calls: []string{`a {}`}},
	{name: "hermes bare JSON after a line is text", family: FamilyHermes, in: "Example:\n{\"name\": \"a\", \"arguments\": {}}",
		text: "Example:\n{\"name\": \"a\", \"arguments\": {}}"},
	{name: "llama3 python tag", family: FamilyLlama3, in: "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {}}",
		calls: []string{`a {}`, `b {}`}},
	{name: "llama3 python code", family: FamilyLlama3, in: "<|python_tag|>brave_search.call(query=\"x\")", text: "brave_search.call(query=\"x\")", wantErr: ErrMalformed},
	{name: "python tag only for llama3", family: FamilyHermes, in: "<|python_tag|>x", text: "<|python_tag|>x"},
	{name: "granite", family: FamilyGranite, in: "<|tool_call|>[{\"name\": \"a\", \"arguments\": {\"x\": 1}}, {\"name\": \"b\", \"arguments\": {}}]",
		calls: []string{`a {"x":1}`, `b {}`}},
	{name: "granite truncated", family: FamilyGranite, in: "ok <|tool_call|>[{\"name\": \"a\"", text: "ok", wantErr: ErrTruncated},
	{name: "granite tag with hermes calls too", family: FamilyGranite, in: "<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call>", calls: []string{`a {}`}},
	{name: "none family is hermes", family: FamilyNone, in: "<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call>", calls: []string{`a {}`}},
	{name: "unicode", in: "Voilà ☕ <tool_call>{\"name\":\"a\",\"arguments\":{\"q\":\"caf\\u00e9 ☕\"}}</tool_call>",
		text: "Voilà ☕", calls: []string{`a {"q":"café ☕"}`}},
}

func (c parseCase) check(t *testing.T, text string, calls []engine.ToolCall, err error) {
	t.Helper()
	if text != c.text {
		t.Errorf("text = %q, want %q", text, c.text)
	}
	var got []string
	for i, call := range calls {
		got = append(got, call.Name+" "+string(call.Arguments))
		if want := fmt.Sprintf("call_%d", i+1); call.ID != want {
			t.Errorf("call %d id = %q, want %q", i, call.ID, want)
		}
	}
	if strings.Join(got, "\n") != strings.Join(c.calls, "\n") {
		t.Errorf("calls =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.calls, "\n"))
	}
	switch {
	case c.wantErr == nil && err != nil:
		t.Errorf("err = %v, want nil", err)
	case c.wantErr != nil && !errors.Is(err, c.wantErr):
		t.Errorf("err = %v, want %v", err, c.wantErr)
	}
}

func TestParse(t *testing.T) {
	for _, c := range parseCases {
		t.Run(c.name, func(t *testing.T) {
			text, calls, err := Parse(c.family, c.in)
			c.check(t, text, calls, err)
		})
	}
}

// TestParserStreaming feeds every case byte by byte and in random pieces:
// the result must equal Parse's, and no visible piece may carry markup.
func TestParserStreaming(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range parseCases {
		t.Run(c.name, func(t *testing.T) {
			for round := range 20 {
				p := NewParser(c.family)
				var text strings.Builder
				rest := c.in
				for rest != "" {
					n := 1
					if round > 0 {
						n = 1 + rng.IntN(len(rest))
					}
					vis := p.Write(rest[:n])
					if len(c.calls) > 0 && (strings.Contains(vis, "<tool_call>") || strings.Contains(vis, `"name"`)) {
						t.Fatalf("visible piece %q leaks call markup", vis)
					}
					text.WriteString(vis)
					rest = rest[n:]
				}
				vis, calls := p.Close()
				text.WriteString(vis)
				c.check(t, text.String(), calls, p.Err())
			}
		})
	}
}

// TestParserVisibleEarly: text is released as soon as it cannot be markup.
func TestParserVisibleEarly(t *testing.T) {
	p := NewParser(FamilyHermes)
	steps := []struct{ in, want string }{
		{"Hello", "Hello"},
		{" wor", " wor"},
		{"ld <tool", "ld"},
		{"_call>{\"name\":", ""},
		{"\"a\",\"arguments\":{}}</tool_call> Bye", " Bye"},
		{"!", "!"},
	}
	for _, s := range steps {
		if got := p.Write(s.in); got != s.want {
			t.Fatalf("Write(%q) = %q, want %q", s.in, got, s.want)
		}
	}
	vis, calls := p.Close()
	if vis != "" || len(calls) != 1 || calls[0].Name != "a" {
		t.Fatalf("Close = %q, %v", vis, calls)
	}
}

// FuzzParse: no input makes the parser panic, and any split of the input
// gives the batch result.
func FuzzParse(f *testing.F) {
	for _, c := range parseCases {
		f.Add(uint8(c.family), c.in, uint16(7))
	}
	f.Fuzz(func(t *testing.T, fam uint8, in string, seed uint16) {
		family := Family(fam % 4)
		text, calls, err := Parse(family, in)
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(len(in))))
		p := NewParser(family)
		var got strings.Builder
		rest := in
		for rest != "" {
			n := 1 + rng.IntN(len(rest))
			got.WriteString(p.Write(rest[:n]))
			rest = rest[n:]
		}
		vis, calls2 := p.Close()
		got.WriteString(vis)
		if got.String() != text {
			t.Fatalf("streamed text %q != batch text %q", got.String(), text)
		}
		if fmt.Sprint(calls) != fmt.Sprint(calls2) {
			t.Fatalf("streamed calls %v != batch calls %v", calls2, calls)
		}
		if fmt.Sprint(err) != fmt.Sprint(p.Err()) {
			t.Fatalf("streamed err %v != batch err %v", p.Err(), err)
		}
		for _, c := range calls {
			if c.Name == "" || len(c.Arguments) == 0 || c.Arguments[0] != '{' {
				t.Fatalf("bad call %+v", c)
			}
		}
	})
}
