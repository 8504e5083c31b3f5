package catalog

import (
	"net/http"
	"strings"
	"testing"
)

func TestParseContentRange(t *testing.T) {
	tests := []struct {
		in                string
		start, end, total int64
		ok                bool
	}{
		{"bytes 0-99/100", 0, 99, 100, true},
		{"bytes 300000-1185375/1185376", 300000, 1185375, 1185376, true},
		{"bytes 5-9/*", 5, 9, -1, true},
		{"bytes */100", -1, -1, 100, true},
		{"bytes */*", 0, 0, 0, false},
		{"bytes 9-5/100", 0, 0, 0, false},
		{"bytes 0-100/100", 0, 0, 0, false},
		{"bytes -1-5/100", 0, 0, 0, false},
		{"items 0-1/2", 0, 0, 0, false},
		{"bytes 0-1", 0, 0, 0, false},
		{"", 0, 0, 0, false},
	}
	for _, tt := range tests {
		s, e, n, ok := parseContentRange(tt.in)
		if ok != tt.ok || ok && (s != tt.start || e != tt.end || n != tt.total) {
			t.Errorf("parseContentRange(%q) = %d %d %d %v", tt.in, s, e, n, ok)
		}
	}
}

// FuzzParseContentRange: a server's Content-Range never yields a range
// that runs backwards or past the total.
func FuzzParseContentRange(f *testing.F) {
	for _, s := range []string{"bytes 0-99/100", "bytes */100", "bytes 5-9/*", "bytes 1-2/3/4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		s, e, n, ok := parseContentRange(v)
		if !ok {
			return
		}
		if s == -1 && (e != -1 || n < 0) || s != -1 && (s < 0 || e < s || n >= 0 && e >= n) {
			t.Fatalf("parseContentRange(%q) = %d %d %d", v, s, e, n)
		}
	})
}

// FuzzNameFromFile: whatever file name a URL ends with, the derived name is
// valid or empty.
func FuzzNameFromFile(f *testing.F) {
	for _, s := range []string{"Qwen3-1.7B-Q4_K_M.gguf", "..", "a/b\\c.GGUF", "---", "模型.gguf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, file string) {
		if name := NameFromFile(file); name != "" && ValidName(name) != nil {
			t.Fatalf("NameFromFile(%q) = %q: %v", file, name, ValidName(name))
		}
	})
}

// FuzzValidators: whatever ETag and Last-Modified a server sends, the
// If-Range a resume would send is short, has no control characters, and
// is never a weak ETag.
func FuzzValidators(f *testing.F) {
	for _, s := range [][2]string{{`"abc"`, "Fri, 01 May 2026 12:00:00 GMT"}, {`W/"x"`, ""}, {"a\r\nb", "not a date"}, {"", ""}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, etag, lastModified string) {
		resp := &http.Response{Header: http.Header{}}
		resp.Header["Etag"] = []string{etag}
		resp.Header["Last-Modified"] = []string{lastModified}
		v := validatorsOf(resp).ifRange()
		if len(v) > maxValidator || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) || strings.HasPrefix(v, "W/") {
			t.Fatalf("ifRange(%q, %q) = %q", etag, lastModified, v)
		}
	})
}
