package inbound

import (
	"github.com/openclaw-edge/edge/engine/gateway"
	"github.com/openclaw-edge/edge/engine/gateway/gatewaytest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/channel"
)

const ownerChat = "15551234567@s.whatsapp.net"

// approvalChanHarness is a channel harness whose owner's turn runs the
// fake exec tool, replies without chunking, and lets strangers DM (open)
// and the owner write in group 123@g.us without a mention.
func approvalChanHarness(t *testing.T, steps ...gatewaytest.Step) (*chanHarness, *gatewaytest.Exec) {
	t.Helper()
	fx := &gatewaytest.Exec{Allow: &gatewaytest.MemAllowlist{}}
	h := newChanHarnessConfig(t, "", channel.Common{DMPolicy: "open", Groups: map[string]channel.Group{"123@g.us": {RequireMention: new(false)}}}, func(c *gateway.Config) {
		c.Tools.Add(fx)
		c.Allowlist = fx.Allow
	}, steps...)
	h.in.accounts[accountKey("whatsapp", "default")].ChunkLimit = 8000 // notices whole, for matching
	return h, fx
}

// pendingID waits for the one pending approval and returns its id.
func pendingID(t *testing.T, h *chanHarness) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if list := h.g.Approvals(); len(list) == 1 {
			return list[0].ID
		}
		if time.Now().After(deadline) {
			t.Fatalf("pending approvals: %+v", h.g.Approvals())
		}
	}
}

// TestChannelApproveInChat: the owner answers an exec approval from the
// chat whose turn waits for it (its queue is held by that turn), from
// another chat, and never from anyone else, whatever id they claim.
func TestChannelApproveInChat(t *testing.T) {
	group := func(sender, id, text string) engine.Inbound {
		return engine.Inbound{Channel: "whatsapp", ChatType: engine.ChatGroup, ChatID: "123@g.us", SenderID: sender, MessageID: id, Text: text}
	}
	tests := []struct {
		name     string
		refused  []func(id string) engine.Inbound // answers that must not count
		answer   func(id string) engine.Inbound
		want     string // the exec's decision
		replyHas string // in the answer's reply
		chat     string // where that reply goes
	}{
		{"approve in the same chat", nil,
			func(id string) engine.Inbound { return dm(owner, "A2", "/approve "+id) }, "allow-once", "Approved", ownerChat},
		{"deny in the same chat", nil,
			func(id string) engine.Inbound { return dm(owner, "A2", "/deny "+id) }, "deny", "Denied", ownerChat},
		{"approve from another chat", nil,
			func(id string) engine.Inbound { return group(owner, "A2", "/approve "+id) }, "allow-once", "Approved", "123@g.us"},
		{"deny from another chat, upper case", nil,
			func(id string) engine.Inbound { return group(owner, "A2", "/DENY "+id) }, "deny", "Denied", "123@g.us"},
		{"strangers and look-alikes are refused", []func(id string) engine.Inbound{
			func(id string) engine.Inbound { return dm(stranger, "X1", "/approve "+id) },
			func(id string) engine.Inbound { return dm(stranger, "X2", "/approve "+id+" elevated") },
			func(id string) engine.Inbound { return dm(stranger, "X3", "/deny "+id) },
			func(id string) engine.Inbound { return dm(owner+"x", "X4", "/approve "+id) },
			func(id string) engine.Inbound { return dm(owner+";x", "X5", "/approve "+id) },
			func(id string) engine.Inbound { return dm("+1555123456７", "X6", "/approve "+id) },
			func(id string) engine.Inbound { return dm(owner+"\u200b", "X7", "/approve "+id) },
			func(id string) engine.Inbound { return group(stranger, "X8", "/approve "+id) },
		}, func(id string) engine.Inbound { return dm(owner, "A2", "/approve "+id) }, "allow-once", "Approved", ownerChat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, fx := approvalChanHarness(t, gatewaytest.RunCmd("rm", "-rf", "build"), gatewaytest.Reply("cleaned"))
			h.wa.Deliver(t, dm(owner, "A1", "clean the build"))
			id := pendingID(t, h)
			h.wa.WaitFor(t, func(sent []channel.Outbound) bool {
				return strings.Contains(chatText(sent, ownerChat), "Reply /approve "+id)
			})
			for i, r := range tt.refused {
				m := r(id)
				h.wa.Deliver(t, m)
				h.wa.WaitFor(t, func(sent []channel.Outbound) bool {
					return strings.Contains(chatText(sent, m.ChatID), "Only the owner can use /")
				})
				if len(h.g.Approvals()) != 1 || len(fx.Got()) != 0 {
					t.Fatalf("refused answer %d (%q from %q) decided: %v %q", i, m.Text, m.SenderID, h.g.Approvals(), fx.Got())
				}
			}
			m := tt.answer(id)
			h.wa.Deliver(t, m)
			h.wa.WaitFor(t, func(sent []channel.Outbound) bool {
				return strings.Contains(chatText(sent, ownerChat), "cleaned") && strings.Contains(chatText(sent, tt.chat), tt.replyHas+" "+id)
			})
			if runs := fx.Got(); !slices.Equal(runs, []string{"rm -rf build: " + tt.want}) {
				t.Fatalf("runs = %q", runs)
			}
			// An approval raised in the owner's DM is answered in a group
			// without its command: the group's members read the reply.
			if tt.chat != ownerChat && strings.Contains(chatText(h.wa.WaitSent(t, 1), tt.chat), "rm -rf build") {
				t.Fatalf("the group saw the DM's command: %q", chatText(h.wa.WaitSent(t, 1), tt.chat))
			}
			// Handled once: the inbox is empty, a redelivery is a duplicate.
			h.wa.Deliver(t, m)
			sentBefore := len(h.wa.WaitSent(t, 1))
			waitInboxEmpty(t, h)
			if n := len(h.wa.WaitSent(t, 1)); n != sentBefore {
				t.Fatalf("a redelivered /approve was answered again: %d messages, had %d", n, sentBefore)
			}
		})
	}
}

