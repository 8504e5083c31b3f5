package whatsapp

import (
	"fmt"

	"github.com/openclaw-edge/edge/engine/channel"
)

// Defaults of the keys this package adds to channel.Common.
const (
	// DefaultMediaMaxMB is OpenClaw's channels.whatsapp.mediaMaxMb default.
	DefaultMediaMaxMB = 50
	// maxMediaMaxMB bounds mediaMaxMb: WhatsApp takes documents up to 2 GB,
	// and a larger value would only let a sender fill the disk.
	maxMediaMaxMB = 2048
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
	if c.MediaMaxMB < 0 || c.MediaMaxMB > maxMediaMaxMB {
		return fmt.Errorf("mediaMaxMb: %d is not between 1 and %d", c.MediaMaxMB, maxMediaMaxMB)
	}
	for id := range c.Groups {
		if id == "*" {
			continue
		}
		if _, err := ParseChatID(id); err != nil {
			return fmt.Errorf("groups: %q is not a WhatsApp chat id: %w", id, err)
		}
	}
	return nil
}

// sendReadReceipts resolves the nil default.
func (c Config) sendReadReceipts() bool {
	return c.SendReadReceipts == nil || *c.SendReadReceipts
}

// mediaMaxBytes resolves the zero default.
func (c Config) mediaMaxBytes() int64 {
	mb := c.MediaMaxMB
	if mb == 0 {
		mb = DefaultMediaMaxMB
	}
	return int64(mb) << 20
}
