package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
)

// TestSendRetry: which failures SendRetry retries with the same key, how
// often, and that a re-attached stream's numbered events are shown once.
func TestSendRetry(t *testing.T) {
	sse := func(w http.ResponseWriter, evs ...api.Event) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range evs {
			b, _ := json.Marshal(ev)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, b)
		}
	}
	delta := func(seq int, text string) api.Event {
		return api.Event{Type: api.EventDelta, Turn: "t", Seq: seq, Text: text}
	}
	tests := []struct {
		name      string
		handler   func(try int, w http.ResponseWriter, req api.SendRequest)
		attempts  int
		wantTries int
		wantText  string // deltas shown
		wantErr   string // "" = success
	}{
		{"cut, then attached: rest shown once", func(try int, w http.ResponseWriter, _ api.SendRequest) {
			if try == 1 {
				sse(w, delta(1, "a"), delta(2, "b")) // then the stream ends
				return
			}
			sse(w, delta(1, "a"), delta(2, "b"), delta(3, "c"), api.Event{Type: api.EventDone, Result: &api.Result{Reply: "abc"}})
		}, 0, 2, "abc", ""},
		{"gateway error: not retried", func(_ int, w http.ResponseWriter, _ api.SendRequest) {
			sse(w, api.Event{Type: api.EventError, Error: &api.Error{Code: api.CodeInterrupted, Message: "interrupted"}})
		}, 0, 1, "", "interrupted"},
		{"bounded", func(_ int, w http.ResponseWriter, _ api.SendRequest) {
			sse(w, delta(1, "x"))
		}, 2, 3, "x", "closed the stream early"},
		{"no retries", func(_ int, w http.ResponseWriter, _ api.SendRequest) {
			sse(w, delta(1, "x"))
		}, -1, 1, "x", "closed the stream early"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				mu   sync.Mutex
				keys []string
			)
			c := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var req api.SendRequest
				json.NewDecoder(r.Body).Decode(&req)
				mu.Lock()
				keys = append(keys, req.IdempotencyKey)
				try := len(keys)
				mu.Unlock()
				tt.handler(try, w, req)
			}))
			var text strings.Builder
			_, err := c.SendRetry(context.Background(), api.SendRequest{Text: "hi"}, func(ev api.Event) {
				if ev.Type == api.EventDelta {
					text.WriteString(ev.Text)
				}
			}, client.Retry{Attempts: tt.attempts, Backoff: time.Millisecond})
			if (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
			if len(keys) != tt.wantTries || text.String() != tt.wantText {
				t.Errorf("%d tries, text %q; want %d, %q", len(keys), text.String(), tt.wantTries, tt.wantText)
			}
			for _, k := range keys {
				if k == "" || k != keys[0] {
					t.Errorf("idempotency keys %q: want one non-empty key", keys)
				}
			}
		})
	}
}

// A gateway that is not running at the first try is reported at once.
func TestSendRetryDownAtStart(t *testing.T) {
	c := client.New(filepath.Join(t.TempDir(), "none.sock"))
	start := time.Now()
	_, err := c.SendRetry(context.Background(), api.SendRequest{Text: "hi"}, nil, client.Retry{
		Backoff: time.Minute, MaxBackoff: time.Minute,
		OnRetry: func(int, error, time.Duration) { t.Error("it waited to retry") },
	})
	// A retry would wait a minute: anything well under that is "at once",
	// however slow this machine.
	if !errors.Is(err, client.ErrGatewayDown) || time.Since(start) > 20*time.Second {
		t.Errorf("err %v after %s", err, time.Since(start))
	}
}
