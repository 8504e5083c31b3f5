package inbound

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/gateway/gatewaytest"
	"github.com/openclaw-edge/edge/engine/tool"
	"github.com/openclaw-edge/edge/engine/tool/message"
)

// approveSender approves sender by pairing, as `openclaw pairing approve`.
func approveSender(t *testing.T, h *chanHarness, sender string) {
	t.Helper()
	req, _, err := h.in.pairing.Request("whatsapp", "default", sender, "", sender)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.in.pairing.Approve("whatsapp", req.Code); err != nil {
		t.Fatal(err)
	}
}

// TestMessageRecipients: the message tool writes to owners, senders
// approved by pairing and those allowFrom names, never to a stranger, a
// group or anyone a wildcard lets talk.
func TestMessageRecipients(t *testing.T) {
	const paired, listed, stranger = "+15550002222", "+15550003333", "+15559999999"
	h := newChanHarness(t, "", channel.Common{AllowFrom: []string{listed}})
	approveSender(t, h, paired)
	send := message.Tool(message.Config{Sender: h.in})
	for _, tc := range []struct {
		name, channel, to string
		// chat is the chat it is sent to; "" refused with err.
		chat, err string
	}{
		{"lastBeforeAnyContact", "", "", "", "has not written to the assistant from a channel yet, so there is no last chat; name a channel"},
		{"ownerByNumber", "whatsapp", owner, owner, ""},
		{"ownerByJID", "whatsapp", "15551234567@s.whatsapp.net", "15551234567@s.whatsapp.net", ""},
		{"ownerByDefault", "whatsapp", "", owner, ""},
		{"paired", "whatsapp", paired, paired, ""},
		{"allowFrom", "whatsapp", listed, listed, ""},
		{"stranger", "whatsapp", stranger, "", "not someone this assistant may write to"},
		{"group", "whatsapp", "120363000000000000@g.us", "", "not someone this assistant may write to"},
		{"unknownChannel", "telegram", owner, "", `channel "telegram" is not configured`},
		{"lastWithTo", "last", owner, "", "to needs a channel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := "note for " + tc.name
			raw := []byte(`{"channel":"` + tc.channel + `","to":"` + tc.to + `","text":"` + text + `"}`)
			r := send.Run(context.Background(), tool.Env{AgentID: "main"}, raw)
			got := r.Content[0].Text
			if tc.chat == "" {
				if !r.IsError || !strings.Contains(got, tc.err) {
					t.Fatalf("%q, want refused with %q", got, tc.err)
				}
				return
			}
			if r.IsError {
				t.Fatalf("refused: %q", got)
			}
			h.wa.WaitFor(t, func(sent []channel.Outbound) bool { return strings.Contains(chatText(sent, tc.chat), text) })
		})
	}
	// The owner's last contact, once they have written.
	h.wa.Deliver(t, dm(owner, "O1", "hi"))
	h.wa.WaitFor(t, func(sent []channel.Outbound) bool {
		return strings.Contains(chatText(sent, "15551234567@s.whatsapp.net"), "echo: hi")
	})
	r := send.Run(context.Background(), tool.Env{AgentID: "main"}, []byte(`{"text":"to the last chat"}`))
	if r.IsError {
		t.Fatalf("last: %q", r.Content[0].Text)
	}
	h.wa.WaitFor(t, func(sent []channel.Outbound) bool {
		return strings.Contains(chatText(sent, "15551234567@s.whatsapp.net"), "to the last chat")
	})
	all := h.wa.WaitSent(t, 1)
	for _, s := range all {
		if s.ChatID == stranger || strings.HasSuffix(s.ChatID, "@g.us") {
			t.Errorf("sent to a refused recipient: %+v", s)
		}
	}
}

// TestMessageWildcardIsNobody: allowFrom "*" lets anyone talk to the
// assistant; it does not let the assistant write to anyone.
func TestMessageWildcardIsNobody(t *testing.T) {
	h := newChanHarness(t, "", channel.Common{DMPolicy: "open", AllowFrom: []string{"*"}})
	if _, err := h.in.Send(context.Background(), "whatsapp", "", "+15559999999", "hi"); err == nil || !strings.Contains(err.Error(), "may write to") {
		t.Fatalf("err = %v, want refused", err)
	}
}

// TestMessageFromOwnerTurn: in an owner's turn, the model's message call
// reaches a paired contact through the outbox and the adapter.
func TestMessageFromOwnerTurn(t *testing.T) {
	const paired = "+15550002222"
	h := newChanHarness(t, "", channel.Common{},
		gatewaytest.CallTool("message", map[string]any{"channel": "whatsapp", "to": paired, "text": "Your parcel is here."}),
		gatewaytest.Reply("Told them."))
	h.tools.Add(message.Tool(message.Config{Sender: h.in}))
	approveSender(t, h, paired)
	h.wa.Deliver(t, dm(owner, "A1", "tell my neighbour the parcel is here"))
	h.wa.WaitFor(t, func(sent []channel.Outbound) bool {
		return strings.Contains(chatText(sent, paired), "Your parcel is here.") &&
			strings.Contains(chatText(sent, "15551234567@s.whatsapp.net"), "Told them.")
	})
	reqs := h.model.Requests()
	if !slices.ContainsFunc(reqs[0].Tools, func(s engine.ToolSpec) bool { return s.Name == "message" }) {
		t.Error("the owner's turn does not offer the message tool")
	}
}
