// Package whatsapptest lets tests of other packages (the whole gateway in
// appliance) run the real WhatsApp adapter. WhatsApp's servers can be
// neither reached nor faithfully faked, so the adapter is faked at its own
// send interface and nowhere else: Conn is a whatsapp.Conn that records
// what the adapter sends and feeds it real whatsmeow events (Dispatch),
// and LinkDevice writes a linked device into a real SQLite device store,
// which the adapter then opens as in production.
//
//	conn := whatsapptest.NewConn()
//	whatsapptest.LinkDevice(t, storePath, self, selfLID)
//	a, _ := whatsapp.New(cfg, whatsapp.Deps{StorePath: storePath, Dial: conn.Dial, …})
//	go a.Run(ctx, inbox)
//	conn.WaitConnected(t, 10*time.Second)
//	conn.Dispatch(&events.Message{…})
//	sent := conn.WaitSent(t, 10*time.Second, "a reply", func(s []whatsapptest.Sent) bool { … })
package whatsapptest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waAdv"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/store"
	"go.mau.fi/whatsmeow/store/sqlstore"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"
	"google.golang.org/protobuf/proto"

	"github.com/openclaw-edge/edge/engine/channel/whatsapp"

	// The adapter's own pure-Go SQLite driver, named here because this
	// package opens the device store itself.
	_ "modernc.org/sqlite"
)

// Sent is one message the adapter sent, as the wire would carry it (the
// message went through proto.Marshal and back).
type Sent struct {
	To      types.JID
	Message *waE2E.Message
	ID      types.MessageID
}

// Text is the message's text: the conversation, the extended text, or a
// media caption.
func (s Sent) Text() string {
	m := s.Message
	switch {
	case m.GetConversation() != "":
		return m.GetConversation()
	case m.ExtendedTextMessage != nil:
		return m.ExtendedTextMessage.GetText()
	case m.ImageMessage != nil:
		return m.ImageMessage.GetCaption()
	case m.VideoMessage != nil:
		return m.VideoMessage.GetCaption()
	case m.DocumentMessage != nil:
		return m.DocumentMessage.GetCaption()
	}
	return ""
}

// Quoted is the id of the message this one quotes ("" when none).
func (s Sent) Quoted() string {
	return s.Message.GetExtendedTextMessage().GetContextInfo().GetStanzaID()
}

// Read is one read receipt the adapter sent.
type Read struct {
	IDs          []types.MessageID
	Chat, Sender types.JID
}

// Conn is a fake connection to WhatsApp. Its zero value is not usable;
// call NewConn.
type Conn struct {
	mu        sync.Mutex
	handlers  map[uint32]whatsmeow.EventHandlerWithSuccessStatus
	nextID    uint32
	connected bool
	dials     int
	dev       types.JID
	up        chan struct{} // closed at the first ConnectContext
	sent      []Sent
	failed    int
	sendErr   error
	reads     []Read
	uploads   []whatsmeow.MediaType
	media     []byte
	downloads int
	changed   chan struct{} // closed and replaced at every send
}

var _ whatsapp.Conn = (*Conn)(nil)

// NewConn returns a fake connection that is not connected yet.
func NewConn() *Conn {
	return &Conn{
		handlers: map[uint32]whatsmeow.EventHandlerWithSuccessStatus{},
		up:       make(chan struct{}),
		changed:  make(chan struct{}),
	}
}

// Dial is a whatsapp.Deps.Dial: every Run of the adapter gets this same
// connection, as one phone's account would.
func (c *Conn) Dial(_ context.Context, dev *store.Device) (whatsapp.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dials++
	if dev.ID != nil {
		c.dev = *dev.ID
	}
	return c, nil
}

// Dials counts the Runs that dialled.
func (c *Conn) Dials() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dials
}

// Device is the device JID the last Run dialled as.
func (c *Conn) Device() types.JID {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dev
}

// ConnectContext connects at once and emits events.Connected, as
// whatsmeow does after its handshake.
func (c *Conn) ConnectContext(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.connected = true
	select {
	case <-c.up:
	default:
		close(c.up)
	}
	c.mu.Unlock()
	c.Dispatch(&events.Connected{})
	return nil
}

// Disconnect drops the connection; like whatsmeow's, it emits no event.
func (c *Conn) Disconnect() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.connected = false
}

