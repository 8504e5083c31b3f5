package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/models/llamacpp"
)

// fakeEngine generates "a b c …" slowly until cancelled or done.
type fakeEngine struct{ words int }

func (f *fakeEngine) Info() llamacpp.ModelInfo { return llamacpp.ModelInfo{Path: "fake", Slots: 1} }
func (f *fakeEngine) Close()                   {}
func (f *fakeEngine) Tokenize(s string) ([]int, error) {
	return make([]int, len(strings.Fields(s))), nil
}
func (f *fakeEngine) Embed(_ context.Context, texts []string) ([][]float32, int, error) {
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = []float32{1, 0}
	}
	return out, len(texts), nil
}
func (f *fakeEngine) Complete(ctx context.Context, req *llamacpp.Request, piece func(string)) (llamacpp.StopCause, llamacpp.RunUsage, error) {
	for i := range f.words {
		select {
		case <-ctx.Done():
			return llamacpp.StopCancelled, llamacpp.RunUsage{Generated: i}, nil
		case <-time.After(time.Millisecond):
		}
		piece(string(rune('a'+i%26)) + " ")
	}
	return llamacpp.StopEOS, llamacpp.RunUsage{Generated: f.words}, nil
}

func TestServe(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- Serve(&fakeEngine{words: 100000}, inR, outW); outW.Close() }()
	dec := bufio.NewScanner(outR)
	next := func() llamacpp.Reply {
		t.Helper()
		if !dec.Scan() {
			t.Fatalf("no reply: %v", dec.Err())
		}
		var r llamacpp.Reply
		if err := json.Unmarshal(dec.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	send := func(r llamacpp.Request) {
		data, _ := json.Marshal(r)
		if _, err := inW.Write(append(data, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	if r := next(); r.Type != llamacpp.ReplyReady || r.Info == nil {
		t.Fatalf("first reply %+v", r)
	}
	// A long completion, cancelled after its first piece.
	send(llamacpp.Request{Op: llamacpp.OpComplete, ID: 1, Prompt: "x"})
	if r := next(); r.Type != llamacpp.ReplyPiece || r.ID != 1 {
		t.Fatalf("want a piece, got %+v", r)
	}
	send(llamacpp.Request{Op: llamacpp.OpCancel, ID: 1})
	for {
		r := next()
		if r.Type == llamacpp.ReplyDone {
			if r.Stop != llamacpp.StopCancelled {
				t.Fatalf("stop = %q", r.Stop)
			}
			break
		}
	}
	send(llamacpp.Request{Op: llamacpp.OpEmbed, ID: 2, Texts: []string{"a", "b"}})
	if r := next(); r.Type != llamacpp.ReplyEmbeddings || len(r.Vectors) != 2 {
		t.Fatalf("embed reply %+v", r)
	}
	send(llamacpp.Request{Op: "bogus", ID: 3})
	if r := next(); r.Type != llamacpp.ReplyError || r.ID != 3 {
		t.Fatalf("bogus reply %+v", r)
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
