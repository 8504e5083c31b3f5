package command

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestParseAt(t *testing.T) {
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in, tz string
		want   string // RFC 3339, or the error's substring after "!"
	}{
		{"20m", "", "2026-11-29T08:20:00Z"},
		{"+20m", "", "2026-11-29T08:20:00Z"},
		{" in 20 minutes ", "", "2026-11-29T08:20:00Z"},
		{"In 2 Hours", "", "2026-11-29T10:00:00Z"},
		{"2h", "", "2026-11-29T10:00:00Z"},
		{"1d", "", "2026-11-30T08:00:00Z"},
		{"in 1 hour and 30 min", "", "2026-11-29T09:30:00Z"},
		{"1.5h", "", "2026-11-29T09:30:00Z"},
		{"20m", "Europe/Berlin", "2026-11-29T08:20:00Z"}, // a delay is the same in every zone
		{"2026-11-29T09:00", "", "2026-11-29T09:00:00Z"},
		{"2026-11-29 09:00:30", "", "2026-11-29T09:00:30Z"},
		{"2026-11-29 10:00", "Europe/Berlin", "2026-11-29T10:00:00+01:00"},
		{"2026-11-29T10:00:00+01:00", "", "2026-11-29T10:00:00+01:00"},
		{"2026-11-29T09:00:00+01:00", "Europe/Berlin", "!has its own offset"},
		{"2026-11-29 08:30", "Europe/Berlin", "!is in the past"},
		{"2020-01-01T00:00", "", "!is in the past"},
		{"tomorrow", "", "!want a time such as 2026-11-29T09:00"},
		{"09:00", "", "!want a time such as"},
		{"in soon", "", `!--at "in soon": "soon": want a number before each unit`},
		{"+20", "", "!has no unit"},
		{"in 5 fortnights", "", `!unknown unit "fortnights"`},
		{"0s", "", "!at least 1s"},
		{"20m", "Mars/Olympus", `!--tz "Mars/Olympus": not an IANA time zone`},
		{"20m", "Local", "!not an IANA time zone"},
	} {
		got, err := parseAt(tc.in, tc.tz, now)
		if want, isErr := strings.CutPrefix(tc.want, "!"); isErr {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("parseAt(%q, %q) = %v, %v; want an error with %q", tc.in, tc.tz, got, err, want)
			}
			if _, usage := err.(*usageError); err != nil && !usage {
				t.Errorf("parseAt(%q, %q): %v is not a usage error", tc.in, tc.tz, err)
			}
			continue
		}
		if err != nil || got.Format(time.RFC3339) != tc.want {
			t.Errorf("parseAt(%q, %q) = %s, %v; want %s", tc.in, tc.tz, got.Format(time.RFC3339), err, tc.want)
		}
	}
}

func TestParseEvery(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration // 0: an error
	}{
		{"30m", 30 * time.Minute},
		{"1h30m", 90 * time.Minute},
		{"90s", 90 * time.Second},
		{"10s", 10 * time.Second},
		{"9s", 0},
		{"1d", 24 * time.Hour},
		{"1d12h", 36 * time.Hour},
		{"2w", 14 * 24 * time.Hour},
		{"2 hours", 2 * time.Hour},
		{"1 day, 6 hours", 30 * time.Hour},
		{"5x", 0},
		{"-5m", 0},
		{"500ms", 0},
		{"", 0},
		{"1e9d", 0}, // not a number api.ParseSpan reads
		{"9999999999d", 0},
	} {
		got, err := parseEvery(tc.in)
		if tc.want == 0 {
			if err == nil || !strings.HasPrefix(err.Error(), "--every ") {
				t.Errorf("parseEvery(%q) = %v, %v; want an --every error", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseEvery(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestSpans(t *testing.T) {
	for _, tc := range []struct {
		d             time.Duration
		format, short string
	}{
		{45 * time.Second, "45s", "45s"},
		{30 * time.Minute, "30m", "30m"},
		{29*time.Minute + 59*time.Second + 900*time.Millisecond, "29m59s900ms", "30m"},
		{59*time.Minute + 45*time.Second, "59m45s", "1h"},
		{90 * time.Minute, "1h30m", "1h30m"},
		{36 * time.Hour, "1d12h", "1d12h"},
		{50*time.Hour + 20*time.Minute, "2d2h20m", "2d2h"},
		{1500 * time.Millisecond, "1s500ms", "2s"},
	} {
		if got := formatSpan(tc.d); got != tc.format {
			t.Errorf("formatSpan(%v) = %s; want %s", tc.d, got, tc.format)
		}
		if got := shortSpan(tc.d); got != tc.short {
			t.Errorf("shortSpan(%v) = %s; want %s", tc.d, got, tc.short)
		}
	}
}

// The exit codes testscript cannot see: a bad flag value is a usage error
// (2), one the gateway refuses or an unknown job an error (1).
func TestCronExitCodes(t *testing.T) {
	g, err := startFakeGateway()
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"cron", "add", "--every", "5x", "--message", "hi"}, 2,
			"openclaw: --every \"5x\": want an interval such as 30m, 2h, 1d or 1h30m\nRun 'openclaw cron add --help' for usage.\n"},
		{[]string{"cron", "add", "--at", "20m", "--cron", "0 7 * * *", "--message", "hi"}, 2,
			"openclaw: give one of --at, --every and --cron, not --at and --cron\nRun 'openclaw cron add --help' for usage.\n"},
		{[]string{"cron", "add", "--message", "hi"}, 2,
			"openclaw: say when the job runs: --at, --every or --cron\nRun 'openclaw cron add --help' for usage.\n"},
		{[]string{"cron", "add", "--cron", "0 7 *", "--message", "hi"}, 1,
			"openclaw: schedule.expr \"0 7 *\": want 5 fields (minute first) or 6, not 3\n"},
		{[]string{"cron", "add", "--every", "1h", "--message", "hi", "--keep-after-run"}, 2,
			"openclaw: --keep-after-run is for one-shot jobs (--at); --every and --cron jobs are kept\nRun 'openclaw cron add --help' for usage.\n"},
		{[]string{"cron", "edit", "j1", "--session", "current"}, 2,
			"openclaw: --session current is resolved when a job is added; give main, isolated or session:KEY\nRun 'openclaw cron edit --help' for usage.\n"},
		{[]string{"cron", "edit", "j1", "--session", "session:agent:main"}, 2,
			"openclaw: --session session:agent:main: session key \"agent:main\": want agent:<agentId>:<name>\nRun 'openclaw cron edit --help' for usage.\n"},
		{[]string{"cron", "rm", "nope"}, 1, "openclaw: no cron job \"nope\" (see `openclaw cron list --all`)\n"},
		{[]string{"cron", "runs", "j1", "--limit", "-2"}, 2,
			"openclaw: --limit must be 1 or more (0: 50), not -2\nRun 'openclaw cron runs --help' for usage.\n"},
		{[]string{"cron", "runs", "j1", "--limit", "1"}, 0, ""},
		{[]string{"system", "heartbeat", "last", "--agent", "ghost"}, 1, "openclaw: agent \"ghost\" is not configured\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"--socket", g.socket}, tc.args...), strings.NewReader(""), &stdout, &stderr)
			if code != tc.code || stderr.String() != tc.stderr {
				t.Errorf("exit %d, want %d; stderr:\n%s\nwant:\n%s", code, tc.code, stderr.String(), tc.stderr)
			}
		})
	}
}
