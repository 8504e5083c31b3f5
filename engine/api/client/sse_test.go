package client_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
)

func TestReadStream(t *testing.T) {
	done := `data: {"type":"done","result":{"reply":"ok","sessionKey":"k"}}` + "\n\n"
	tests := []struct {
		name    string
		stream  string
		events  []api.Event
		reply   string
		wantErr string
	}{
		{
			name:   "deltas then done",
			stream: "event: delta\ndata: {\"type\":\"delta\",\"text\":\"o\"}\n\nevent: done\n" + done,
			events: []api.Event{{Type: api.EventDelta, Text: "o"}, {Type: api.EventDone, Result: &api.Result{Reply: "ok", SessionKey: "k"}}},
			reply:  "ok",
		},
		{
			name:   "CRLF, comments, unknown fields, no space after colon",
			stream: ": keep-alive\r\nid: 7\r\nretry: 100\r\nevent:delta\r\ndata:{\"text\":\"a\"}\r\n\r\n" + done,
			events: []api.Event{{Type: api.EventDelta, Text: "a"}, {Type: api.EventDone, Result: &api.Result{Reply: "ok", SessionKey: "k"}}},
			reply:  "ok",
		},
		{
			name:   "data split over lines joins with newline",
			stream: "event: delta\ndata: {\"type\":\"delta\",\ndata: \"text\":\"b\"}\n\n" + done,
			events: []api.Event{{Type: api.EventDelta, Text: "b"}, {Type: api.EventDone, Result: &api.Result{Reply: "ok", SessionKey: "k"}}},
			reply:  "ok",
		},
		{
			name:   "event without data is not dispatched",
			stream: "event: delta\n\n" + done,
			events: []api.Event{{Type: api.EventDone, Result: &api.Result{Reply: "ok", SessionKey: "k"}}},
			reply:  "ok",
		},
		{
			name:   "unknown type passes through",
			stream: "event: sparkle\ndata: {\"text\":\"✨\"}\n\n" + done,
			events: []api.Event{{Type: "sparkle", Text: "✨"}, {Type: api.EventDone, Result: &api.Result{Reply: "ok", SessionKey: "k"}}},
			reply:  "ok",
		},
		{
			name:   "nothing after done is read",
			stream: done + "data: not json\n\n",
			events: []api.Event{{Type: api.EventDone, Result: &api.Result{Reply: "ok", SessionKey: "k"}}},
			reply:  "ok",
		},
		{
			name:    "error event",
			stream:  "event: error\ndata: {\"type\":\"error\",\"error\":{\"code\":\"model_failed\",\"message\":\"no model answered\"}}\n\n",
			events:  []api.Event{{Type: api.EventError, Error: &api.Error{Code: "model_failed", Message: "no model answered"}}},
			wantErr: "no model answered",
		},
		{
			name:    "error event without details",
			stream:  "event: error\ndata: {}\n\n",
			events:  []api.Event{{Type: api.EventError}},
			wantErr: "the gateway reported an error without details",
		},
		{name: "empty stream", stream: "", wantErr: "gateway closed the stream early"},
		{name: "last event unterminated", stream: "event: done\n" + strings.TrimSuffix(done, "\n"), wantErr: "gateway closed the stream early"},
		{name: "malformed json", stream: "event: delta\ndata: {\"text\":\n\n", wantErr: `gateway sent a malformed "delta" event`},
		{name: "done without result", stream: "data: {\"type\":\"done\"}\n\n", events: []api.Event{{Type: api.EventDone}}, wantErr: "done event without a result"},
		{name: "event too large", stream: "data: \"" + strings.Repeat("x", client.MaxEventBytes) + "\"\n\n", wantErr: "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []api.Event
			res, err := client.ReadStream(strings.NewReader(tt.stream), func(ev api.Event) { got = append(got, ev) })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			} else if res.Reply != tt.reply {
				t.Errorf("reply = %q, want %q", res.Reply, tt.reply)
			}
			if !reflect.DeepEqual(got, tt.events) {
				t.Errorf("events:\n got %+v\nwant %+v", got, tt.events)
			}
		})
	}
}

func TestReadStreamErrorIsAPIError(t *testing.T) {
	_, err := client.ReadStream(strings.NewReader("data: {\"type\":\"error\",\"error\":{\"code\":\"aborted\",\"message\":\"stopped\"}}\n\n"), nil)
	var apiErr *api.Error
	if !errors.As(err, &apiErr) || apiErr.Code != api.CodeAborted {
		t.Errorf("err = %#v, want *api.Error aborted", err)
	}
}

// FuzzReadStream feeds arbitrary bytes to the stream reader: it must never
// panic, end with a result or an error (never both, never neither), and
// report every event it dispatched before that.
func FuzzReadStream(f *testing.F) {
	seed := func(evs ...api.Event) string {
		var b strings.Builder
		for _, ev := range evs {
			j, _ := json.Marshal(ev)
			fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", ev.Type, j)
		}
		return b.String()
	}
	f.Add(seed(api.Event{Type: api.EventDelta, Text: "hi"}, api.Event{Type: api.EventDone, Result: &api.Result{Reply: "hi"}}))
	f.Add(seed(api.Event{Type: api.EventApproval, Approval: &api.Approval{ID: "a", Command: "ls"}}, api.Event{Type: api.EventError, Error: &api.Error{Message: "x"}}))
	f.Add(": c\r\nevent:done\r\ndata:{\"result\":{}}\r\n\r\n")
	f.Add("data: {\"type\":\"delta\"\ndata: ,\"text\":\"a\"}\n\n")
	f.Add("data\n\n")
	f.Add("\n\n\n")
	f.Fuzz(func(t *testing.T, stream string) {
		var n int
		var last api.Event
		res, err := client.ReadStream(strings.NewReader(stream), func(ev api.Event) { n++; last = ev })
		if (res == nil) == (err == nil) {
			t.Fatalf("result %v and error %v", res, err)
		}
		if res != nil && (n == 0 || last.Type != api.EventDone || last.Result != res) {
			t.Fatalf("result %+v not from the last dispatched event %+v", res, last)
		}
		if len(stream) < client.MaxEventBytes && errors.Is(err, client.ErrStreamEnded) && n > 0 && (last.Type == api.EventDone || last.Type == api.EventError) {
			t.Fatalf("stream ended after a final event %q", last.Type)
		}
	})
}
