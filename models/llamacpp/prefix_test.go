package llamacpp

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/prompt"
	"github.com/openclaw-edge/edge/models/gguf"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata golden files")

var todayDate = regexp.MustCompile(`Today Date: [0-9]{1,2} [A-Za-z]{3} [0-9]{4}`)

// The prefix cache only hits if what a turn renders (system prompt and
// history, chat template applied) is a prefix of what the next turn
// renders. This renders two turns of the gateway's real prompt — a minute
// apart, with a write to today's memory note between them — through real
// chat templates and checks exactly that; the second turn's full prompt is
// a golden file.
func TestRenderedPrefixIsStable(t *testing.T) {
	ws := t.TempDir()
	write := func(name, text string, appendTo bool) {
		t.Helper()
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
		if appendTo {
			flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
		}
		f, err := os.OpenFile(p, flags, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(text)
		f.Close()
	}
	loc, _ := time.LoadLocation("Europe/Madrid")
	t1 := time.Date(2026, 11, 25, 21, 59, 40, 0, loc)
	t2 := t1.Add(time.Minute) // crosses a minute boundary
	write("AGENTS.md", "# Agents\nBe brief.\n", false)
	write(prompt.DailyMemoryPath(t1), "- Ana likes tea.\n", false)

	tools := []engine.ToolSpec{
		{Name: "read", Description: "Read file contents.", Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
		{Name: "exec", Description: "Run shell commands", Parameters: []byte(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`)},
	}
	params := func(now time.Time) prompt.Params {
		return prompt.Params{AgentID: "main", Workspace: ws, Now: now, Location: loc, Tools: tools,
			SessionKey: "agent:main:main", Channel: "cli", ChatType: engine.ChatDirect, MainSession: true,
			Model: "local/qwen3-1.7b", Thinking: "off", Host: "box", OS: "linux", Arch: "arm64", LocalModel: true}
	}
	userMsg := func(p prompt.Params, history []engine.Message, text string, now time.Time) engine.Message {
		notes, err := prompt.DailyMemory(p)
		if err != nil {
			t.Fatal(err)
		}
		tc := prompt.NewTurnContext(history, prompt.RuntimeLine(p), notes)
		in := engine.Inbound{Channel: "cli", ChatType: engine.ChatDirect, Text: text, Timestamp: now}
		return engine.Message{Role: engine.RoleUser, Content: []engine.Block{engine.TextBlock(prompt.UserMessage(in, prompt.Trusted{Channel: "cli", Timestamp: now, Context: tc}))}}
	}

	templates := map[string]string{"fallback-chatml": ""}
	for _, name := range []string{"Qwen-Qwen3-0.6B.jinja", "meta-llama-Llama-3.2-3B-Instruct.jinja", "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja"} {
		data, err := os.ReadFile(filepath.Join("../../../shared/models/chat-templates", name))
		if err != nil {
			t.Skip("shared chat templates not available:", err)
		}
		templates[strings.TrimSuffix(name, ".jinja")] = string(data)
	}
	if f, err := gguf.Open("../../../shared/models/llama-2-tiny-random-chatml-tools.gguf"); err == nil {
		templates["chatml-tools-gguf"] = f.ChatTemplate()
	}
	for name, src := range templates {
		t.Run(name, func(t *testing.T) {
			f, err := newFormat(src)
			if err != nil {
				t.Fatal(err)
			}
			p1 := params(t1)
			sys1, err := prompt.Build(p1)
			if err != nil {
				t.Fatal(err)
			}
			u1 := userMsg(p1, nil, "What should I pack for Lisbon?", t1)
			req1 := &engine.ChatRequest{System: sys1.System, Tools: tools, Messages: []engine.Message{u1}, Thinking: engine.ThinkingOff}
			r1, _, err := f.render(req1)
			if err != nil {
				t.Fatal(err)
			}

			// The model answers; a memory write; a minute later, turn 2.
			a1 := engine.Message{Role: engine.RoleAssistant, Content: []engine.Block{engine.TextBlock("A light jacket and comfortable shoes.")}, StopReason: engine.StopEnd}
			write(prompt.DailyMemoryPath(t1), "- Trip to Lisbon on Friday.\n", true)
			defer write(prompt.DailyMemoryPath(t1), "- Ana likes tea.\n", false)
			p2 := params(t2)
			sys2, err := prompt.Build(p2)
			if err != nil {
				t.Fatal(err)
			}
			if sys2.System != sys1.System {
				t.Fatal("the system prompt changed between turns")
			}
			history := []engine.Message{u1, a1}
			u2 := userMsg(p2, history, "And for the evening?", t2)
			req2 := &engine.ChatRequest{System: sys2.System, Tools: tools, Messages: append(history, u2), Thinking: engine.ThinkingOff}
			r2, _, err := f.render(req2)
			if err != nil {
				t.Fatal(err)
			}
			// Everything turn 1 rendered, its generation prompt included
			// (Qwen3's empty thinking block is kept: keepOffBlocks), and
			// the reply the model wrote after it, must start turn 2.
			stable := r1[:commonPrefixWithGen(r1, r2)]
			if !strings.HasPrefix(r2, r1+"A light jacket and comfortable shoes.") {
				t.Fatalf("turn 1's prompt is not a prefix of turn 2's: they part at byte %d of %d:\n--- turn 1 from there:\n%s\n--- turn 2 from there:\n%s",
					len(stable), len(r1), r1[len(stable):], r2[len(stable):min(len(r2), len(stable)+300)])
			}
			if !strings.Contains(r2, "Trip to Lisbon") || !strings.Contains(u2.Text(), "Trip to Lisbon") {
				t.Error("turn 2 does not carry the memory write")
			}
			if strings.Contains(u2.Text(), "runtime") {
				t.Error("turn 2 repeats an unchanged runtime line")
			}
			// Templates that print today's date (Llama-3.2's strftime_now)
			// change daily, not per turn; the golden must not depend on it.
			got := todayDate.ReplaceAllLiteralString(strings.ReplaceAll(r2, ws, "$WORKSPACE"), "Today Date: $TODAY")
			goldenFile(t, "prefix_"+name+".golden", got)
		})
	}
}

// commonPrefixWithGen is the length of the common prefix of a and b.
func commonPrefixWithGen(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func goldenFile(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
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
		t.Fatalf("%v (run with -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (run with -update to accept):\n%s", name, got)
	}
}
