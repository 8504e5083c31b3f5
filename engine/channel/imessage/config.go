package imessage

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/channel/bluebubbles"
)

// Config is channels.imessage (or one of channels.imessage.accounts), with
// OpenClaw's key names where OpenClaw has the key.
type Config struct {
	channel.Common
	// CLIPath is the imsg binary (default "imsg", looked up on PATH; on the
	// remote host when RemoteHost is set, where a non-interactive SSH
	// session's PATH often lacks /opt/homebrew/bin: give an absolute path).
	CLIPath string `json:"cliPath"`
	// DBPath is the Messages database (imsg's --db); empty: imsg's default
	// (~/Library/Messages/chat.db of the user imsg runs as).
	DBPath string `json:"dbPath"`
	// RemoteHost, "user@host", runs imsg on that Mac over ssh (key-based,
	// BatchMode: no prompts). OpenClaw uses it only to scp attachments and
	// expects cliPath to be an SSH wrapper script; here the adapter runs
	// ssh itself, so no wrapper is needed (a wrapper in cliPath with an
	// empty remoteHost still works, as in OpenClaw).
	RemoteHost string `json:"remoteHost"`
	// Service is imsg's send service: imessage | sms | auto (empty: imsg's
	// default, auto).
	Service string `json:"service"`
	// Region is the SMS region imsg uses to normalize phone numbers
	// (empty: imsg's default, "US").
	Region string `json:"region"`
	// IncludeAttachments asks imsg for attachment metadata and delivers
	// attachments as media.
	IncludeAttachments bool `json:"includeAttachments"`
	// AttachmentRoots are directories (on this machine) inbound
	// attachments may be copied from, in addition to
	// DefaultAttachmentRoots; "*" matches one path element, "~/" is the
	// home directory. An attachment path outside them is refused.
	AttachmentRoots []string `json:"attachmentRoots"`
	// RemoteAttachmentRoots are the same on remoteHost ("~/" the remote
	// home).
	RemoteAttachmentRoots []string `json:"remoteAttachmentRoots"`
	// MediaMaxMB caps inbound and outbound attachments (default 16, as
	// OpenClaw).
	MediaMaxMB int `json:"mediaMaxMb"`
	// Backend is "imsg" (default) or "bluebubbles".
	Backend string `json:"backend"`
	// BlueBubbles configures the BlueBubbles backend.
	BlueBubbles bluebubbles.Config `json:"bluebubbles"`
}

// Defaults.
const (
	DefaultCLIPath     = "imsg"
	DefaultMediaMaxMB  = 16
	BackendIMsg        = "imsg"
	BackendBlueBubbles = "bluebubbles"
)

const keyPrefix = "channels.imessage"

// withDefaults returns c with empty keys set to their defaults.
func (c Config) withDefaults() Config {
	if strings.TrimSpace(c.CLIPath) == "" {
		c.CLIPath = DefaultCLIPath
	}
	if c.MediaMaxMB == 0 {
		c.MediaMaxMB = DefaultMediaMaxMB
	}
	if c.Backend == "" {
		c.Backend = BackendIMsg
	}
	c.Service = strings.ToLower(strings.TrimSpace(c.Service))
	return c
}

// Validate checks the iMessage keys (the access keys in Common are the
// gateway's to check); errors name the bad key.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch c.Backend {
	case BackendIMsg:
	case BackendBlueBubbles:
		return c.BlueBubbles.Validate(keyPrefix + ".bluebubbles")
	default:
		return fmt.Errorf("%s.backend: %q is not imsg or bluebubbles", keyPrefix, c.Backend)
	}
	// cliPath and dbPath become argv words (and, over ssh, words of a
	// remote shell command line, quoted); control characters in them are
	// never intended and would corrupt logs.
	if strings.ContainsFunc(c.CLIPath, unicode.IsControl) {
		return fmt.Errorf("%s.cliPath: contains control characters", keyPrefix)
	}
	if strings.HasPrefix(c.CLIPath, "-") {
		return fmt.Errorf("%s.cliPath: must not start with '-'", keyPrefix)
	}
	if strings.ContainsFunc(c.DBPath, unicode.IsControl) {
		return fmt.Errorf("%s.dbPath: contains control characters", keyPrefix)
	}
	if strings.HasPrefix(c.DBPath, "-") {
		return fmt.Errorf("%s.dbPath: must not start with '-'", keyPrefix)
	}
	if err := validateRemoteHost(c.RemoteHost); err != nil {
		return fmt.Errorf("%s.remoteHost: %w", keyPrefix, err)
	}
	switch c.Service {
	case "", "imessage", "sms", "auto":
	default:
		return fmt.Errorf("%s.service: %q is not imessage, sms or auto", keyPrefix, c.Service)
	}
	if strings.ContainsFunc(c.Region, func(r rune) bool { return !unicode.IsLetter(r) && r != '-' && r != '_' }) {
		return fmt.Errorf("%s.region: %q is not a region code such as US", keyPrefix, c.Region)
	}
	if err := validateRoots(keyPrefix+".attachmentRoots", c.AttachmentRoots); err != nil {
		return err
	}
	if err := validateRoots(keyPrefix+".remoteAttachmentRoots", c.RemoteAttachmentRoots); err != nil {
		return err
	}
	if c.MediaMaxMB < 0 {
		return fmt.Errorf("%s.mediaMaxMb: must not be negative", keyPrefix)
	}
	if c.MediaMaxMB > 1024 {
		return fmt.Errorf("%s.mediaMaxMb: %d MB is more than 1024", keyPrefix, c.MediaMaxMB)
	}
	return nil
}

// validateRemoteHost refuses what could change the meaning of the ssh
// command line: remoteHost is one argv word of ssh, after "--", but a
// leading '-' would still be an option to a wrapper, and whitespace or
// control characters are never part of a user@host.
func validateRemoteHost(h string) error {
	if h == "" {
		return nil
	}
	if strings.HasPrefix(h, "-") {
		return fmt.Errorf("%q must not start with '-'", h)
	}
	if strings.ContainsFunc(h, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return fmt.Errorf("%q contains whitespace or control characters", h)
	}
	if strings.ContainsAny(h, "'\"`$;&|<>\\") {
		return fmt.Errorf("%q contains shell metacharacters; want user@host", h)
	}
	user, host, ok := strings.Cut(h, "@")
	if !ok {
		host, user = user, ""
	} else if user == "" {
		return fmt.Errorf("%q has an empty user before '@'", h)
	}
	if host == "" || strings.Contains(host, "@") {
		return fmt.Errorf("%q is not user@host", h)
	}
	return nil
}

// maxMediaBytes is the attachment cap in bytes.
func (c Config) maxMediaBytes() int64 { return int64(c.withDefaults().MediaMaxMB) << 20 }
