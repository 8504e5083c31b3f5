// Package systemd holds the gateway's service definitions — the systemd
// unit, its systemd-sysusers entry and the launchd plist for macOS — as the
// files beside this one, embedded, so that `openclaw gateway install`
// writes exactly what is reviewed and tested here, with the real binary
// path filled in. It renders text only: nothing here runs systemctl or
// launchctl (cli/command does, through a small runner interface).
//
// The files stay plain files (not Go strings) so that `systemd-analyze
// verify`, packagers and readers use them as they are; README.md in this
// folder says why each hardening line of the unit is there.
package systemd

import (
	"bytes"
	_ "embed"
	"encoding/xml"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"text/template"
)

// Names and paths of the installed service.
const (
	UnitName      = "openclaw-gateway.service"
	SysusersName  = "openclaw.conf" // in /etc/sysusers.d
	User          = "openclaw"
	StateDir      = "/var/lib/openclaw" // StateDirectory=openclaw
	Socket        = "/run/openclaw/gateway.sock"
	DefaultBinary = "/usr/bin/openclaw-gateway" // ExecStart of the file as shipped
	LaunchdLabel  = "ai.openclaw-edge.gateway"  // not OpenClaw's ai.openclaw.gateway: both can be installed
)

var (
	//go:embed openclaw-gateway.service
	unit string
	//go:embed openclaw.sysusers.conf
	sysusers []byte
	//go:embed ai.openclaw-edge.gateway.plist.tmpl
	plistText string
	// plist is parsed on first use: every `openclaw` command links this.
	plist = sync.OnceValue(func() *template.Template { return template.Must(template.New("plist").Parse(plistText)) })
)

// Sysusers returns the systemd-sysusers entry that creates the service user.
func Sysusers() []byte { return bytes.Clone(sysusers) }

// checkPath refuses paths a unit line or a plist cannot hold as they are:
// relative ones, and (for the unit) characters systemd would expand or split
// on (white space, quotes, backslash, % and $).
func checkPath(what, p string, unitSafe bool) error {
	if !filepath.IsAbs(p) {
		return fmt.Errorf("%s %q is not an absolute path", what, p)
	}
	if strings.ContainsFunc(p, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fmt.Errorf("%s %q contains control characters", what, p)
	}
	if unitSafe && strings.ContainsAny(p, " \t\"'\\%$;") {
		return fmt.Errorf("%s %q contains characters a systemd unit line would expand or split on (space, quotes, \\, %%, $, ;): install the binary to a plain path such as /usr/local/bin", what, p)
	}
	return nil
}

// Unit returns the systemd unit with ExecStart running binary (an absolute
// path) instead of /usr/bin/openclaw-gateway.
func Unit(binary string) ([]byte, error) {
	if err := checkPath("gateway binary", binary, true); err != nil {
		return nil, err
	}
	const old = "\nExecStart=" + DefaultBinary + " "
	if strings.Count(unit, old) != 1 {
		return nil, fmt.Errorf("the embedded unit has no single %q line (a bug)", strings.TrimSpace(old))
	}
	return []byte(strings.Replace(unit, old, "\nExecStart="+binary+" ", 1)), nil
}

// Launchd is what the launchd plist needs.
type Launchd struct {
	Binary   string // absolute path of openclaw-gateway
	StateDir string // the gateway's --state-dir, e.g. ~/.openclaw-edge
}

// LogFile is where the launchd agent's stdout and stderr go.
func (l Launchd) LogFile() string { return filepath.Join(l.StateDir, "logs", "gateway.log") }

// Plist returns the launchd user agent for l.
func Plist(l Launchd) ([]byte, error) {
	if err := checkPath("gateway binary", l.Binary, false); err != nil {
		return nil, err
	}
	if err := checkPath("state dir", l.StateDir, false); err != nil {
		return nil, err
	}
	esc := func(s string) string {
		var b strings.Builder
		_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder never fails
		return b.String()
	}
	var out bytes.Buffer
	err := plist().Execute(&out, map[string]string{
		"Label": LaunchdLabel, "Binary": esc(l.Binary), "StateDir": esc(l.StateDir), "Log": esc(l.LogFile()),
	})
	if err != nil {
		return nil, fmt.Errorf("render the launchd plist: %w", err)
	}
	return out.Bytes(), nil
}
