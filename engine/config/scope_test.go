package config

import (
	"strings"
	"testing"
)

// dmScope "main" with a policy that lets non-owners in warns, naming the
// channel account and who gets in; nothing else does.
func TestSharedMainWarnings(t *testing.T) {
	tests := []struct {
		name, json string
		want       []string // substrings, one warning each
	}{
		{"open", `{session:{dmScope:"main"}, channels:{whatsapp:{dmPolicy:"open"}}}`, []string{`channels.whatsapp (dmPolicy "open") lets in anyone`}},
		{"pairing by default", `{session:{dmScope:"main"}, channels:{imessage:{cliPath:"imsg"}}}`, []string{`channels.imessage (dmPolicy "pairing") lets in every sender you approve`}},
		{"allowlist of owners only", `{session:{dmScope:"main"}, commands:{ownerAllowFrom:["whatsapp:+15550001111"]}, channels:{whatsapp:{dmPolicy:"allowlist", allowFrom:["+15550001111"]}}}`, nil},
		{"allowlist with a stranger", `{session:{dmScope:"main"}, commands:{ownerAllowFrom:["whatsapp:+15550001111"]}, channels:{whatsapp:{dmPolicy:"allowlist", allowFrom:["+15550001111", "+15559990000"]}}}`, []string{`lets in "+15559990000", who is not in commands.ownerAllowFrom`}},
		{"allowlist owner of another channel", `{session:{dmScope:"main"}, commands:{ownerAllowFrom:["imessage:kate@example.com"]}, channels:{email:{dmPolicy:"allowlist", allowFrom:["kate@example.com"]}}}`, []string{`"kate@example.com", who is not in commands.ownerAllowFrom`}},
		{"allowlist look-alike of the owner", `{session:{dmScope:"main"}, commands:{ownerAllowFrom:["imessage:kate@example.com"]}, channels:{imessage:{dmPolicy:"allowlist", allowFrom:["\u212Aate@example.com"]}}}`, []string{`"\u212aate@example.com", who is not in commands.ownerAllowFrom`}},
		{"allowlist owner written another way", `{session:{dmScope:"main"}, commands:{ownerAllowFrom:["WhatsApp:+1 555 000 1111"]}, channels:{whatsapp:{dmPolicy:"allowlist", allowFrom:["whatsapp:+15550001111"]}}}`, nil},
		{"allowlist star", `{session:{dmScope:"main"}, channels:{email:{dmPolicy:"allowlist", allowFrom:["*"]}}}`, []string{`anyone ("*" in allowFrom)`}},
		{"disabled", `{session:{dmScope:"main"}, channels:{whatsapp:{dmPolicy:"disabled"}}}`, nil},
		{"channel off", `{session:{dmScope:"main"}, channels:{whatsapp:{enabled:false, dmPolicy:"open"}}}`, nil},
		{"per account", `{session:{dmScope:"main"}, channels:{whatsapp:{dmPolicy:"disabled", accounts:{home:{}, shop:{dmPolicy:"open"}, off:{enabled:false, dmPolicy:"open"}}}}}`, []string{`channels.whatsapp.accounts.shop (dmPolicy "open")`}},
		{"chunking only: no account", `{session:{dmScope:"main"}, channels:{whatsapp:{textChunkLimit:1000}}}`, nil},
		{"default scope", `{channels:{whatsapp:{dmPolicy:"open"}}}`, nil},
		{"per-channel-peer", `{session:{dmScope:"per-channel-peer"}, channels:{whatsapp:{dmPolicy:"open"}}}`, nil},
		{"two channels", `{session:{dmScope:"main"}, channels:{whatsapp:{dmPolicy:"open"}, email:{imapHost:"mail.example.com"}}}`, []string{"channels.email", "channels.whatsapp"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.json), "openclaw.json")
			if err != nil {
				t.Fatal(err)
			}
			var got []*Error
			for _, w := range c.Warnings() {
				if w.Path == "session.dmScope" {
					got = append(got, w)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("warnings %v, want %d", got, len(tt.want))
			}
			for i, w := range got {
				if !strings.Contains(w.Reason, tt.want[i]) || w.Line != 1 || !strings.Contains(w.Reason, `"per-channel-peer"`) {
					t.Errorf("warning %d = %v (line %d), want ~%q", i, w, w.Line, tt.want[i])
				}
			}
		})
	}
}
