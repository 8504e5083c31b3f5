package catalog

import "testing"

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
