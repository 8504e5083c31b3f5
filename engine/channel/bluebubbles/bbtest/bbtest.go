// Package bbtest is a fake BlueBubbles server (the iMessage bridge that
// runs on a Mac) for tests of the gateway: it speaks BlueBubbles' REST API
// on loopback as far as the adapter uses it (ping, send text; every call
// authenticated by the server password as the `password` query parameter),
// records what was sent, and posts new-message webhooks to the gateway's
// listener as the real server does.
package bbtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Password is the fake server's password.
const Password = "bb-test-pw"

// Server is a running fake BlueBubbles server.
type Server struct {
	*httptest.Server
	mu    sync.Mutex
	sends []map[string]any
	n     int // webhooks posted
}

// New starts a fake server, closed at the end of the test.
func New(t testing.TB) *Server {
	f := &Server{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("password") != Password {
			http.Error(w, `{"status":401,"message":"Unauthorized"}`, http.StatusUnauthorized)
			return
		}
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/ping":
			io.WriteString(w, `{"status":200,"message":"Ping received!","data":"pong"}`)
		case r.Method == http.MethodPost && r.URL.Path == "/api/v1/message/text":
			var body map[string]any
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
				http.Error(w, "bad json", http.StatusBadRequest)
				return
			}
			f.mu.Lock()
			f.sends = append(f.sends, body)
			n := len(f.sends)
			f.mu.Unlock()
			json.NewEncoder(w).Encode(map[string]any{"status": 200, "message": "Message sent!", "data": map[string]any{"guid": fmt.Sprintf("BB-%d", n)}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

// Sends returns what the gateway sent so far.
func (f *Server) Sends() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.sends...)
}

// WaitSend waits for the n-th send to chatGUID and returns it.
func (f *Server) WaitSend(t testing.TB, chatGUID string, n int) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var got []map[string]any
		all := f.Sends()
		for _, s := range all {
			if s["chatGuid"] == chatGUID {
				got = append(got, s)
			}
		}
		if len(got) >= n {
			return got[n-1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no send #%d to %q; sends: %v", n, chatGUID, all)
		}
	}
}

// WaitText waits for a send of text to chatGUID.
func (f *Server) WaitText(t testing.TB, chatGUID, text string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		all := f.Sends()
		for _, s := range all {
			if s["chatGuid"] == chatGUID && s["message"] == text {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q to %s; sends: %v", text, chatGUID, all)
		}
	}
}

// Post delivers a direct iMessage from handle to the gateway's webhook
// listener at hook (host:port), as BlueBubbles posts a new message.
func (f *Server) Post(t testing.TB, hook, handle, text string) {
	t.Helper()
	f.mu.Lock()
	f.n++
	n := f.n
	f.mu.Unlock()
	body, _ := json.Marshal(map[string]any{"type": "new-message", "data": map[string]any{
		"guid": fmt.Sprintf("BBM-%d", n), "text": text, "isFromMe": false, "dateCreated": 1767323045678 + n,
		"handle": map[string]any{"address": handle}, "chats": []any{map[string]any{"guid": "iMessage;-;" + handle}}}})
	resp, err := http.Post("http://"+hook+"/bluebubbles-webhook?password="+Password, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("webhook answered %d", resp.StatusCode)
	}
}
