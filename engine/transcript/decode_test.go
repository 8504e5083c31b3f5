package transcript

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func TestDecoderErrors(t *testing.T) {
	head := `{"type":"session","version":3,"id":"s"}` + "\n"
	tests := []struct {
		name, in, want string
	}{
		{"bad session id", `{"type":"session","version":3,"id":"a/b"}` + "\n", `line 1: header: session id "a/b" has the byte '/'`},
		{"long session id", "\n" + `{"type":"session","version":3,"id":"` + strings.Repeat("x", 200) + `"}`, "line 2: header: session id is 200 bytes long"},
		{"long entry id", head + `{"type":"custom","id":"` + strings.Repeat("x", 200) + `","parentId":null}`, "line 2: entry id"},
		{"long line", head + "\n" + `{"type":"custom","id":"a","parentId":null,"data":"` + strings.Repeat("x", MaxLineBytes) + `"}`, "line 3: longer than 16777216 bytes"},
		{"truncated", head + `{"type":"custom","id":"a","parentId":null`, "line 2: unexpected end of JSON input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDecoder(strings.NewReader(tt.in))
			var err error
			for err == nil {
				_, err = d.Next()
			}
			var le *LineError
			if !errors.As(err, &le) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a *LineError containing %q", err, tt.want)
			}
			// The error sticks.
			if _, err2 := d.Next(); err2 != err {
				t.Errorf("second Next = %v, want %v", err2, err)
			}
		})
	}
}

// A read error names the line it happened on.
func TestDecoderReadError(t *testing.T) {
	in := io.MultiReader(strings.NewReader(`{"type":"session","version":3,"id":"s"}`+"\n"+`{"type":"cus`), iotest.ErrReader(os.ErrDeadlineExceeded))
	d := NewDecoder(in)
	_, err := d.Next()
	if !errors.Is(err, os.ErrDeadlineExceeded) || !strings.Contains(err.Error(), "line 2: read:") {
		t.Fatalf("err = %v", err)
	}
}

// The decoder reads the same transcript whatever the reads look like.
func TestDecoderSmallReads(t *testing.T) {
	for _, name := range []string{"openclaw.jsonl", "branch.jsonl", "v1.jsonl"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		h1, e1, err := Parse(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		// \r\n line ends and no final newline.
		crlf := bytes.TrimSuffix(bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")), []byte("\r\n"))
		h2, e2, err := Parse(iotest.OneByteReader(bytes.NewReader(crlf)))
		if err != nil {
			t.Fatal(err)
		}
		if name == "v1.jsonl" {
			// Fresh ids are random: compare the shape only.
			if len(e1) != len(e2) {
				t.Errorf("%s: %d vs %d entries", name, len(e1), len(e2))
			}
			continue
		}
		if !reflect.DeepEqual(h1, h2) || !reflect.DeepEqual(e1, e2) {
			t.Errorf("%s: one-byte reads decode differently", name)
		}
	}
}

// FuzzImportDecoder feeds the import line parser arbitrary bytes: it never
// panics, every error is a *LineError naming a line of the input, and what
// decodes writes back to a transcript that decodes the same. The seed
// corpus is the testdata transcripts plus testdata/fuzz/FuzzImportDecoder.
func FuzzImportDecoder(f *testing.F) {
	for _, name := range []string{"openclaw.jsonl", "branch.jsonl", "v1.jsonl"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("\n\n" + `{"type":"session","version":3,"id":"a:b.c_d-e"}` + "\r\n" + `{"type":"message","id":"x","parentId":null,"message":{"role":"user","content":"hi"}}`))
	f.Add([]byte(`{"type":"session","version":3,"id":"bad id"}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		d := NewDecoder(bytes.NewReader(in))
		var entries []Entry
		var err error
		for {
			var e Entry
			if e, err = d.Next(); err != nil {
				break
			}
			entries = append(entries, e)
		}
		lines := bytes.Count(in, []byte("\n")) + 1
		if err != io.EOF {
			var le *LineError
			if !errors.As(err, &le) || le.Line < 1 || le.Line > lines {
				t.Fatalf("err = %#v, want a *LineError within %d lines", err, lines)
			}
			return
		}
		h, _ := d.Header()
		if ValidSessionID(h.ID) != nil {
			t.Fatalf("accepted session id %q", h.ID)
		}
		var out bytes.Buffer
		if err := Write(&out, h, entries); err != nil {
			t.Fatalf("Write after decode: %v", err)
		}
		h2, entries2, err := Parse(&out)
		if err != nil {
			t.Fatalf("Parse after Write: %v", err)
		}
		if h2.ID != h.ID || len(entries2) != len(entries) {
			t.Fatalf("round trip: header %q→%q, %d→%d entries", h.ID, h2.ID, len(entries), len(entries2))
		}
	})
}
