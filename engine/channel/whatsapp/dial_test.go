package whatsapp_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/store"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"
	"google.golang.org/protobuf/proto"

	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/channel/channeltest"
	"github.com/openclaw-edge/edge/engine/channel/whatsapp"
	"github.com/openclaw-edge/edge/engine/channel/whatsapp/whatsapptest"
)

// TestRunWithDial runs the adapter's Run on a real SQLite device store
// linked by whatsapptest, with the fake connection at Deps.Dial: the seam
// the gateway's end-to-end test uses. Self comes from the device store,
// a LID-addressed sender is named by the number in the store's LID map,
// and a send goes through the fake.
func TestRunWithDial(t *testing.T) {
	self := types.NewJID("15550000001", types.DefaultUserServer)
	selfLID := types.NewJID("99990000001", types.HiddenUserServer)
	bobLID := types.NewJID("88881234567", types.HiddenUserServer)
	bobPN := types.NewJID("447700900123", types.DefaultUserServer)
	grp := types.NewJID("120363025246125486", types.GroupServer)

	path := filepath.Join(t.TempDir(), "whatsapp", "default.db")
	whatsapptest.LinkDevice(t, path, self, selfLID, store.LIDMapping{LID: bobLID, PN: bobPN})
	conn := whatsapptest.NewConn()
	a, err := whatsapp.New(whatsapp.Config{}, whatsapp.Deps{StorePath: path, Store: channeltest.NewStore(), Dial: conn.Dial})
	if err != nil {
		t.Fatal(err)
	}
	in := channeltest.NewInbox()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, in) }()
	conn.WaitConnected(t, 10*time.Second)
	// The Connected event is handled just after the connect call returns.
	for deadline := time.Now().Add(10 * time.Second); a.Status().State != channel.StateLinked && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if st := a.Status(); st.State != channel.StateLinked || st.Self != "+15550000001" {
		t.Fatalf("status after connect: %+v", st)
	}
	if d := conn.Device(); d.User != self.User {
		t.Errorf("dialled as %v", d)
	}

	ok := conn.Dispatch(&events.Message{
		Info: types.MessageInfo{
			MessageSource: types.MessageSource{Chat: grp, Sender: bobLID, IsGroup: true, AddressingMode: types.AddressingModeLID},
			ID:            "G1", PushName: "Bob", Timestamp: time.Now(),
		},
		Message: &waE2E.Message{ExtendedTextMessage: &waE2E.ExtendedTextMessage{
			Text: proto.String("@assistant hi"), ContextInfo: &waE2E.ContextInfo{MentionedJID: []string{selfLID.String()}},
		}},
	})
	if !ok {
		t.Fatal("the handler reported failure")
	}
	m, got := in.Next(time.Second)
	if !got || m.SenderID != "+447700900123" || !m.Mentioned || m.ChatID != grp.String() {
		t.Fatalf("delivered %+v", m)
	}
	if r := conn.Reads(); len(r) != 1 || r[0].IDs[0] != "G1" {
		t.Errorf("read receipts %+v", r)
	}

	if _, err := a.Send(t.Context(), channel.Outbound{ChatID: m.ChatID, Text: "hello", ReplyTo: "G1", IdempotencyKey: "k"}); err != nil {
		t.Fatal(err)
	}
	sent := conn.SentTo(grp)
	if len(sent) != 1 || sent[0].Text() != "hello" || sent[0].Quoted() != "G1" || sent[0].ID != whatsapp.MessageID("default", "k", 0) {
		t.Fatalf("sent %+v", sent)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if conn.IsConnected() || conn.Dispatch(&events.Connected{}) {
		t.Error("Run left the fake connected or its handler registered")
	}
}
