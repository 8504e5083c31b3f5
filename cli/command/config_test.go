package command

import (
	"testing"

	"github.com/openclaw-edge/edge/engine/api"
)

func TestParseValue(t *testing.T) {
	for in, want := range map[string]string{
		"18790":                      `18790`,
		"true":                       `true`,
		"null":                       `null`,
		"loopback":                   `"loopback"`,
		`"true"`:                     `"true"`,
		"{primary: 'ollama/llama3'}": `{"primary":"ollama/llama3"}`,
		`["a", "b",]`:                `["a","b"]`,
		"192.168.1.10":               `"192.168.1.10"`,
		"":                           `""`,
	} {
		got, err := parseValue(in)
		if err != nil || string(got) != want {
			t.Errorf("parseValue(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
}

// TestRestartPendingLine: status names the keys waiting for a restart and
// says to restart the gateway as the gateway says (never systemctl unless
// it runs under systemd).
func TestRestartPendingLine(t *testing.T) {
	for _, tc := range []struct {
		how, want string
	}{
		{"stop openclaw-gateway run and start it again", "restart pending (gateway.port, gateway.bind): restart the gateway to apply (stop openclaw-gateway run and start it again)"},
		{"sudo openclaw gateway restart", "restart pending (gateway.port, gateway.bind): restart the gateway to apply (sudo openclaw gateway restart)"},
		{"", "restart pending (gateway.port, gateway.bind): restart the gateway to apply (openclaw gateway restart, or stop openclaw-gateway run and start it again)"},
	} {
		st := &api.Status{RestartPending: []string{"gateway.port", "gateway.bind"}, RestartHow: tc.how}
		if got := restartPendingLine(st); got != tc.want {
			t.Errorf("how %q:\n got %s\nwant %s", tc.how, got, tc.want)
		}
	}
}
