package command

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestLogsLimit: --limit N (OpenClaw's name) is -n N.
func TestLogsLimit(t *testing.T) {
	g, err := startFakeGateway()
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"--limit", "1"}, 0, fakeLog[2] + "\n", ""},
		{[]string{"--limit", "2"}, 0, fakeLog[1] + "\n" + fakeLog[2] + "\n", ""},
		{[]string{"-n", "1"}, 0, fakeLog[2] + "\n", ""},
		{[]string{"--limit", "-1"}, 2, "", "openclaw: --limit -1: want 0 to"},
		{[]string{"-n", "-1"}, 2, "", "openclaw: -n -1: want 0 to"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"--socket", g.socket, "logs"}, tt.args...), strings.NewReader(""), &stdout, &stderr)
			if code != tt.code || stdout.String() != tt.stdout || !strings.HasPrefix(stderr.String(), tt.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
			}
		})
	}
}