// waitInboxEmpty waits until every inbound message was handled and removed.
func waitInboxEmpty(t *testing.T, h *chanHarness) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		n := 0
		_ = h.db.ViewRecords(func(tx engine.RecordTx) error {
			return tx.ForEach(bucketInbox, "", func(string, []byte) error { n++; return nil })
		})
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d inbound messages left in the inbox", n)
		}
	}
}

// TestChannelApprovalNoticeExact: the owner's notice, the /approve reply
// and /status show the command exactly, with control characters escaped
// and nothing folded: "grep …\nrm -rf memory" reads as two commands. A
// command too long for a chat is cut visibly.
func TestChannelApprovalNoticeExact(t *testing.T) {
	long := "echo " + strings.Repeat("a", 3000) + "; rm -rf memory"
	tests := []struct {
		name, command string
		want          []string
		not           []string
	}{
		{"newline", "grep -rn TODO .\nrm -rf memory", []string{"`grep -rn TODO .\\nrm -rf memory`"}, []string{"TODO . rm"}},
		{"tab and CR", "ls\t-la\rrm -rf ~", []string{"`ls\\t-la\\rrm -rf ~`"}, nil},
		{"ESC and bidi", "ls \x1b[2K\u202eexe.txt \u200b\u2028x", []string{"`ls \\x1b[2K\\u202eexe.txt \\u200b\\u2028x`"}, nil},
		{"too long", long, []string{"`echo aaaa", "… (1", " more bytes)` (the whole command: `openclaw approvals list`)"}, []string{"rm -rf memory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, fx := approvalChanHarness(t, gatewaytest.CallTool("fakeexec", gatewaytest.ExecArgs{Command: tt.command}), gatewaytest.Reply("done"))
			h.wa.Deliver(t, dm(owner, "A1", "go"))
			id := pendingID(t, h)
			h.wa.WaitFor(t, func(sent []channel.Outbound) bool {
				return strings.Contains(chatText(sent, ownerChat), "Reply /approve "+id)
			})
			st, err := h.g.Send(t.Context(), api.SendRequest{Text: "/status"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			h.wa.Deliver(t, dm(owner, "A2", "/deny "+id))
			h.wa.WaitFor(t, func(sent []channel.Outbound) bool { return strings.Contains(chatText(sent, ownerChat), "Denied "+id) })
			if runs := fx.Got(); len(runs) != 1 || !strings.HasSuffix(runs[0], ": deny") {
				t.Fatalf("runs = %q", runs)
			}
			texts := map[string]string{"/status": st.Reply}
			for _, s := range h.wa.WaitSent(t, 2) {
				switch {
				case strings.HasPrefix(s.Text, "Approval needed"):
					texts["notice"] = s.Text
				case strings.HasPrefix(s.Text, "Denied"):
					texts["/deny reply"] = s.Text
				}
			}
			if len(texts) != 3 {
				t.Fatalf("missing texts: %q", texts)
			}
			for what, text := range texts {
				if strings.ContainsAny(text, "\x1b\r\t\u202e\u200b\u2028") {
					t.Errorf("%s holds raw control characters: %q", what, text)
				}
				for _, w := range tt.want {
					if !strings.Contains(text, w) {
						t.Errorf("%s lacks %q:\n%s", what, w, text)
					}
				}
				for _, n := range tt.not {
					if strings.Contains(text, n) {
						t.Errorf("%s holds %q:\n%s", what, n, text)
					}
				}
			}
		})
	}
}
