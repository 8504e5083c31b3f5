package sse_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/openclaw-edge/edge/models/sse"
)

type ev struct{ typ, data string }

func readAll(t testing.TB, r *sse.Reader) ([]ev, error) {
	var out []ev
	for {
		e, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, ev{e.Type, string(e.Data)})
	}
}

func TestReader(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []ev
		wantErr error
	}{
		{"openai chunks", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []ev{{"", `{"a":1}`}, {"", "[DONE]"}}, io.EOF},
		{"anthropic events", "event: ping\ndata: {}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
			[]ev{{"ping", "{}"}, {"message_stop", `{"type":"message_stop"}`}}, io.EOF},
		{"crlf and no space", "data:x\r\n\r\n", []ev{{"", "x"}}, io.EOF},
		{"multi-line data", "data: a\ndata: b\n\n", []ev{{"", "a\nb"}}, io.EOF},
		{"comments and keep-alives", ": OPENROUTER PROCESSING\n\n: ping\ndata: x\n\n", []ev{{"", "x"}}, io.EOF},
		{"event without data is dropped", "event: a\n\ndata: x\n\n", []ev{{"", "x"}}, io.EOF},
		{"bom", "\xef\xbb\xbfdata: x\n\n", []ev{{"", "x"}}, io.EOF},
		{"unknown fields ignored", "id: 7\nretry: 10\ndata: x\n\n", []ev{{"", "x"}}, io.EOF},
		{"llama-server error field", "error: {\"code\":500}\n\n", []ev{{"error", `{"code":500}`}}, io.EOF},
		{"pending event at eof", "data: [DONE]\n", []ev{{"", "[DONE]"}}, io.EOF},
		{"cut inside a line", "data: x\n\ndata: {\"a\"", []ev{{"", "x"}}, io.ErrUnexpectedEOF},
		{"empty", "", nil, io.EOF},
		{"field without colon", "data\n\n", []ev{{"", ""}}, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One byte at a time too: line assembly must not depend on reads.
			for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				got, err := readAll(t, sse.NewReader(r))
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if len(got) != len(tt.want) {
					t.Fatalf("got %q, want %q", got, tt.want)
				}
				for i := range got {
					if got[i] != tt.want[i] {
						t.Errorf("event %d = %q, want %q", i, got[i], tt.want[i])
					}
				}
			}
		})
	}
}

func TestReaderLongLines(t *testing.T) {
	long := strings.Repeat("x", 100<<10) // longer than the bufio buffer
	got, err := readAll(t, sse.NewReader(strings.NewReader("data: "+long+"\n\n")))
	if err != io.EOF || len(got) != 1 || got[0].data != long {
		t.Fatalf("long line: err %v, %d events", err, len(got))
	}

	r := sse.NewReader(strings.NewReader("data: " + long + "\n\n"))
	r.MaxLine = 1 << 10
	if _, err := r.Next(); !errors.Is(err, sse.ErrLineTooLong) {
		t.Fatalf("err = %v, want ErrLineTooLong", err)
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("data: {\"a\":1}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("event: x\r\ndata:y\r\n\r\n: c\n"))
	f.Add([]byte("error: boom\n\ndata"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := sse.NewReader(strings.NewReader(string(b)))
		r.MaxLine = 64
		for i := 0; ; i++ {
			e, err := r.Next()
			if err != nil {
				return
			}
			if len(e.Data) > len(b) {
				t.Fatalf("event data longer than input")
			}
			if i > len(b) {
				t.Fatalf("more events than input bytes")
			}
		}
	})
}
