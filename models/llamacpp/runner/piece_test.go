package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/models/llamacpp"
)

// TestPieceStreamCoalesces: the first piece is written at once, later
// pieces within the interval share one line, and a flush writes the rest;
// the lines are valid protocol replies whose texts add up to what was
// generated.
func TestPieceStreamCoalesces(t *testing.T) {
	var out bytes.Buffer
	writes := 0
	s := pieceStream{id: 7, every: time.Hour, out: func(line []byte) { writes++; out.Write(line) }}
	words := []string{"Once", " upon", " a \"time\"", "\n\tthere", " was\x01", " a girl"}
	for _, w := range words {
		s.add(w)
	}
	if writes != 1 {
		t.Fatalf("%d writes while adding %d pieces within the interval; want 1 (the first piece)", writes, len(words))
	}
	s.flush(time.Now())
	s.flush(time.Now()) // nothing pending: no empty line
	if writes != 2 {
		t.Fatalf("%d writes after flush; want 2", writes)
	}
	var got strings.Builder
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var r llamacpp.Reply
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if r.Type != llamacpp.ReplyPiece || r.ID != 7 {
			t.Fatalf("reply %+v", r)
		}
		got.WriteString(r.Text)
	}
	if want := strings.Join(words, ""); got.String() != want {
		t.Fatalf("text %q, want %q", got.String(), want)
	}

	// With no interval, every piece is its own write.
	writes = 0
	s = pieceStream{id: 1, out: func([]byte) { writes++ }}
	for range 5 {
		s.add("x")
	}
	if writes != 5 {
		t.Fatalf("every=0: %d writes for 5 pieces", writes)
	}
}

// TestPieceStreamNoAllocs: adding a token's text allocates nothing once the
// buffers have grown, whether or not the line is written.
func TestPieceStreamNoAllocs(t *testing.T) {
	for _, every := range []time.Duration{0, time.Hour} {
		s := pieceStream{id: 123456, every: every, out: func([]byte) {}}
		for range 100 {
			s.add(" warm")
		}
		s.flush(time.Now())
		if n := testing.AllocsPerRun(1000, func() { s.add(" tok\"en\n") }); n != 0 {
			t.Errorf("every=%v: %.1f allocations per piece, want 0", every, n)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "quote\" back\\slash", "\x00\x1f\x7f", "é日本🙂", "\xff\xfe bad", "a\xe6\x97", "\u2028"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		enc := appendJSONString(nil, b)
		var got string
		if err := json.Unmarshal(enc, &got); err != nil {
			t.Fatalf("%q encodes as invalid JSON %q: %v", b, enc, err)
		}
		ref, _ := json.Marshal(string(b))
		var want string
		_ = json.Unmarshal(ref, &want)
		if got != want {
			t.Fatalf("%q decodes to %q, encoding/json's to %q", b, got, want)
		}
	})
}

func BenchmarkPieceStream(b *testing.B) {
	s := pieceStream{id: 1, every: flushEvery, out: func([]byte) {}}
	b.ReportAllocs()
	for b.Loop() {
		s.add(" token")
	}
}
