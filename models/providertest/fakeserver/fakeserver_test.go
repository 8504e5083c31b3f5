package fakeserver

import (
	"context"
	"net/http/httptest"
	"reflect"
	"testing"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want []string
	}{
		{"", 4, nil},
		{"abc", 4, []string{"abc"}},
		{"abcdefg", 3, []string{"abc", "def", "g"}},
		{"wörld", 2, []string{"wö", "rl", "d"}},   // runes, not bytes
		{"a\xffb", 1, []string{"a", "\xff", "b"}}, // invalid UTF-8 still advances
	}
	for _, tt := range tests {
		if got := Split(tt.s, tt.n); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Split(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

func TestEcho(t *testing.T) {
	tests := []struct{ in, want string }{
		{"hi", "echo: hi"},
		{"Inbound metadata (trusted):\n```json\n{}\n```\n\nhello", "echo: hello"},
		{"Inbound metadata without a fence", "echo: Inbound metadata without a fence"},
		{"not Inbound metadata\n```\n\nx", "echo: not Inbound metadata\n```\n\nx"},
	}
	for _, tt := range tests {
		if got := Echo(tt.in); got != tt.want {
			t.Errorf("Echo(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestScript(t *testing.T) {
	s := NewScript(1, 2)
	s.Push(3)
	for _, want := range []int{1, 2, 3} {
		if got, ok := s.Next(); !ok || got != want {
			t.Fatalf("Next = %d %v, want %d", got, ok, want)
		}
	}
	if got, ok := s.Next(); ok || got != 0 {
		t.Fatalf("Next after the script = %d %v, want none", got, ok)
	}
	s.Log([]byte(`{"a":1}`))
	reqs := s.Requests()
	reqs[0] = nil // a copy: the log is not the caller's
	if got := s.Requests(); len(got) != 1 || string(got[0]) != `{"a":1}` {
		t.Errorf("Requests = %s", got)
	}

	// A stall ends when the client goes away, and when released.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s.Stall(httptest.NewRequest("POST", "/", nil).WithContext(ctx))
	s.Release()
	s.Release() // twice is fine
	s.Stall(httptest.NewRequest("POST", "/", nil))
}
