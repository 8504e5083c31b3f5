package command

import (
	"strings"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
)

func TestApprovalAnswer(t *testing.T) {
	tests := []struct{ answer, want string }{
		{"y", "/approve k7"},
		{" YES ", "/approve k7"},
		{"o", "/approve k7"},
		{"once", "/approve k7"},
		{"a", "/approve k7 always"},
		{"Always", "/approve k7 always"},
		{"e", "/approve k7 elevated"},
		{"elevated", "/approve k7 elevated"},
		{"", "/deny k7"},
		{"n", "/deny k7"},
		{"sure", "/deny k7"},
		{"y\x1b[2K", "/deny k7"},
	}
	for _, tt := range tests {
		if got := approvalAnswer(tt.answer, "k7"); got != tt.want {
			t.Errorf("approvalAnswer(%q) = %q, want %q", tt.answer, got, tt.want)
		}
	}
}

// TestApprovalDetailsEscaped: nothing an approval carries reaches the
// terminal raw.
func TestApprovalDetailsEscaped(t *testing.T) {
	ap := &api.Approval{
		ID: "k7\x1b[2K", Command: "rm -rf ~ #\r\x1b[2Kls", Argv: []string{"rm", "-rf", "~\u202e"}, Resolved: "/bin/rm\b\b",
		Cwd: "/tmp/\x07ws", Env: []string{"PS1=\x1b]0;x\a"}, Background: true, Reason: "why\u2028not",
	}
	got := approvalDetails(ap)
	want := `exec approval k7\x1b[2K: rm -rf ~ #\r\x1b[2Kls
  argv:       rm -rf ~\u202e [/bin/rm\b\b]
  cwd:        /tmp/\aws
  env:        PS1=\x1b]0;x\a
  background: yes (keeps running after the reply)
  why:        why\u2028not`
	if got != want {
		t.Errorf("approvalDetails =\n%s\nwant\n%s", got, want)
	}
	if strings.ContainsAny(got, "\r\x1b\b\a\u202e\u2028") {
		t.Errorf("raw control characters in %q", got)
	}
}

func TestAge(t *testing.T) {
	now := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		ago  time.Duration
		want string
	}{{5 * time.Second, "5s"}, {-time.Second, "0s"}, {150 * time.Second, "2m"}, {3 * time.Hour, "3h"}}
	for _, tt := range tests {
		if got := age(now, now.Add(-tt.ago)); got != tt.want {
			t.Errorf("age(-%v) = %q, want %q", tt.ago, got, tt.want)
		}
	}
}

// TestApprovalCommandNotFolded: a compound command shows with its line
// breaks escaped, never folded into one innocent-looking line.
func TestApprovalCommandNotFolded(t *testing.T) {
	for _, tt := range []struct {
		ap   api.Approval
		want string
	}{
		{api.Approval{Command: "grep -rn TODO .\nrm -rf memory"}, `grep -rn TODO .\nrm -rf memory`},
		{api.Approval{Command: "ls\r\nrm -rf ~"}, `ls\r\nrm -rf ~`},
		{api.Approval{Command: "ls\u2028rm -rf ~\u3164"}, `ls\u2028rm -rf ~\u3164`},
		{api.Approval{Command: "printf 'a\nb'", Argv: []string{"printf", "a\nb"}}, `printf a\nb`},
	} {
		if got := approvalCommand(&tt.ap); got != tt.want {
			t.Errorf("approvalCommand(%q) = %q, want %q", tt.ap.Command, got, tt.want)
		}
		// The details' first line is the command: its own newline must not
		// start a second one.
		if got := approvalDetails(&tt.ap); strings.ContainsAny(got, "\r\u2028") || !strings.Contains(got, "\n") && len(tt.ap.Argv) > 0 || len(tt.ap.Argv) == 0 && strings.Contains(got, "\n") {
			t.Errorf("approvalDetails(%q) = %q", tt.ap.Command, got)
		}
	}
}
