package command

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestAgentPositional: `openclaw agent TEXT` is `openclaw agent -m TEXT`,
// which is `openclaw message send TEXT`.
func TestAgentPositional(t *testing.T) {
	g, err := startFakeGateway()
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	cli := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"--socket", g.socket}, args...), strings.NewReader(""), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	_, want, _ := cli("message", "send", "write", "a", "note")
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"agent", "write", "a", "note"}, 0, want, ""},
		{[]string{"agent", "write a note"}, 0, want, ""},
		{[]string{"agent", "-m", "write a note"}, 0, want, ""},
		{[]string{"agent", "hello", "--session", "agent:main:work"}, 0, "", ""},
		{[]string{"agent", "-m", "hi", "there"}, 2, "", "openclaw: give the text once: as --message or as arguments, not both\n"},
		{[]string{"agent"}, 2, "", "openclaw: the text to send is required: openclaw agent hello, or openclaw agent --message \"hello\"\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := cli(tt.args...)
			if code != tt.code || (tt.stdout != "" && out != tt.stdout) || (tt.stderr != "" && !strings.HasPrefix(errOut, tt.stderr)) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, out, errOut, tt.code, tt.stdout, tt.stderr)
			}
		})
	}
}
