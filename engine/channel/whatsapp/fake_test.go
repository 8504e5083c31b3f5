package whatsapp

import (
	"context"
	"sync"
	"time"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types"
	"google.golang.org/protobuf/proto"
)

// fakeClient records what the adapter asks of WhatsApp.
type fakeClient struct {
	mu        sync.Mutex
	connected bool
	sent      []sentMsg
	uploads   []whatsmeow.MediaType
	reads     []readReceipt
	presence  []types.ChatPresence
	sendErr   error
	// download is written by DownloadToFile (nil: nothing).
	download    []byte
	downloadErr error
}

type sentMsg struct {
	to  types.JID
	msg *waE2E.Message
	id  types.MessageID
}

type readReceipt struct {
	ids          []types.MessageID
	chat, sender types.JID
}

func newFake() *fakeClient { return &fakeClient{connected: true} }

func (f *fakeClient) SendMessage(ctx context.Context, to types.JID, msg *waE2E.Message, extra ...whatsmeow.SendRequestExtra) (whatsmeow.SendResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sendErr != nil {
		return whatsmeow.SendResponse{}, f.sendErr
	}
	id := types.MessageID("3EB0RANDOM")
	if len(extra) > 0 && extra[0].ID != "" {
		id = extra[0].ID
	}
	// Marshal and back, as the wire would: the message must be valid.
	b, err := proto.Marshal(msg)
	if err != nil {
		return whatsmeow.SendResponse{}, err
	}
	var cp waE2E.Message
	if err := proto.Unmarshal(b, &cp); err != nil {
		return whatsmeow.SendResponse{}, err
	}
	f.sent = append(f.sent, sentMsg{to: to, msg: &cp, id: id})
	return whatsmeow.SendResponse{ID: id, Timestamp: time.Unix(1700000000, 0)}, nil
}

func (f *fakeClient) Upload(ctx context.Context, plaintext []byte, mediaType whatsmeow.MediaType) (whatsmeow.UploadResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.uploads = append(f.uploads, mediaType)
	return whatsmeow.UploadResponse{
		URL: "https://mmg.whatsapp.net/x", DirectPath: "/v/x", MediaKey: []byte("k"),
		FileEncSHA256: []byte("e"), FileSHA256: []byte("s"), FileLength: uint64(len(plaintext)),
	}, nil
}

func (f *fakeClient) DownloadToFile(ctx context.Context, msg whatsmeow.DownloadableMessage, file whatsmeow.File) error {
	f.mu.Lock()
	data, err := f.download, f.downloadErr
	f.mu.Unlock()
	if err != nil {
		return err
	}
	// Write in chunks, as io.Copy from the HTTP body would.
	for len(data) > 0 {
		n := min(len(data), 4096)
		if _, err := file.Write(data[:n]); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

func (f *fakeClient) SendChatPresence(ctx context.Context, jid types.JID, state types.ChatPresence, media types.ChatPresenceMedia) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.presence = append(f.presence, state)
	return nil
}

func (f *fakeClient) MarkRead(ctx context.Context, ids []types.MessageID, timestamp time.Time, chat, sender types.JID, receiptTypeExtra ...types.ReceiptType) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads = append(f.reads, readReceipt{ids: ids, chat: chat, sender: sender})
	return nil
}

func (f *fakeClient) IsConnected() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.connected
}

func (f *fakeClient) sentMsgs() []sentMsg {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sentMsg(nil), f.sent...)
}

func (f *fakeClient) readReceipts() []readReceipt {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]readReceipt(nil), f.reads...)
}
