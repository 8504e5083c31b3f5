package agent

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
)

func TestPrune(t *testing.T) {
	big := func(tag string) string { return tag + strings.Repeat("-", 3996) } // 1001 tokens with runeCount
	history := func() []engine.Message {
		return []engine.Message{
			cu("q0"), // 0
			cacall("c1", "read", `{}`),
			ctr("c1", "read", big("AAAA")), // 2
			cacall("c2", "read", `{}`),
			ctr("c2", "read", big("BBBB")), // 4
			ctr("c3", "read", "short result"),
			ca("a0"),
			cu("q1"), // 7: the current turn starts
			cacall("c4", "read", `{}`),
			ctr("c4", "read", big("CCCC")), // 9
		}
	}
	total, _ := runeCount(context.Background(), history())
	tests := []struct {
		name        string
		budget      int
		wantTrimmed []int // indexes of trimmed messages
	}{
		{"under budget", total, nil},
		{"oldest first", total - 500, []int{2}},
		{"two", total - 1200, []int{2, 4}},
		{"never the current turn nor short ones", 10, []int{2, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := history()
			orig := history()
			out, n, err := Prune(context.Background(), in, tt.budget, runeCount)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(in, orig) {
				t.Fatal("Prune modified its input")
			}
			if n != len(tt.wantTrimmed) || len(out) != len(in) {
				t.Fatalf("trimmed %d of %d messages, want %v", n, len(out), tt.wantTrimmed)
			}
			trimmed := map[int]bool{}
			for _, i := range tt.wantTrimmed {
				trimmed[i] = true
			}
			for i := range out {
				if !trimmed[i] {
					if !reflect.DeepEqual(out[i], in[i]) {
						t.Errorf("message %d changed", i)
					}
					continue
				}
				m := out[i]
				if m.Role != engine.RoleToolResult || m.ToolCallID != in[i].ToolCallID || m.ToolName != "read" {
					t.Errorf("message %d lost its identity: %+v", i, m)
				}
				want := in[i].Text()[:pruneHeadChars] + "\n[... tool result trimmed to save context; 3800 chars omitted ...]"
				if got := m.Text(); got != want {
					t.Errorf("message %d = %q, want %q", i, got, want)
				}
			}
			got, _ := runeCount(context.Background(), out)
			if len(tt.wantTrimmed) > 0 && tt.budget >= 100 && got > tt.budget {
				t.Errorf("result counts %d > budget %d", got, tt.budget)
			}
		})
	}
}

func TestPruneEdges(t *testing.T) {
	ctx := context.Background()
	// Images go, and are said to go.
	img := engine.Message{Role: engine.RoleToolResult, ToolCallID: "c", ToolName: "read", Content: []engine.Block{
		engine.TextBlock("a picture"), {Type: engine.BlockImage, Data: strings.Repeat("A", 100), MimeType: "image/png"},
	}}
	msgs := []engine.Message{cu("q"), cacall("c", "read", `{}`), img, ca("a"), cu("q2")}
	out, n, err := Prune(ctx, msgs, 0, estimateTokens)
	if err != nil || n != 1 {
		t.Fatalf("n %d, err %v", n, err)
	}
	if got := out[2].Text(); got != "a picture\n[... tool result trimmed to save context; 1 image(s) omitted ...]" || len(out[2].Content) != 1 {
		t.Errorf("image result trimmed to %q", got)
	}
	// A trimmed result is not trimmed again.
	again, n, err := Prune(ctx, out, 0, estimateTokens)
	if err != nil || n != 0 || !reflect.DeepEqual(again, out) {
		t.Errorf("second prune trimmed %d, err %v", n, err)
	}
	// No user message: everything is the current turn.
	if _, n, _ := Prune(ctx, []engine.Message{cacall("c", "read", `{}`), ctr("c", "read", strings.Repeat("x", 5000))}, 0, runeCount); n != 0 {
		t.Errorf("trimmed %d without a user message", n)
	}
	// Counter errors and cancellation.
	boom := errors.New("boom")
	if _, _, err := Prune(ctx, msgs, 0, func(context.Context, []engine.Message) (int, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Errorf("err = %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := Prune(cctx, msgs, 0, runeCount); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
	// The default counter.
	long := []engine.Message{cu("q"), ctr("c", "x", strings.Repeat("y", 8000)), cu("q2")}
	out, n, err = Prune(ctx, long, 500, nil)
	if err != nil || n != 1 || !strings.Contains(out[1].Text(), fmt.Sprintf("%d chars omitted", 8000-pruneHeadChars)) {
		t.Errorf("n %d, err %v, %q", n, err, out[1].Text())
	}
}
