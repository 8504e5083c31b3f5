package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
)

// shortDir returns a temporary directory whose path is short enough for a
// Unix socket (about 100 bytes), removed at the end of the test.
func shortDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if len(dir) > 80 {
		d, err := os.MkdirTemp("", "oc")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		dir = d
	}
	return dir
}

// serve runs h on a Unix socket and returns a client for it.
func serve(t *testing.T, h http.Handler) *client.Client {
	t.Helper()
	sock := filepath.Join(shortDir(t), "gw.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return client.New(sock)
}

// writeEvents writes evs as the gateway does: one SSE event each, flushed.
func writeEvents(w http.ResponseWriter, evs ...api.Event) {
	for _, ev := range evs {
		b, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, b)
		w.(http.Flusher).Flush()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// fakeGateway implements every endpoint with canned answers and records
// what it was asked.
type fakeGateway struct {
	mu       sync.Mutex
	requests []string // "METHOD path?query"
	imported []byte
	approve  chan string // /approve <id> answers reach the waiting turn here
}

func (f *fakeGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.Method+" "+r.URL.RequestURI())
	f.mu.Unlock()
	key := r.URL.Query().Get("key")
	switch r.Method + " " + r.URL.Path {
	case "GET " + api.PathStatus:
		writeJSON(w, 200, api.Status{Version: "1.2.3", APIVersion: api.Version, PID: 42, DefaultAgent: "main"})
	case "GET " + api.PathSessions:
		writeJSON(w, 200, []api.SessionInfo{{Key: "agent:" + r.URL.Query().Get("agent") + ":main", SessionID: "s1"}})
	case "GET " + api.PathSessionHistory:
		if key != "agent:main:main" {
			writeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: "no session " + key})
			return
		}
		writeJSON(w, 200, api.History{SessionKey: key, SessionID: "s1",
			Header:  json.RawMessage(`{"type":"session","id":"s1"}`),
			Entries: []json.RawMessage{json.RawMessage(`{"type":"message","id":"e1"}`)}})
	case "POST " + api.PathSessionReset:
		writeJSON(w, 200, api.SessionInfo{Key: key, SessionID: "s2"})
	case "POST " + api.PathSessionDelete:
		if key != "agent:main:main" {
			writeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: "no session " + key})
			return
		}
		writeJSON(w, 200, api.SessionInfo{Key: key, SessionID: "s1", Messages: 3})
	case "GET " + api.PathSessionExport:
		if key != "agent:main:main" {
			writeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: "no session " + key})
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		io.WriteString(w, "{\"type\":\"session\",\"id\":\"s1\"}\n{\"type\":\"message\"}\n")
	case "POST " + api.PathSessionImport:
		if ct := r.Header.Get("Content-Type"); ct != "application/x-ndjson" {
			writeJSON(w, 400, api.Error{Code: api.CodeBadRequest, Message: "content type " + ct})
			return
		}
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.imported = b
		f.mu.Unlock()
		writeJSON(w, 200, api.ImportResult{SessionKey: key, SessionID: "s9", Entries: bytes.Count(b, []byte("\n")) - 1})
	case "POST " + api.PathMessages:
		var req api.SendRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writeJSON(w, 400, api.Error{Code: api.CodeBadRequest, Message: err.Error()})
			return
		}
		f.message(w, req)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeGateway) message(w http.ResponseWriter, req api.SendRequest) {
	if id, ok := strings.CutPrefix(req.Text, "/approve "); ok {
		f.approve <- id
		w.Header().Set("Content-Type", "text/event-stream")
		writeEvents(w, api.Event{Type: api.EventDone, Result: &api.Result{Reply: "approved " + id, Command: "approve"}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	switch req.Text {
	case "hello":
		writeEvents(w,
			api.Event{Type: api.EventDelta, Text: "Hel"},
			api.Event{Type: api.EventDelta, Text: "lo"},
			api.Event{Type: api.EventDone, Result: &api.Result{Reply: "Hello", SessionKey: "agent:main:main", SessionID: "s1",
				Model: "local/tiny", Usage: &engine.Usage{Input: 3, Output: 2, TotalTokens: 5}}})
	case "fail":
		writeEvents(w, api.Event{Type: api.EventError, Error: &api.Error{Code: api.CodeModelFailed, Message: "every model failed"}})
	case "cut":
		writeEvents(w, api.Event{Type: api.EventDelta, Text: "partial"})
	case "approve me":
		writeEvents(w, api.Event{Type: api.EventApproval, Approval: &api.Approval{ID: "a1", Command: "rm -rf /tmp/x", SessionKey: "agent:main:main"}})
		id := <-f.approve
		writeEvents(w, api.Event{Type: api.EventDone, Result: &api.Result{Reply: "ran after " + id}})
	}
}

func TestDefaultSocket(t *testing.T) {
	home, _ := os.UserHomeDir()
	tests := []struct {
		name, socket, stateDir, want string
	}{
		{"socket env wins", "/run/x.sock", "/var/lib/oc", "/run/x.sock"},
		{"state dir", "", "/var/lib/oc", "/var/lib/oc/gateway.sock"},
		{"home", "", "", filepath.Join(home, ".openclaw-edge", "gateway.sock")}, // config.DefaultStateDirName
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("OPENCLAW_SOCKET", tt.socket)
			t.Setenv("OPENCLAW_STATE_DIR", tt.stateDir)
			if got := client.DefaultSocket(); got != tt.want {
				t.Errorf("DefaultSocket() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestGatewayDown(t *testing.T) {
	dir := shortDir(t)
	refused := filepath.Join(dir, "refused.sock")
	ln, err := net.Listen("unix", refused)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // the file stays, nobody listens: connection refused

	for _, sock := range []string{filepath.Join(dir, "missing.sock"), refused} {
		t.Run(filepath.Base(sock), func(t *testing.T) {
			_, err := client.New(sock).Status(context.Background())
			if !errors.Is(err, client.ErrGatewayDown) {
				t.Fatalf("err = %v, want ErrGatewayDown", err)
			}
			want := "cannot reach the gateway at " + sock + ": is it running? Start it with `openclaw-gateway run` (or `make run`)"
			if err.Error() != want {
				t.Errorf("message:\n got %s\nwant %s", err, want)
			}
		})
	}
}

func TestCalls(t *testing.T) {
	f := &fakeGateway{}
	c := serve(t, f)
	ctx := context.Background()

	st, err := c.Status(ctx)
	if err != nil || st.Version != "1.2.3" || st.PID != 42 {
		t.Errorf("Status = %+v, %v", st, err)
	}
	list, err := c.Sessions(ctx, "work")
	if err != nil || len(list) != 1 || list[0].Key != "agent:work:main" {
		t.Errorf("Sessions = %+v, %v", list, err)
	}
	h, err := c.History(ctx, "agent:main:main")
	if err != nil || h.SessionID != "s1" || len(h.Entries) != 1 {
		t.Errorf("History = %+v, %v", h, err)
	}
	info, err := c.Reset(ctx, "agent:main:main")
	if err != nil || info.SessionID != "s2" || info.Key != "agent:main:main" {
		t.Errorf("Reset = %+v, %v", info, err)
	}
	gone, err := c.Delete(ctx, "agent:main:main")
	if err != nil || gone.SessionID != "s1" || gone.Messages != 3 {
		t.Errorf("Delete = %+v, %v", gone, err)
	}
	var buf bytes.Buffer
	if err := c.Export(ctx, "agent:main:main", &buf); err != nil || !strings.HasPrefix(buf.String(), `{"type":"session"`) {
		t.Errorf("Export = %q, %v", buf.String(), err)
	}
	jsonl := "{\"type\":\"session\"}\n{\"type\":\"message\"}\n"
	res, err := c.Import(ctx, "agent:main:old", strings.NewReader(jsonl))
	if err != nil || res.SessionKey != "agent:main:old" || res.Entries != 1 || string(f.imported) != jsonl {
		t.Errorf("Import = %+v, %v (body %q)", res, err, f.imported)
	}

	want := []string{
		"GET /v1/status",
		"GET /v1/sessions?agent=work",
		"GET /v1/sessions/history?key=agent%3Amain%3Amain",
		"POST /v1/sessions/reset?key=agent%3Amain%3Amain",
		"POST /v1/sessions/delete?key=agent%3Amain%3Amain",
		"GET /v1/sessions/export?key=agent%3Amain%3Amain",
		"POST /v1/sessions/import?key=agent%3Amain%3Aold",
	}
	if !reflect.DeepEqual(f.requests, want) {
		t.Errorf("requests:\n got %q\nwant %q", f.requests, want)
	}
}

func TestErrors(t *testing.T) {
	c := serve(t, &fakeGateway{})
	ctx := context.Background()

	_, err := c.History(ctx, "agent:main:nope")
	var apiErr *api.Error
	if !errors.As(err, &apiErr) || apiErr.Code != api.CodeNotFound || apiErr.Message != "no session agent:main:nope" {
		t.Errorf("History(missing) = %#v", err)
	}
	var buf bytes.Buffer
	err = c.Export(ctx, "agent:main:nope", &buf)
	if !errors.As(err, &apiErr) || apiErr.Code != api.CodeNotFound || buf.Len() != 0 {
		t.Errorf("Export(missing) = %v, wrote %q", err, buf.String())
	}
	if _, err := c.Delete(ctx, "agent:main:nope"); !errors.As(err, &apiErr) || apiErr.Code != api.CodeNotFound {
		t.Errorf("Delete(missing) = %v", err)
	}

}

func TestSend(t *testing.T) {
	c := serve(t, &fakeGateway{})
	ctx := context.Background()

	var got []api.EventType
	res, err := c.Send(ctx, api.SendRequest{Text: "hello"}, func(ev api.Event) { got = append(got, ev.Type) })
	if err != nil {
		t.Fatal(err)
	}
	if res.Reply != "Hello" || res.Usage.TotalTokens != 5 {
		t.Errorf("result = %+v", res)
	}
	if want := []api.EventType{api.EventDelta, api.EventDelta, api.EventDone}; !reflect.DeepEqual(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}

	_, err = c.Send(ctx, api.SendRequest{Text: "fail"}, nil)
	var apiErr *api.Error
	if !errors.As(err, &apiErr) || apiErr.Code != api.CodeModelFailed {
		t.Errorf("Send(fail) err = %#v, want model_failed", err)
	}

	_, err = c.Send(ctx, api.SendRequest{Text: "cut"}, nil)
	if !errors.Is(err, client.ErrStreamEnded) || err.Error() != "gateway closed the stream early" {
		t.Errorf("Send(cut) err = %v, want ErrStreamEnded", err)
	}
}

// TestSendWhileStreaming answers an approval with a second Send while the
// first stream is still open, as `openclaw chat` does.
func TestSendWhileStreaming(t *testing.T) {
	f := &fakeGateway{approve: make(chan string, 1)}
	c := serve(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	res, err := c.Send(ctx, api.SendRequest{Text: "approve me"}, func(ev api.Event) {
		if ev.Type != api.EventApproval {
			return
		}
		r, err := c.Send(ctx, api.SendRequest{Text: "/approve " + ev.Approval.ID, SessionKey: ev.Approval.SessionKey}, nil)
		if err != nil || r.Reply != "approved a1" {
			t.Errorf("approve = %+v, %v", r, err)
		}
	})
	if err != nil || res.Reply != "ran after a1" {
		t.Errorf("Send = %+v, %v", res, err)
	}
}

func TestNon2xxWithoutJSON(t *testing.T) {
	c := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, "upstream broke")
	}))
	_, err := c.Status(context.Background())
	var apiErr *api.Error
	if !errors.As(err, &apiErr) || apiErr.Code != api.CodeInternal || apiErr.Message != "gateway answered 502 Bad Gateway: upstream broke" {
		t.Errorf("err = %#v", err)
	}
}

func TestSendWrongContentType(t *testing.T) {
	c := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, api.Result{Reply: "not a stream"})
	}))
	_, err := c.Send(context.Background(), api.SendRequest{Text: "hi"}, nil)
	if err == nil || !strings.Contains(err.Error(), "want text/event-stream") {
		t.Errorf("err = %v", err)
	}
}

func TestSendCanceled(t *testing.T) {
	started := make(chan struct{})
	c := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		writeEvents(w, api.Event{Type: api.EventQueued})
		close(started)
		<-r.Context().Done()
	}))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	_, err := c.Send(ctx, api.SendRequest{Text: "hi"}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}
