package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/tool"
	"github.com/openclaw-edge/edge/engine/tool/fs"
)

// TestParallelEditsOfOneFile: a model that issues 200 edits of one file in
// one message gets all 200 applied (run concurrently, edits lost updates).
func TestParallelEditsOfOneFile(t *testing.T) {
	n := 200
	if testing.Short() {
		n = 40 // every edit fsyncs its file and directory
	}
	dir := t.TempDir()
	var orig strings.Builder
	for i := range n {
		fmt.Fprintf(&orig, "line %d;\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte(orig.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var calls []engine.ToolCall
	for i := range n {
		args, _ := json.Marshal(map[string]string{"path": "f.txt", "oldText": fmt.Sprintf("line %d;", i), "newText": fmt.Sprintf("LINE %d;", i)})
		calls = append(calls, engine.ToolCall{ID: fmt.Sprintf("e%d", i), Name: "edit", Arguments: args})
		if i%20 == 0 { // reads in between may run beside each other, never beside an edit
			calls = append(calls, engine.ToolCall{ID: fmt.Sprintf("r%d", i), Name: "read", Arguments: json.RawMessage(`{"path":"f.txt"}`)})
		}
	}
	set := tool.NewSet(tool.NewRegistry(fs.Tools(fs.Config{})...), nil, tool.Env{Workspace: dir}, tool.TruncateConfig{})
	m := &scripted{steps: []func(context.Context, *engine.ChatRequest, func(engine.Event)) error{callTools(calls...), say("done", engine.StopEnd)}}
	res, err := Loop(context.Background(), Config{}, Run{Model: m, History: []engine.Message{engine.UserText("edit")}, Tools: set}, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range res.Messages {
		if msg.Role == engine.RoleToolResult && msg.IsError {
			t.Errorf("%s failed: %s", msg.ToolCallID, msg.Text())
		}
	}
	got, _ := os.ReadFile(filepath.Join(dir, "f.txt"))
	if lost := strings.Count(string(got), "line "); lost > 0 {
		t.Errorf("%d of %d edits lost", lost, n)
	}
}

// TestMutatingCallsRunAlone: a mutating call never overlaps another call,
// runs after every earlier call has finished, and read-only calls between
// mutating ones do run concurrently.
func TestMutatingCallsRunAlone(t *testing.T) {
	names := []string{"read", "read", "write", "grep", "ls", "find", "exec", "edit", "read", "read"}
	var calls []engine.ToolCall
	for i, name := range names {
		calls = append(calls, engine.ToolCall{ID: fmt.Sprint(i), Name: name, Arguments: json.RawMessage(`{}`)})
	}
	var (
		mu              sync.Mutex
		running         int
		maxReadParallel int
		order           []string
		overlap         atomic.Bool
	)
	ts := tools{run: func(_ context.Context, c engine.ToolCall) engine.ToolResult {
		mu.Lock()
		running++
		if tool.Mutating(c.Name) && running > 1 {
			overlap.Store(true)
		}
		if !tool.Mutating(c.Name) {
			maxReadParallel = max(maxReadParallel, running)
		}
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		if tool.Mutating(c.Name) && running > 1 {
			overlap.Store(true)
		}
		running--
		order = append(order, c.ID)
		mu.Unlock()
		return engine.TextResult("ok")
	}}
	m := &scripted{steps: []func(context.Context, *engine.ChatRequest, func(engine.Event)) error{callTools(calls...), say("done", engine.StopEnd)}}
	if _, err := Loop(context.Background(), Config{}, Run{Model: m, History: []engine.Message{engine.UserText("go")}, Tools: ts}, Hooks{}); err != nil {
		t.Fatal(err)
	}
	if overlap.Load() {
		t.Error("a mutating call overlapped another call")
	}
	if maxReadParallel < 2 {
		t.Error("read-only calls never ran concurrently")
	}
	pos := map[string]int{}
	for i, id := range order {
		pos[id] = i
	}
	// write (2) after both reads, exec (6) after grep/ls/find, edit (7)
	// after exec, the last reads after edit.
	for _, p := range [][2]string{{"0", "2"}, {"1", "2"}, {"3", "6"}, {"4", "6"}, {"5", "6"}, {"6", "7"}, {"7", "8"}, {"7", "9"}, {"2", "3"}} {
		if pos[p[0]] > pos[p[1]] {
			t.Errorf("call %s finished after call %s: order %v", p[0], p[1], order)
		}
	}
}

// TestToolCallIDsUniquePerSession: a local model that numbers its calls
// call_1 again every turn, and twice in one message, gets fresh ids, and
// each result answers its own call.
func TestToolCallIDsUniquePerSession(t *testing.T) {
	prior := engine.ToolCall{ID: "call_1", Name: "ls", Arguments: json.RawMessage(`{}`)}
	history := []engine.Message{
		engine.UserText("first"),
		{Role: engine.RoleAssistant, Content: []engine.Block{prior.Block()}, StopReason: engine.StopToolUse},
		engine.TextResult("a").Message(prior),
		{Role: engine.RoleAssistant, Content: []engine.Block{engine.TextBlock("done")}, StopReason: engine.StopEnd},
		engine.UserText("second"),
	}
	c1 := engine.ToolCall{ID: "call_1", Name: "ls", Arguments: json.RawMessage(`{"path":"x"}`)}
	c2 := engine.ToolCall{ID: "call_1", Name: "ls", Arguments: json.RawMessage(`{"path":"y"}`)}
	c3 := engine.ToolCall{ID: "", Name: "ls", Arguments: json.RawMessage(`{"path":"z"}`)}
	ts := tools{run: func(_ context.Context, c engine.ToolCall) engine.ToolResult {
		return engine.TextResult(string(c.Arguments))
	}}
	m := &scripted{steps: []func(context.Context, *engine.ChatRequest, func(engine.Event)) error{
		callTools(c1, c2, c3), callTools(c1), say("done", engine.StopEnd)}}
	res, err := Loop(context.Background(), Config{}, Run{Model: m, History: history, Tools: ts}, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{"call_1": `{}`}
	for _, msg := range res.Messages {
		for _, c := range msg.ToolCalls() {
			if _, dup := seen[c.ID]; dup || c.ID == "" {
				t.Errorf("tool-call id %q reused", c.ID)
			}
			seen[c.ID] = string(c.Arguments)
		}
		if msg.Role == engine.RoleToolResult && msg.Text() != seen[msg.ToolCallID] {
			t.Errorf("result %s = %s, want the result of its own call %s", msg.ToolCallID, msg.Text(), seen[msg.ToolCallID])
		}
	}
	if len(seen) != 5 {
		t.Errorf("ids %v, want 5 distinct", seen)
	}
}