// IsConnected implements whatsapp.Client.
func (c *Conn) IsConnected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connected
}

// AddEventHandlerWithSuccessStatus registers an event handler, as
// whatsmeow's does.
func (c *Conn) AddEventHandlerWithSuccessStatus(h whatsmeow.EventHandlerWithSuccessStatus) uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextID++
	c.handlers[c.nextID] = h
	return c.nextID
}

// RemoveEventHandler removes a handler.
func (c *Conn) RemoveEventHandler(id uint32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.handlers[id]
	delete(c.handlers, id)
	return ok
}

// Dispatch hands evt to the registered handlers in order, synchronously,
// as whatsmeow does with a decrypted message. It reports whether every
// handler succeeded — with SynchronousAck, whether WhatsApp would get the
// message acknowledged — and false when no handler is registered (no Run
// is connected): WhatsApp would keep the message for later.
func (c *Conn) Dispatch(evt any) bool {
	c.mu.Lock()
	ids := make([]uint32, 0, len(c.handlers))
	for id := range c.handlers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	hs := make([]whatsmeow.EventHandlerWithSuccessStatus, len(ids))
	for i, id := range ids {
		hs[i] = c.handlers[id]
	}
	c.mu.Unlock()
	ok := len(hs) > 0
	for _, h := range hs {
		if !h(evt) {
			ok = false
		}
	}
	return ok
}

// WaitConnected waits until a Run has connected (and so registered its
// handler): events dispatched before that go nowhere.
func (c *Conn) WaitConnected(t testing.TB, timeout time.Duration) {
	t.Helper()
	select {
	case <-c.up:
	case <-time.After(timeout):
		t.Fatalf("whatsapptest: the adapter did not connect within %s", timeout)
	}
}

// FailSends makes every SendMessage fail with err until it is called with
// nil. whatsmeow's own errors (whatsmeow.ErrNotConnected …) are
// classified by the adapter as they would be in production.
func (c *Conn) FailSends(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sendErr = err
}

// Failed counts the sends that failed because of FailSends.
func (c *Conn) Failed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failed
}

// SendMessage records msg (after a round trip through the wire format, so
// an invalid message fails here as it would on the wire).
func (c *Conn) SendMessage(ctx context.Context, to types.JID, msg *waE2E.Message, extra ...whatsmeow.SendRequestExtra) (whatsmeow.SendResponse, error) {
	if err := ctx.Err(); err != nil {
		return whatsmeow.SendResponse{}, err
	}
	b, err := proto.Marshal(msg)
	if err != nil {
		return whatsmeow.SendResponse{}, fmt.Errorf("whatsapptest: marshal: %w", err)
	}
	var cp waE2E.Message
	if err := proto.Unmarshal(b, &cp); err != nil {
		return whatsmeow.SendResponse{}, fmt.Errorf("whatsapptest: unmarshal: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sendErr != nil {
		c.failed++
		return whatsmeow.SendResponse{}, c.sendErr
	}
	if !c.connected {
		return whatsmeow.SendResponse{}, whatsmeow.ErrNotConnected
	}
	id := types.MessageID(fmt.Sprintf("3EB0FAKE%08d", len(c.sent)))
	if len(extra) > 0 && extra[0].ID != "" {
		id = extra[0].ID
	}
	c.sent = append(c.sent, Sent{To: to, Message: &cp, ID: id})
	close(c.changed)
	c.changed = make(chan struct{})
	return whatsmeow.SendResponse{ID: id, Timestamp: time.Now()}, nil
}

// Sent returns the messages sent so far, in order.
func (c *Conn) Sent() []Sent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Sent(nil), c.sent...)
}

// SentTo returns the messages sent to chat so far.
func (c *Conn) SentTo(chat types.JID) []Sent {
	var out []Sent
	for _, s := range c.Sent() {
		if s.To == chat {
			out = append(out, s)
		}
	}
	return out
}

