package providertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
)

// Streamer is what a provider is to the suite.
type Streamer interface {
	Stream(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error
}

// Config is what the suite configures a provider with; the harness maps it
// onto the provider's own Config.
type Config struct {
	ProviderID, BaseURL, APIKey string
	Headers                     map[string]string
	HTTPClient                  *http.Client
}

// FakeServer is what the suite needs of a provider's fake server
// (anthropictest.Server and the like).
type FakeServer interface {
	// Requests are the request bodies the server got, in order.
	Requests() []json.RawMessage
	Close()
}

// server is a started FakeServer and its base URL.
type server struct {
	FakeServer
	URL string
}

// Reply is a scripted answer in the engine's words; the harness turns it
// into its fake server's reply.
type Reply struct {
	Text, Thinking string
	ToolCalls      []engine.ToolCall
	StopReason     engine.StopReason
	Usage          engine.Usage
	// Chunk splits text, thinking and (where the API streams them)
	// arguments into deltas of this many runes; 0: the server's default (4).
	Chunk int
	// CutStream stops half-way through; Stall stops there and holds the
	// connection open.
	CutStream, Stall bool
}

// Harness is one provider for Run. R is its fake server's reply type.
type Harness[R any] struct {
	// Model is the model requests name unless a case names another.
	Model string
	// ProviderID is the id the error cases configure and expect back.
	ProviderID string
	// Key is the API key the error cases send; it must never show in an
	// error. "" sends none.
	Key string
	// KeyHeader carries the API key, in KeyValue's format ("Bearer %s").
	KeyHeader, KeyValue string
	// Path follows host:port in a base URL, e.g. "/v1".
	Path string
	// Thinking is the level a request needs for thoughts to stream.
	Thinking engine.ThinkingLevel
	// Serve starts the fake server on loopback, answering with replies in
	// order, then echoing the last user text; when key is not "", a server
	// that checks keys wants it. The suite closes it when the test ends.
	Serve func(key string, replies ...R) (url string, srv FakeServer)
	// Script turns a scripted Reply into the server's; nil copies each of
	// Reply's fields into R's field of the same name.
	Script func(Reply) R
	// New builds the provider.
	New func(t testing.TB, cfg Config) Streamer
	// CallIDs formats the id the provider reports for the n-th tool call
	// (from 1) of a server's first reply that the script gave no id;
	// KeepsCallIDs: one the script gave comes back as it is.
	CallIDs      string
	KeepsCallIDs bool

	// Layouts run after the suite's own stream cases.
	Layouts []Layout[R]
	// Errors run after the suite's own failure cases.
	Errors []ErrorCase[R]
	// ToolLoops are round trips through the validating server.
	ToolLoops []ToolLoop[R]
	// Conversation is a turn with everything the mapping must handle; the
	// server must accept it and echo Echo.
	Conversation func() *engine.ChatRequest
	Echo         string
	// Golden are request bodies compared with testdata/<Name>.golden.
	Golden []Golden
}

// Layout is a stream the server sends and what the provider must make of
// it.
type Layout[R any] struct {
	Name  string
	Model string               // "" the harness's
	Level engine.ThinkingLevel // asked for in the request
	Reply R
	// What must come out.
	Text, Thinking string
	TextDeltas     int // 0: not checked
	Calls          []engine.ToolCall
	Stop           engine.StopReason
	Usage          *engine.Usage // nil: only present
}

// ErrorCase is a failure and how the provider must classify it.
type ErrorCase[R any] struct {
	Name string
	// Reply is what the server answers; the zero reply leaves the answer
	// to the server (an echo, or its own refusal of the request).
	Reply R
	// Raw, when set, answers instead of a server.
	Raw *RawTransport
	// Model: "" the harness's. Key: "" the harness's, "-" none.
	Model, Key string
	// Tools and Image add a tool and an image to the request.
	Tools, Image bool
	Kind         engine.ErrorKind
	Status       int
	Msg          string // a substring of the message
}

// ToolLoop is a tool call, its results sent back, and the same turn with a
// result missing, which the server must refuse.
type ToolLoop[R any] struct {
	Name  string
	Model string // "" the harness's
	Level engine.ThinkingLevel
	Reply R
	Tools []engine.ToolSpec
	// Assistant is the assistant message sent back; nil: the calls alone.
	Assistant func(rec *Recorder) engine.Message
	// Sent checks the requests the server got, the continuation last.
	Sent func(t *testing.T, requests []json.RawMessage)
}

// Golden is a request body to compare with testdata/<Name>.golden.
type Golden struct {
	Name string
	Body func() ([]byte, error)
}

// Run runs the conformance suite against h.
func Run[R any](t *testing.T, h Harness[R]) {
	t.Run("Layouts", func(t *testing.T) { runLayouts(t, h) })
	t.Run("Errors", func(t *testing.T) { runErrors(t, h) })
	t.Run("Unreachable", func(t *testing.T) { runUnreachable(t, h) })
	t.Run("ResponseHeaderTimeout", func(t *testing.T) { runHeaderTimeout(t, h) })
	t.Run("AbortMidStream", func(t *testing.T) { runAbort(t, h) })
	t.Run("Headers", func(t *testing.T) { runHeaders(t, h) })
	t.Run("ToolLoop", func(t *testing.T) { runToolLoops(t, h) })
	t.Run("ConversationAccepted", func(t *testing.T) { runConversation(t, h) })
	t.Run("RequestGolden", func(t *testing.T) { runGolden(t, h) })
}

// serve starts h's fake server for the length of the test.
func (h *Harness[R]) serve(t *testing.T, key string, replies ...R) server {
	url, srv := h.Serve(key, replies...)
	t.Cleanup(srv.Close)
	return server{srv, url}
}

// script is r as the fake server's reply.
func (h *Harness[R]) script(t *testing.T, r Reply) R {
	if h.Script != nil {
		return h.Script(r)
	}
	var out R
	dst := reflect.ValueOf(&out).Elem()
	src := reflect.ValueOf(r)
	for i := range src.NumField() {
		f := dst.FieldByName(src.Type().Field(i).Name)
		if !f.IsValid() || f.Type() != src.Field(i).Type() {
			t.Fatalf("%T has no field %s %s: give the harness a Script", out, src.Type().Field(i).Name, src.Field(i).Type())
		}
		f.Set(src.Field(i))
	}
	return out
}

// callID is the id the provider reports for the n-th call, given given.
func (h *Harness[R]) callID(n int, given string) string {
	if given != "" && h.KeepsCallIDs {
		return given
	}
	return fmt.Sprintf(h.CallIDs, n)
}

func (h *Harness[R]) request(model, text string) *engine.ChatRequest {
	if model == "" {
		model = h.Model
	}
	return &engine.ChatRequest{Model: model, Messages: []engine.Message{engine.UserText(text)}}
}

func runLayouts[R any](t *testing.T, h Harness[R]) {
	weather := engine.ToolCall{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Zürich","days":[1,2,3]}`)}
	search := engine.ToolCall{ID: "call_b", Name: "search", Arguments: json.RawMessage(`{"q":"go sse"}`)}
	call := func(n int, c engine.ToolCall) engine.ToolCall {
		c.ID = h.callID(n, c.ID)
		return c
	}
	tests := append([]Layout[R]{
		{
			Name:       "text only",
			Reply:      h.script(t, Reply{Text: "Hello, wörld! How are you?", Usage: engine.Usage{Input: 10, Output: 7}}),
			Text:       "Hello, wörld! How are you?",
			TextDeltas: 7, // 26 runes in deltas of 4
			Stop:       engine.StopEnd,
			Usage:      &engine.Usage{Input: 10, Output: 7, TotalTokens: 17},
		},
		{
			Name:  "tool call in one-rune fragments",
			Reply: h.script(t, Reply{ToolCalls: []engine.ToolCall{weather}, Chunk: 1}),
			Calls: []engine.ToolCall{call(1, weather)},
			Stop:  engine.StopToolUse,
		},
		{
			Name:  "two parallel tool calls after text",
			Reply: h.script(t, Reply{Text: "Let me look.", ToolCalls: []engine.ToolCall{weather, search}, Chunk: 3}),
			Text:  "Let me look.",
			Calls: []engine.ToolCall{call(1, weather), call(2, search)},
			Stop:  engine.StopToolUse,
		},
		{
			Name:     "thinking then text",
			Level:    h.Thinking,
			Reply:    h.script(t, Reply{Thinking: "The user greets me.", Text: "Hi!"}),
			Thinking: "The user greets me.",
			Text:     "Hi!",
			Stop:     engine.StopEnd,
		},
		{
			Name:  "max tokens",
			Reply: h.script(t, Reply{Text: "cut", StopReason: engine.StopLength}),
			Text:  "cut",
			Stop:  engine.StopLength,
		},
	}, h.Layouts...)
	for _, tt := range tests {
		t.Run(tt.Name, func(t *testing.T) {
			srv := h.serve(t, "", tt.Reply)
			req := h.request(tt.Model, "hi")
			req.Thinking = tt.Level
			var rec Recorder
			if err := h.New(t, Config{BaseURL: srv.URL}).Stream(context.Background(), req, rec.Emit); err != nil {
				t.Fatalf("Stream: %v", err)
			}
			end := rec.End(t)
			if got := rec.Joined(engine.EventTextDelta); got != tt.Text {
				t.Errorf("text = %q, want %q", got, tt.Text)
			}
			if got := rec.Joined(engine.EventThinkingDelta); got != tt.Thinking {
				t.Errorf("thinking = %q, want %q", got, tt.Thinking)
			}
			if tt.TextDeltas > 0 && rec.Count(engine.EventTextDelta) != tt.TextDeltas {
				t.Errorf("%d text deltas, want %d", rec.Count(engine.EventTextDelta), tt.TextDeltas)
			}
			if got := rec.Calls(); !reflect.DeepEqual(got, tt.Calls) {
				t.Errorf("calls = %s, want %s", JSONOf(got), JSONOf(tt.Calls))
			}
			if end.StopReason != tt.Stop {
				t.Errorf("stop = %s, want %s", end.StopReason, tt.Stop)
			}
			if end.Usage == nil {
				t.Fatal("message end without usage")
			}
			if tt.Usage != nil && *end.Usage != *tt.Usage {
				t.Errorf("usage = %+v, want %+v", *end.Usage, *tt.Usage)
			}
		})
	}
}

func runErrors[R any](t *testing.T, h Harness[R]) {
	tests := append([]ErrorCase[R]{
		{Name: "cut stream", Reply: h.script(t, Reply{Text: "a long text that will be cut", CutStream: true}), Kind: engine.ErrUnreachable, Msg: "stream ended early"},
	}, h.Errors...)
	png := engine.Block{Type: engine.BlockImage, Data: "aGk=", MimeType: "image/png"}
	for _, tt := range tests {
		t.Run(tt.Name, func(t *testing.T) {
			var p Streamer
			if tt.Raw != nil {
				p = h.New(t, Config{BaseURL: "http://127.0.0.1:1" + h.Path, HTTPClient: &http.Client{Transport: *tt.Raw}})
			} else {
				var replies []R
				var zero R
				if !reflect.DeepEqual(tt.Reply, zero) {
					replies = append(replies, tt.Reply)
				}
				srv := h.serve(t, h.Key, replies...)
				key := h.Key
				switch tt.Key {
				case "-":
					key = ""
				case "":
				default:
					key = tt.Key
				}
				p = h.New(t, Config{ProviderID: h.ProviderID, BaseURL: srv.URL, APIKey: key})
			}
			req := h.request(tt.Model, "hi")
			if tt.Tools {
				req.Tools = []engine.ToolSpec{{Name: "ls"}}
			}
			if tt.Image {
				req.Messages[0].Content = append(req.Messages[0].Content, png)
			}
			var rec Recorder
			err := p.Stream(context.Background(), req, rec.Emit)
			me := CheckError(t, err, tt.Kind, &rec)
			if me.Status != tt.Status {
				t.Errorf("status = %d, want %d", me.Status, tt.Status)
			}
			if !strings.Contains(me.Message, tt.Msg) {
				t.Errorf("message %q does not contain %q", me.Message, tt.Msg)
			}
			if len([]rune(me.Message)) > 300 || strings.Contains(me.Message, "\n") {
				t.Errorf("message not one short line: %q", me.Message)
			}
			if h.Key != "" && strings.Contains(me.Error(), h.Key) {
				t.Errorf("error leaks the key: %v", me)
			}
			if me.Model != req.Model || tt.Raw == nil && me.Provider != h.ProviderID {
				t.Errorf("provider/model = %s/%s", me.Provider, me.Model)
			}
		})
	}
}

func runUnreachable[R any](t *testing.T, h Harness[R]) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	var rec Recorder
	err = h.New(t, Config{BaseURL: "http://" + addr + h.Path}).Stream(context.Background(), h.request("", "hi"), rec.Emit)
	CheckError(t, err, engine.ErrUnreachable, &rec)
}

func runHeaderTimeout[R any](t *testing.T, h Harness[R]) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { // accept and never answer
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	client := &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 50 * time.Millisecond}}
	var rec Recorder
	err = h.New(t, Config{BaseURL: "http://" + l.Addr().String() + h.Path, HTTPClient: client}).
		Stream(context.Background(), h.request("", "hi"), rec.Emit)
	CheckError(t, err, engine.ErrTimeout, &rec)
}

