package transcriptfmt

import (
	"strings"
	"testing"
)

func TestValidSessionID(t *testing.T) {
	tests := []struct {
		id   string
		want string // "" = valid
	}{
		{"0b6c3f52-8d2e-4c43-9a51-2f1c6a7e9d10", ""},
		{"s", ""},
		{"agent:main.v2_x-1", ""},
		{strings.Repeat("a", MaxIDBytes), ""},
		{"", "empty"},
		{strings.Repeat("a", MaxIDBytes+1), "129 bytes long"},
		{"../etc/passwd", `byte '/' at offset 2`},
		{"has space", `byte ' '`},
		{"nul\x00", `byte '\x00'`},
		{"é", "offset 0"},
	}
	for _, tt := range tests {
		err := ValidSessionID(tt.id)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("ValidSessionID(%q) = %v, want %q", tt.id, err, tt.want)
		}
	}
}