// WaitSent waits until cond holds for the messages sent so far and
// returns them; what names the wait in the failure.
func (c *Conn) WaitSent(t testing.TB, timeout time.Duration, what string, cond func([]Sent) bool) []Sent {
	t.Helper()
	deadline := time.After(timeout)
	for {
		c.mu.Lock()
		sent, changed := append([]Sent(nil), c.sent...), c.changed
		c.mu.Unlock()
		if cond(sent) {
			return sent
		}
		select {
		case <-changed:
		case <-deadline:
			var b []byte
			for _, s := range sent {
				b = fmt.Appendf(b, "\n  to %s: %q", s.To, s.Text())
			}
			t.Fatalf("whatsapptest: no %s within %s; sent:%s", what, timeout, b)
		}
	}
}

// SetMedia sets what downloading an inbound attachment yields.
func (c *Conn) SetMedia(data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.media = data
}

// Downloads counts the attachment downloads.
func (c *Conn) Downloads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.downloads
}

// DownloadToFile writes the SetMedia bytes, in chunks as an HTTP body
// would arrive.
func (c *Conn) DownloadToFile(ctx context.Context, _ whatsmeow.DownloadableMessage, file whatsmeow.File) error {
	c.mu.Lock()
	c.downloads++
	data := c.media
	c.mu.Unlock()
	if data == nil {
		return errors.New("whatsapptest: no media set")
	}
	for len(data) > 0 {
		n := min(len(data), 4096)
		if _, err := file.Write(data[:n]); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// Upload pretends to upload an outbound attachment.
func (c *Conn) Upload(_ context.Context, plaintext []byte, mediaType whatsmeow.MediaType) (whatsmeow.UploadResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.uploads = append(c.uploads, mediaType)
	return whatsmeow.UploadResponse{
		URL: "https://mmg.whatsapp.net/whatsapptest", DirectPath: "/v/whatsapptest", MediaKey: []byte("key"),
		FileEncSHA256: []byte("enc"), FileSHA256: []byte("sha"), FileLength: uint64(len(plaintext)),
	}, nil
}

// SendChatPresence accepts typing indicators.
func (c *Conn) SendChatPresence(context.Context, types.JID, types.ChatPresence, types.ChatPresenceMedia) error {
	return nil
}

// MarkRead records a read receipt.
func (c *Conn) MarkRead(_ context.Context, ids []types.MessageID, _ time.Time, chat, sender types.JID, _ ...types.ReceiptType) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads = append(c.reads, Read{IDs: ids, Chat: chat, Sender: sender})
	return nil
}

// Reads returns the read receipts sent so far.
func (c *Conn) Reads() []Read {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Read(nil), c.reads...)
}

// LinkDevice writes a device linked as self (a phone-number JID; device
// number 0 is taken as 1) and selfLID (may be empty) into the SQLite device
// store at path, creating it 0600 as the adapter does, and records the
// given LID → phone-number mappings, which the adapter uses to name
// LID-addressed senders by number. The keys are fresh and the account
// signature a dummy: nothing here ever talks to WhatsApp.
func LinkDevice(t testing.TB, path string, self, selfLID types.JID, lids ...store.LIDMapping) {
	t.Helper()
	if err := linkDevice(context.Background(), path, self, selfLID, lids); err != nil {
		t.Fatalf("whatsapptest: link a device in %s: %v", path, err)
	}
}

func linkDevice(ctx context.Context, path string, self, selfLID types.JID, lids []store.LIDMapping) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	c, err := sqlstore.New(ctx, "sqlite", "file:"+filepath.ToSlash(path)+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)", nil)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	dev := c.NewDevice()
	id := self
	if id.Device == 0 {
		id.Device = 1
	}
	dev.ID = &id
	if !selfLID.IsEmpty() {
		lid := selfLID
		lid.Device = id.Device
		dev.LID = lid
	}
	dev.PushName = "OpenClaw Edge test"
	dev.Account = &waAdv.ADVSignedDeviceIdentity{
		Details: []byte{1}, AccountSignature: make([]byte, 64), AccountSignatureKey: make([]byte, 32), DeviceSignature: make([]byte, 64),
	}
	if err := c.PutDevice(ctx, dev); err != nil {
		return errors.Join(fmt.Errorf("put device: %w", err), c.Close())
	}
	if len(lids) > 0 {
		if err := dev.LIDs.PutManyLIDMappings(ctx, lids); err != nil {
			return errors.Join(fmt.Errorf("put LID mappings: %w", err), c.Close())
		}
	}
	return c.Close()
}
