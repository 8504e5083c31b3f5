package whatsapp

import (
	"testing"

	"github.com/openclaw-edge/edge/engine/channel/whatsapp/waconfig"
)

// TestCheckChatIDAgreesWithParse: the gateway's whatsmeow-free check of
// groups ids (waconfig) accepts exactly what the adapter can parse.
func TestCheckChatIDAgreesWithParse(t *testing.T) {
	for _, id := range []string{
		"+15551234567", "15551234567", "+1 (555) 123-4567", "0612345678", "123", "1234567890123456",
		"15551234567@s.whatsapp.net", "15551234567@c.us", "120363012345678901@g.us", "12036301-1234@g.us",
		"123456789012345@lid", "15551234567:12@s.whatsapp.net", "abc@g.us", "@g.us", "15551234567@broadcast",
		"status@broadcast", "120363@newsletter", "15551234567:abc@s.whatsapp.net", "15551234567:@s.whatsapp.net", "", " ", "a@b@c", "x@s.whatsapp.net", "1555123456x",
	} {
		_, perr := ParseChatID(id)
		cerr := waconfig.CheckChatID(id)
		if (perr == nil) != (cerr == nil) {
			t.Errorf("%q: ParseChatID err %v, CheckChatID err %v", id, perr, cerr)
		}
	}
}
