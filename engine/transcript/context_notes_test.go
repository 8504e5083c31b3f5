package transcript

import (
	"strconv"
	"testing"

	"github.com/openclaw-edge/edge/engine"
)

// TestContextSkipsErrorNotes: the entries that close a failed, stopped or
// interrupted turn are shown to the user but never sent back to the model.
func TestContextSkipsErrorNotes(t *testing.T) {
	asst := func(text string, stop engine.StopReason) engine.Message {
		return engine.Message{Role: engine.RoleAssistant, Content: []engine.Block{engine.TextBlock(text)}, StopReason: stop}
	}
	msgs := []engine.Message{
		engine.UserText("hello"),
		asst("⚠️ The model is unreachable. Try again later.", engine.StopError),
		engine.UserText("again"),
		asst("Partial answ", engine.StopAborted),
		engine.UserText("and again"),
		asst("The gateway stopped before this turn finished, so no complete reply was sent. Please send your message again.", engine.StopError),
		engine.UserText("last"),
		asst("Hi!", engine.StopEnd),
	}
	var entries []Entry
	for i, m := range msgs {
		m := m
		e := Entry{Type: EntryMessage, ID: strconv.Itoa(i + 1), Message: &m}
		if i > 0 {
			e.ParentID = strconv.Itoa(i)
		}
		entries = append(entries, e)
	}
	var got []string
	for _, m := range Context(entries) {
		got = append(got, string(m.Role)+":"+m.Text())
	}
	want := []string{"user:hello", "user:again", "user:and again", "user:last", "assistant:Hi!"}
	if len(got) != len(want) {
		t.Fatalf("context = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("context = %q, want %q", got, want)
		}
	}
}
