package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/openai"
)

func TestRun(t *testing.T) {
	script := filepath.Join(t.TempDir(), "script.json")
	os.WriteFile(script, []byte(`[
		{"text": "Let me check.", "toolCalls": [{"name": "ls", "arguments": {"path": "."}}]},
		{"text": "Done."}
	]`), 0o644)

	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, []string{"-addr", "127.0.0.1:0", "-script", script}, pw) }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	base := strings.TrimSpace(line)
	if !strings.HasPrefix(base, "http://127.0.0.1:") || !strings.HasSuffix(base, "/v1") {
		t.Fatalf("printed %q", line)
	}

	p := openai.New(openai.Config{BaseURL: base})
	req := &engine.ChatRequest{Model: "echo", Messages: []engine.Message{engine.UserText("hello")}}
	var texts []string
	var calls []engine.ToolCall
	for range 3 {
		var b strings.Builder
		err := p.Stream(ctx, req, func(e engine.Event) {
			switch e.Type {
			case engine.EventTextDelta:
				b.WriteString(e.Text)
			case engine.EventToolCall:
				calls = append(calls, *e.ToolCall)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, b.String())
		if len(calls) > 0 && len(req.Messages) == 1 {
			req.Messages = append(req.Messages,
				engine.Message{Role: engine.RoleAssistant, Content: []engine.Block{engine.TextBlock(texts[0]), calls[0].Block()}},
				engine.TextResult("a.txt").Message(calls[0]))
		}
	}
	want := []string{"Let me check.", "Done.", "echo: hello"}
	for i := range want {
		if texts[i] != want[i] {
			t.Errorf("reply %d = %q, want %q", i, texts[i], want[i])
		}
	}
	if len(calls) != 1 || calls[0].ID == "" || string(calls[0].Arguments) != `{"path":"."}` {
		t.Errorf("calls = %+v", calls)
	}

	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("run: %v", err)
	}
}

func TestLoadScriptErrors(t *testing.T) {
	dir := t.TempDir()
	tests := map[string]string{
		"not an array":  `{"text":"x"}`,
		"unknown field": `[{"txt":"x"}]`,
		"nameless call": `[{"toolCalls":[{"arguments":{}}]}]`,
	}
	for name, content := range tests {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".json")
		os.WriteFile(path, []byte(content), 0o644)
		if _, err := loadScript(path); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := loadScript(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("missing file: no error")
	}
}
