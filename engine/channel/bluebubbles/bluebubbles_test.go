package bluebubbles

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/channel/channeltest"
)

const pw = "s3cret pw&x"

// fakeServer speaks the slice of the BlueBubbles REST API the adapter uses:
// the password query parameter on every call, GET /api/v1/ping, POST
// /api/v1/message/text {chatGuid, tempGuid, message} deduplicated by
// tempGuid.
type fakeServer struct {
	*httptest.Server
	mu     sync.Mutex
	sends  []map[string]any
	byTemp map[string]string
	status int // non-zero: message/text answers this
}

func newFakeServer(t *testing.T) *fakeServer {
	f := &fakeServer{byTemp: map[string]string{}}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("password") != pw {
			http.Error(w, `{"status":401,"message":"Unauthorized"}`, http.StatusUnauthorized)
			return
		}
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/ping":
			io.WriteString(w, `{"status":200,"message":"Ping received!","data":"pong"}`)
		case r.Method == http.MethodPost && r.URL.Path == "/api/v1/message/text":
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.status != 0 {
				w.WriteHeader(f.status)
				io.WriteString(w, `{"status":`+http.StatusText(f.status)+`}`)
				return
			}
			var body map[string]any
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
				http.Error(w, "bad json", http.StatusBadRequest)
				return
			}
			for k := range body {
				if k != "chatGuid" && k != "tempGuid" && k != "message" && k != "method" {
					http.Error(w, "unknown key "+k, http.StatusBadRequest)
					return
				}
			}
			temp, _ := body["tempGuid"].(string)
			guid, seen := f.byTemp[temp]
			if !seen {
				guid = "BB-" + temp[:8]
				f.byTemp[temp] = guid
				f.sends = append(f.sends, body)
			}
			json.NewEncoder(w).Encode(map[string]any{"status": 200, "message": "Message sent!", "data": map[string]any{"guid": guid, "tempGuid": temp}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

func newTestAdapter(t *testing.T, serverURL string) *Adapter {
	t.Helper()
	a, err := New(Config{ServerURL: serverURL, Password: pw, WebhookListen: "127.0.0.1:0"}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func run(t *testing.T, a *Adapter) (*channeltest.Inbox, func() error) {
	t.Helper()
	in := channeltest.NewInbox()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, in) }()
	deadline := time.Now().Add(10 * time.Second)
	for a.WebhookAddr() == "" {
		select {
		case err := <-done:
			t.Fatalf("Run: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("webhook not serving")
		}
		time.Sleep(5 * time.Millisecond)
	}
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not stop")
			return nil
		}
	}
	t.Cleanup(func() { stop() })
	return in, stop
}

func post(t *testing.T, a *Adapter, query, body string) int {
	t.Helper()
	resp, err := http.Post("http://"+a.WebhookAddr()+DefaultWebhookPath+query, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

const directMsg = `{"type":"new-message","data":{"guid":"M1","text":"hello","isFromMe":false,"dateCreated":1767323045678,
 "handle":{"address":"Ann@Example.com"},"chats":[{"guid":"iMessage;-;ann@example.com","chatIdentifier":"ann@example.com","displayName":""}]}}`

const groupMsg = `{"type":"new-message","data":{"guid":"M2","text":"hi all","isFromMe":false,"dateCreated":1767323045000,"threadOriginatorGuid":"M1",
 "handle":{"address":"+15551234567"},"chats":[{"guid":"iMessage;+;chat123","chatIdentifier":"chat123","displayName":"Family"}]}}`

func TestWebhookDelivers(t *testing.T) {
	srv := newFakeServer(t)
	a := newTestAdapter(t, srv.URL)
	in, stop := run(t, a)
	if st := a.Status(); st.State != channel.StateLinked {
		t.Fatalf("status %+v", st)
	}
	q := "?password=" + strings.ReplaceAll(pw, " ", "%20")
	q = strings.ReplaceAll(q, "&", "%26")
	if code := post(t, a, q, directMsg); code != http.StatusNoContent {
		t.Fatalf("webhook = %d", code)
	}
	got, ok := in.Next(5 * time.Second)
	want := engine.Inbound{Channel: "imessage", Account: "default", ChatID: "iMessage;-;ann@example.com", ChatType: engine.ChatDirect,
		SenderID: "Ann@Example.com", MessageID: "M1", Text: "hello", Timestamp: time.UnixMilli(1767323045678).UTC()}
	if !ok || !equalInbound(got, want) {
		t.Errorf("direct:\n got %+v\nwant %+v", got, want)
	}
	post(t, a, q, strings.Replace(directMsg, `"isFromMe":false`, `"isFromMe":true`, 1))
	post(t, a, q, `{"type":"updated-message","data":{"guid":"M1"}}`)
	post(t, a, q, `{"type":"new-message","data":{"guid":"T1","text":"Loved “hello”","associatedMessageGuid":"p:0/M1","associatedMessageType":2000,"chats":[{"guid":"iMessage;-;ann@example.com"}]}}`)
	post(t, a, q, groupMsg)
	got, _ = in.Next(5 * time.Second)
	if got.MessageID != "M2" || got.ChatType != engine.ChatGroup || got.ChatID != "iMessage;+;chat123" || got.ReplyTo != "M1" || got.SenderID != "+15551234567" {
		t.Errorf("group (echo, update and tapback skipped): %+v", got)
	}
	if n := len(in.Messages()); n != 2 {
		t.Errorf("%d delivered, want 2", n)
	}
	if err := stop(); err != nil {
		t.Errorf("Run after cancel = %v", err)
	}
	if st := a.Status(); st.State != channel.StateStopped {
		t.Errorf("status after stop %+v", st)
	}
}

func equalInbound(a, b engine.Inbound) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func TestWebhookRejects(t *testing.T) {
	srv := newFakeServer(t)
	a := newTestAdapter(t, srv.URL)
	in, _ := run(t, a)
	for _, c := range []struct {
		query, body string
		code        int
	}{
		{"", directMsg, http.StatusUnauthorized},
		{"?password=wrong", directMsg, http.StatusUnauthorized},
		{"?password=s3cret", directMsg, http.StatusUnauthorized},
		{"?guid=" + "s3cret%20pw%26x", "{", http.StatusBadRequest},
		{"?password=s3cret%20pw%26x", `{"type":"new-message","data":{"guid":"","chats":[{"guid":"x"}]}}`, http.StatusBadRequest},
		{"?password=s3cret%20pw%26x", `{"type":"new-message","data":{"guid":"M","chats":[]}}`, http.StatusBadRequest},
		{"?password=s3cret%20pw%26x", `{"type":"new-message","data":{"guid":"M","text":5,"chats":[{"guid":"x"}]}}`, http.StatusBadRequest},
		{"?password=s3cret%20pw%26x", `{"type":"new-message","data":"x"}`, http.StatusBadRequest},
		{"?password=s3cret%20pw%26x", `{"type":"new-message","data":{"guid":"M","text":"` + strings.Repeat("x", maxWebhookBody) + `","chats":[{"guid":"x"}]}}`, http.StatusRequestEntityTooLarge},
	} {
		if code := post(t, a, c.query, c.body); code != c.code {
			t.Errorf("webhook %s %.60s = %d, want %d", c.query, c.body, code, c.code)
		}
	}
	resp, err := http.Get("http://" + a.WebhookAddr() + DefaultWebhookPath + "?password=s3cret%20pw%26x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET = %d", resp.StatusCode)
	}
	if n := len(in.Messages()); n != 0 {
		t.Errorf("%d delivered from rejected requests", n)
	}
}

func TestWebhookDeliverError(t *testing.T) {
	srv := newFakeServer(t)
	a2 := newTestAdapter(t, srv.URL)
	fail := &failInbox{err: errors.New("disk full")}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a2.Run(ctx, fail) }()
	for a2.WebhookAddr() == "" {
		time.Sleep(5 * time.Millisecond)
	}
	if code := post(t, a2, "?password=s3cret%20pw%26x", directMsg); code != http.StatusInternalServerError {
		t.Errorf("webhook with a failing inbox = %d, want 500", code)
	}
	cancel()
	<-done
}

type failInbox struct{ err error }

func (f *failInbox) Deliver(context.Context, engine.Inbound) error { return f.err }

func TestSend(t *testing.T) {
	srv := newFakeServer(t)
	a := newTestAdapter(t, srv.URL)
	ctx := context.Background()
	out := channel.Outbound{ChatID: "iMessage;+;chat123", Text: "hi", IdempotencyKey: "k1"}
	r1, err := a.Send(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := a.Send(ctx, out) // a retry: same tempGuid, the server sends once
	if err != nil {
		t.Fatal(err)
	}
	if r1.MessageID == "" || r1.MessageID != r2.MessageID {
		t.Errorf("receipts %+v %+v", r1, r2)
	}
	if _, err := a.Send(ctx, channel.Outbound{ChatID: "+1 555 123 4567", Text: "dm", IdempotencyKey: "k2", Media: []engine.Media{{URL: "https://x.test/a.png"}}}); err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	sends := append([]map[string]any(nil), srv.sends...)
	srv.mu.Unlock()
	if len(sends) != 2 {
		t.Fatalf("sends %v", sends)
	}
	if sends[0]["chatGuid"] != "iMessage;+;chat123" || sends[0]["message"] != "hi" || sends[0]["tempGuid"] != tempGUID("k1") {
		t.Errorf("send 1 %v", sends[0])
	}
	if sends[1]["chatGuid"] != "iMessage;-;+15551234567" || sends[1]["message"] != "dm\nhttps://x.test/a.png" {
		t.Errorf("send 2 %v", sends[1])
	}
	for _, bad := range []string{"", "chat_id:42", "a\x00b"} {
		if _, err := a.Send(ctx, channel.Outbound{ChatID: bad, Text: "x"}); !errors.Is(err, channel.ErrPermanent) {
			t.Errorf("Send to %q = %v, want permanent", bad, err)
		}
	}
	for code, permanent := range map[int]bool{400: true, 404: true, 429: false, 500: false, 503: false} {
		srv.mu.Lock()
		srv.status = code
		srv.mu.Unlock()
		_, err := a.Send(ctx, channel.Outbound{ChatID: "iMessage;-;x@y.z", Text: "x", IdempotencyKey: "e"})
		if err == nil || errors.Is(err, channel.ErrPermanent) != permanent {
			t.Errorf("HTTP %d: %v, want permanent=%v", code, err, permanent)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("error leaks the password: %v", err)
		}
	}
}

func TestSendUnreachable(t *testing.T) {
	a := newTestAdapter(t, "http://127.0.0.1:1")
	_, err := a.Send(context.Background(), channel.Outbound{ChatID: "iMessage;-;x@y.z", Text: "x"})
	if !errors.Is(err, channel.ErrNotConnected) || errors.Is(err, channel.ErrPermanent) || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Send = %v", err)
	}
	if err := a.Run(context.Background(), channeltest.NewInbox()); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Run against an unreachable server = %v", err)
	}
	if st := a.Status(); st.State != channel.StateError || st.Reason == "" {
		t.Errorf("status %+v", st)
	}
}