func runAbort[R any](t *testing.T, h Harness[R]) {
	srv := h.serve(t, "", h.script(t, Reply{Text: "this reply stalls half-way through", Stall: true, Chunk: 2}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var rec Recorder
	emit := func(e engine.Event) {
		rec.Emit(e)
		if e.Type == engine.EventTextDelta {
			cancel() // like /stop while text streams
		}
	}
	err := h.New(t, Config{BaseURL: srv.URL}).Stream(ctx, h.request("", "hi"), emit)
	CheckError(t, err, engine.ErrAborted, &rec)
}

// runHeaders: the key goes in its header, configured headers go along,
// and no key means no key header.
func runHeaders[R any](t *testing.T, h Harness[R]) {
	var got http.Header
	srv := h.serve(t, "")
	client := &http.Client{Transport: RoundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = r.Header.Clone()
		return http.DefaultTransport.RoundTrip(r)
	})}
	var rec Recorder
	p := h.New(t, Config{BaseURL: srv.URL, APIKey: "k1", Headers: map[string]string{"X-Edge-Test": "edge"}, HTTPClient: client})
	if err := p.Stream(context.Background(), h.request("", "hi"), rec.Emit); err != nil {
		t.Fatal(err)
	}
	if got.Get(h.KeyHeader) != fmt.Sprintf(h.KeyValue, "k1") || got.Get("X-Edge-Test") != "edge" {
		t.Errorf("headers = %v", got)
	}
	if rec.Joined(engine.EventTextDelta) != "echo: hi" {
		t.Errorf("echo = %q", rec.Joined(engine.EventTextDelta))
	}
	p = h.New(t, Config{BaseURL: srv.URL, HTTPClient: client})
	if err := p.Stream(context.Background(), h.request("", "hi"), rec.Emit); err != nil {
		t.Fatal(err)
	}
	if _, ok := got[http.CanonicalHeaderKey(h.KeyHeader)]; ok {
		t.Errorf("no key, but %s sent: %v", h.KeyHeader, got)
	}
}

