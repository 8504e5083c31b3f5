package access

import (
	"strings"

	"github.com/openclaw-edge/edge/engine/access/identity"
)

// The identity rules live in package identity, a standard-library leaf,
// so that package config checks the owner's entries with the very code
// this package matches them with; these names keep access's callers
// (routing, the gateway, the appliance) as they were.

// MaxIDBytes bounds an id (identity.MaxIDBytes).
const MaxIDBytes = identity.MaxIDBytes

// Kind is what Canonical recognised an id as.
type Kind = identity.Kind

// Kinds of id.
const (
	Opaque   = identity.Opaque
	Phone    = identity.Phone
	Verbatim = identity.Verbatim
)

// ID is a canonical id (identity.ID).
type ID = identity.ID

// ErrUnusableID is wrapped by Canonical's refusals.
var ErrUnusableID = identity.ErrUnusableID

// Canonical is the canonical form of raw, an id as the platform of channel
// ch sent it (identity.Canonical).
func Canonical(ch, raw string) (ID, error) { return identity.Canonical(ch, raw) }

// ConfigID is the canonical form of a config entry the owner typed for
// channel ch (identity.ConfigID).
func ConfigID(ch, entry string) (ID, error) { return identity.ConfigID(ch, entry) }

// Same reports whether raw ids a and b of channel ch are the same
// (identity.Same).
func Same(ch, a, b string) bool { return identity.Same(ch, a, b) }

// Display shows an id for logs, pairing lists and notices
// (identity.Display).
func Display(s string) string { return identity.Display(s) }

// legacyNormalize is Normalize as it was before Canonical: the key
// pairing approvals were stored under. Only for finding those; see
// Pairing.Approved.
func legacyNormalize(ch, id string) string {
	id = strings.TrimSpace(id)
	if strings.Contains(id, "@") {
		return identity.FoldASCII(id)
	}
	if strings.HasPrefix(id, "+") || (ch == "whatsapp" && id != "" && strings.Trim(id, "0123456789 -.()") == "") {
		var b strings.Builder
		b.WriteByte('+')
		for _, r := range id {
			if r >= '0' && r <= '9' {
				b.WriteRune(r)
			}
		}
		if b.Len() > 1 {
			return b.String()
		}
	}
	return id
}