func TestRunRejectedPassword(t *testing.T) {
	srv := newFakeServer(t)
	a, err := New(Config{ServerURL: srv.URL, Password: "nope", WebhookListen: "127.0.0.1:0"}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Run(context.Background(), channeltest.NewInbox()); err == nil {
		t.Error("Run with a wrong password succeeded")
	}
}

func TestValidate(t *testing.T) {
	good := Config{ServerURL: "https://mac.local:1234", Password: "p", WebhookListen: "0.0.0.0:18790"}
	if err := good.Validate("channels.imessage.bluebubbles"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mut func(*Config)
		key string
	}{
		{func(c *Config) { c.ServerURL = "" }, "serverUrl"},
		{func(c *Config) { c.ServerURL = "ftp://x" }, "serverUrl"},
		{func(c *Config) { c.ServerURL = "http://u:p@x" }, "serverUrl"},
		{func(c *Config) { c.ServerURL = "http://x/?password=p" }, "serverUrl"},
		{func(c *Config) { c.Password = "" }, "password"},
		{func(c *Config) { c.WebhookPath = "hook" }, "webhookPath"},
		{func(c *Config) { c.WebhookListen = "" }, "webhookListen"},
		{func(c *Config) { c.WebhookListen = "localhost" }, "webhookListen"},
		{func(c *Config) { c.MediaMaxMB = -1 }, "mediaMaxMb"},
	} {
		cfg := good
		c.mut(&cfg)
		err := cfg.Validate("channels.imessage.bluebubbles")
		if err == nil || !strings.HasPrefix(err.Error(), "channels.imessage.bluebubbles."+c.key+":") {
			t.Errorf("%s: %v", c.key, err)
		}
	}
}

// TestInboundIDsUntouched: handle addresses and chat guids reach the
// gateway exactly as BlueBubbles sent them — no lower-casing (which folded
// U+212A KELVIN SIGN to "k") and no stripping of "formatting" (which made
// "+15550001111x" a number); access.Canonical alone compares ids.
func TestInboundIDsUntouched(t *testing.T) {
	for _, h := range []string{"+15550001111", "Kate@Example.com", "\u212aate@example.com", "+15550001111x", "+15550001111;x",
		"+1555000111\uff11", "+1 555 000 1111", "+1555\u200b0001111", "\u202e+15550001111", "262966"} {
		body, _ := json.Marshal(map[string]any{"type": "new-message", "data": map[string]any{"guid": "M", "text": "hi", "handle": map[string]any{"address": h},
			"chats": []any{map[string]any{"guid": "iMessage;-;" + h}}}})
		ev, err := parseWebhook(body)
		if err != nil {
			t.Fatal(err)
		}
		in, ok := ev.inbound("default")
		if !ok || in.SenderID != h || in.ChatID != "iMessage;-;"+h {
			t.Errorf("%q: delivered=%v SenderID %q ChatID %q", h, ok, in.SenderID, in.ChatID)
		}
		// Without a handle, a direct chat's guid names the sender, as sent.
		body, _ = json.Marshal(map[string]any{"type": "new-message", "data": map[string]any{"guid": "M", "text": "hi",
			"chats": []any{map[string]any{"guid": "any;-;" + h}}}})
		if ev, err = parseWebhook(body); err != nil {
			t.Fatal(err)
		}
		if in, _ := ev.inbound("default"); in.SenderID != h {
			t.Errorf("guid %q: SenderID %q", "any;-;"+h, in.SenderID)
		}
	}
}

func FuzzWebhook(f *testing.F) {
	f.Add([]byte(directMsg))
	f.Add([]byte(groupMsg))
	f.Add([]byte(`{"type":"new-message","data":{"guid":"T1","associatedMessageGuid":"p:0/M1","associatedMessageType":2000,"chats":[{"guid":"iMessage;-;a"}]}}`))
	f.Add([]byte(`{"type":"typing-indicator","data":{"display":true,"guid":"iMessage;-;a"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := parseWebhook(b)
		if err != nil {
			return
		}
		m, ok := ev.inbound("default")
		if !ok {
			return
		}
		if m.MessageID == "" || m.ChatID == "" || m.Channel != ChannelName || strings.TrimSpace(m.Text) == "" {
			t.Fatalf("delivered an incomplete message: %+v", m)
		}
	})
}