func runToolLoops[R any](t *testing.T, h Harness[R]) {
	if len(h.ToolLoops) == 0 {
		t.Skip("no tool loop")
	}
	for _, tt := range h.ToolLoops {
		t.Run(tt.Name, func(t *testing.T) {
			srv := h.serve(t, "", tt.Reply)
			p := h.New(t, Config{BaseURL: srv.URL})
			req := h.request(tt.Model, "list files")
			req.Thinking = tt.Level
			req.Tools = tt.Tools
			if req.Tools == nil {
				req.Tools = []engine.ToolSpec{{Name: "ls", Description: "list"}, {Name: "read", Parameters: json.RawMessage(`{"type":"object"}`)}}
			}
			var rec Recorder
			if err := p.Stream(context.Background(), req, rec.Emit); err != nil {
				t.Fatal(err)
			}
			asst := engine.Message{Role: engine.RoleAssistant}
			if tt.Assistant != nil {
				asst = tt.Assistant(&rec)
			} else {
				for _, c := range rec.Calls() {
					asst.Content = append(asst.Content, c.Block())
				}
			}
			req.Messages = append(req.Messages, asst)
			for _, c := range asst.ToolCalls() {
				req.Messages = append(req.Messages, engine.TextResult("ok").Message(c))
			}
			rec = Recorder{}
			if err := p.Stream(context.Background(), req, rec.Emit); err != nil {
				t.Fatalf("second call refused: %v", err)
			}
			if rec.Joined(engine.EventTextDelta) != "echo: list files" {
				t.Errorf("echo = %q", rec.Joined(engine.EventTextDelta))
			}
			if tt.Sent != nil {
				tt.Sent(t, srv.Requests())
			}

			// Dropping a tool result is a mapping bug the server catches.
			req.Messages = req.Messages[:len(req.Messages)-1]
			req.Messages = append(req.Messages, engine.UserText("next"))
			rec = Recorder{}
			err := p.Stream(context.Background(), req, rec.Emit)
			CheckError(t, err, engine.ErrBadRequest, &rec)
		})
	}
}

// runConversation: the golden conversation is accepted by the validating
// server.
func runConversation[R any](t *testing.T, h Harness[R]) {
	if h.Conversation == nil {
		t.Skip("no conversation")
	}
	srv := h.serve(t, "")
	var rec Recorder
	if err := h.New(t, Config{BaseURL: srv.URL}).Stream(context.Background(), h.Conversation(), rec.Emit); err != nil {
		t.Fatal(err)
	}
	if got := rec.Joined(engine.EventTextDelta); got != h.Echo {
		t.Errorf("echo = %q", got)
	}
}

func runGolden[R any](t *testing.T, h Harness[R]) {
	if len(h.Golden) == 0 {
		t.Skip("no golden requests")
	}
	for _, tt := range h.Golden {
		t.Run(tt.Name, func(t *testing.T) {
			body, err := tt.Body()
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := json.Indent(&got, body, "", "  "); err != nil {
				t.Fatal(err)
			}
			got.WriteByte('\n')
			golden := filepath.Join("testdata", tt.Name+".golden")
			if *update {
				if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("request body differs from %s (run with -update to accept):\n%s", golden, got.Bytes())
			}
		})
	}
}
