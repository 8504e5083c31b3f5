// Package waconfig is channels.whatsapp's configuration: the keys, their
// defaults and their validation, without WhatsApp's client library. The
// gateway decodes and checks the config with it; the adapter itself
// (engine/channel/whatsapp, go.mau.fi/whatsmeow and its SQLite store) runs
// in openclaw-whatsapp, a child process (engine/channel/channelproc), so a
// gateway without WhatsApp never pays for it.
package waconfig

import (
	"fmt"
	"strings"

	"github.com/openclaw-edge/edge/engine/channel"
)

// Defaults of the keys this package adds to channel.Common.
const (
	// DefaultMediaMaxMB is OpenClaw's channels.whatsapp.mediaMaxMb default.
	DefaultMediaMaxMB = 50
	// MaxMediaMaxMB bounds mediaMaxMb: WhatsApp takes documents up to 2 GB,
	// and a larger value would only let a sender fill the disk.
	MaxMediaMaxMB = 2048
)

// Config is channels.whatsapp (or one of channels.whatsapp.accounts.<name>),
// with OpenClaw's key names.
type Config struct {
	channel.Common
	// SendReadReceipts: mark a message read (blue ticks) once the gateway
	// has recorded it. nil means true, OpenClaw's default.
	SendReadReceipts *bool `json:"sendReadReceipts"`
	// MediaMaxMB caps an attachment in either direction, in MiB (0 means
	// DefaultMediaMaxMB).
	MediaMaxMB int `json:"mediaMaxMb"`
	// SelfChatMode: the account is the owner's personal number and the
	// owner talks to the assistant in WhatsApp's "message yourself" chat.
	// Messages the owner sends there (which WhatsApp marks as from us) are
	// delivered; everything else the owner sends is still ignored.
	SelfChatMode bool `json:"selfChatMode"`
}

// Validate checks the keys' values; the error names the bad key.
func (c Config) Validate() error {
	switch c.DMPolicy {
	case "", "pairing", "allowlist", "open", "disabled":
	default:
		return fmt.Errorf("dmPolicy: %q is not one of pairing, allowlist, open, disabled", c.DMPolicy)
	}
	switch c.GroupPolicy {
	case "", "allowlist", "open", "disabled":
	default:
		return fmt.Errorf("groupPolicy: %q is not one of allowlist, open, disabled", c.GroupPolicy)
	}
	switch c.ChunkMode {
	case "", "length", "newline":
	default:
		return fmt.Errorf("chunkMode: %q is not one of length, newline", c.ChunkMode)
	}
	if c.TextChunkLimit < 0 {
		return fmt.Errorf("textChunkLimit: %d is negative", c.TextChunkLimit)
	}
	if c.MediaMaxMB < 0 || c.MediaMaxMB > MaxMediaMaxMB {
		return fmt.Errorf("mediaMaxMb: %d is not between 1 and %d", c.MediaMaxMB, MaxMediaMaxMB)
	}
	for id := range c.Groups {
		if id == "*" {
			continue
		}
		if err := CheckChatID(id); err != nil {
			return fmt.Errorf("groups: %q is not a WhatsApp chat id: %w", id, err)
		}
	}
	return nil
}

// sendReadReceipts resolves the nil default.
// SendReadReceiptsOn is SendReadReceipts with its default.
func (c Config) SendReadReceiptsOn() bool {
	return c.SendReadReceipts == nil || *c.SendReadReceipts
}

// mediaMaxBytes resolves the zero default.
// MediaMaxBytes is MediaMaxMB in bytes, with its default.
func (c Config) MediaMaxBytes() int64 {
	mb := c.MediaMaxMB
	if mb == 0 {
		mb = DefaultMediaMaxMB
	}
	return int64(mb) << 20
}

// CheckChatID checks a chat id as engine/channel/whatsapp.ParseChatID
// reads it, without WhatsApp's library: a phone number, or
// "<user>@<server>" for a person (s.whatsapp.net, c.us: a phone number's
// digits) or a group or hidden user (g.us, lid: digits and dashes).
func CheckChatID(s string) error {
	s = strings.TrimSpace(s)
	if s == "" {
		return fmt.Errorf("empty chat id")
	}
	user, server, ok := strings.Cut(s, "@")
	if !ok {
		_, err := PhoneDigits(s)
		return err
	}
	user, device, hasDevice := strings.Cut(user, ":") // a device suffix is dropped
	if hasDevice && !AllDigitsOrDash(device) || strings.Contains(device, "-") {
		return fmt.Errorf("chat id %q: the device part is not a number", s)
	}
	user, _, _ = strings.Cut(user, ".")
	if user == "" {
		return fmt.Errorf("chat id %q has no user part", s)
	}
	switch server {
	case "s.whatsapp.net", "c.us":
		if _, err := PhoneDigits(user); err != nil {
			return fmt.Errorf("chat id %q: %w", s, err)
		}
	case "g.us", "lid":
		if !AllDigitsOrDash(user) {
			return fmt.Errorf("chat id %q: unexpected characters in the user part", s)
		}
	default:
		return fmt.Errorf("chat id %q: server %q is not a person or a group", s, server)
	}
	return nil
}

// PhoneDigits returns the digits of an international phone number
// ("+1 (555) 123-4567" → "15551234567"): 7 to 15 digits, not starting
// with 0 (E.164 has no leading zero; WhatsApp rejects national numbers).
func PhoneDigits(s string) (string, error) {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '+' && i == 0, r == ' ', r == '-', r == '.', r == '(', r == ')':
		default:
			return "", fmt.Errorf("%q is not a phone number", s)
		}
	}
	d := b.String()
	if len(d) < 7 || len(d) > 15 {
		return "", fmt.Errorf("%q is not a phone number (%d digits; E.164 has 7 to 15)", s, len(d))
	}
	if d[0] == '0' {
		return "", fmt.Errorf("%q is not an international number (starts with 0)", s)
	}
	return d, nil
}

// AllDigitsOrDash reports whether s is non-empty digits and dashes.
func AllDigitsOrDash(s string) bool {
	for _, r := range s {
		if (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return s != ""
}

// Init is what the gateway hands openclaw-whatsapp for one account
// (engine/channel/channelproc's Init): the config and where the account's
// files are.
type Init struct {
	Config    Config `json:"config"`
	Account   string `json:"account"`
	StorePath string `json:"storePath"` // whatsmeow's SQLite device store
	MediaDir  string `json:"mediaDir"`
	// Debug logs at debug level (gateway.logLevel "debug").
	Debug bool `json:"debug,omitempty"`
}
