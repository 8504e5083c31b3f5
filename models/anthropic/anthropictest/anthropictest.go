// Package anthropictest is a loopback server that speaks the Anthropic
// Messages wire format (streaming SSE events and plain JSON), for tests of
// any package that talks to Anthropic. It serves scripted replies in order,
// then echoes.
//
// It checks requests the way the real API does — the anthropic-version
// header, model, max_tokens and a non-empty messages array, known roles and
// block types, non-blank text, every tool_use answered by a tool_result in
// the next message and every tool_result answering one in the previous
// message, signed thinking blocks, a thinking budget of at least 1024 below
// max_tokens, a tool continuation that starts with thinking when thinking is
// on, at most 4 cache_control breakpoints, well-formed tools — and answers
// 400 with an Anthropic error body otherwise, so a mapping bug fails a test.
//
// Choices where the spec is silent: a request refused by validation does
// not use up a reply; thinking blocks get a made-up signature ("sig-" and a
// counter) unless the Reply gives one; usage left zero in a Reply is
// estimated (4 bytes a token).
package anthropictest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/providertest/fakeserver"
)

// Reply is one scripted answer.
type Reply struct {
	Text      string `json:"text,omitempty"`
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"` // of the thinking block
	// ToolCalls are streamed as tool_use blocks; ids are made up if empty.
	ToolCalls []engine.ToolCall `json:"toolCalls,omitempty"`
	// StopReason defaults to toolUse when there are tool calls, else stop.
	StopReason engine.StopReason `json:"stopReason,omitempty"`
	// Status, when non-zero, answers with that HTTP status and ErrorBody
	// (default: an Anthropic error object fitting the status).
	Status    int    `json:"status,omitempty"`
	ErrorBody string `json:"errorBody,omitempty"`
	// StreamError sends Status/ErrorBody as an "event: error" in the middle
	// of a 200 stream instead.
	StreamError bool `json:"streamError,omitempty"`
	// Usage is reported as given; all zero means estimated.
	Usage engine.Usage `json:"usage"`
	// CutStream stops half-way through, without message_stop.
	CutStream bool `json:"cutStream,omitempty"`
	// Stall stops half-way through and holds the connection open until the
	// client goes away or the server closes.
	Stall bool `json:"stall,omitempty"`
	// Chunk splits text, thinking and tool input into deltas of this many
	// runes (default 4).
	Chunk int `json:"chunk,omitempty"`
}

// Handler serves POST …/v1/messages.
type Handler struct {
	*fakeserver.Script[Reply]
	mu     sync.Mutex // guards the fields below
	nextID int
}

// NewHandler returns a Handler serving replies in order, then echo replies.
func NewHandler(replies ...Reply) *Handler {
	return &Handler{Script: fakeserver.NewScript(replies...)}
}

// Server is a Handler on a loopback httptest server.
type Server struct {
	*Handler
	// URL is the base URL for the client's config (requests go to
	// URL + "/v1/messages").
	URL string
	ts  *httptest.Server
}

// NewServer starts a server on 127.0.0.1 serving replies in order; when
// they run out it echoes: "echo: " + the text of the last user message,
// without the gateway's inbound-metadata blocks in front of it.
func NewServer(replies ...Reply) *Server {
	h := NewHandler(replies...)
	ts := httptest.NewServer(h)
	return &Server{Handler: h, URL: ts.URL, ts: ts}
}

// Close releases stalled replies and shuts the server down.
func (s *Server) Close() {
	s.Release()
	s.ts.Close()
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/v1/messages") || r.Method != http.MethodPost {
		writeError(w, http.StatusNotFound, "not_found_error", "Not found")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "cannot read body: "+err.Error())
		return
	}
	h.Log(body)

	if r.Header.Get("anthropic-version") == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required")
		return
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "There was an error parsing the body: "+err.Error())
		return
	}
	lastUser, err := validate(&req)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}

	h.mu.Lock()
	rep, ok := h.Next()
	if !ok {
		rep = Reply{Text: fakeserver.Echo(lastUser)}
	}
	calls := make([]engine.ToolCall, len(rep.ToolCalls))
	for i, c := range rep.ToolCalls {
		if c.ID == "" {
			h.nextID++
			c.ID = fmt.Sprintf("toolu_%02d", h.nextID)
		}
		calls[i] = c
	}
	rep.ToolCalls = calls
	if rep.Thinking != "" && rep.Signature == "" {
		h.nextID++
		rep.Signature = fmt.Sprintf("sig-%d", h.nextID)
	}
	h.mu.Unlock()

	if rep.Status != 0 && !rep.StreamError {
		writeRaw(w, rep.Status, errorBody(rep))
		return
	}
	if rep.Usage == (engine.Usage{}) {
		rep.Usage = estimate(body, rep)
	}
	if !req.Stream {
		writeMessage(w, req.Model, rep)
		return
	}
	h.stream(w, r, req.Model, rep)
}

var statusType = map[int]string{
	400: "invalid_request_error",
	401: "authentication_error",
	402: "billing_error",
	403: "permission_error",
	404: "not_found_error",
	413: "request_too_large",
	429: "rate_limit_error",
	500: "api_error",
	529: "overloaded_error",
}

func errorBody(rep Reply) string {
	if rep.ErrorBody != "" {
		return rep.ErrorBody
	}
	typ, ok := statusType[rep.Status]
	if !ok {
		typ = "api_error"
		if rep.Status >= 400 && rep.Status < 500 {
			typ = "invalid_request_error"
		}
	}
	msg := http.StatusText(rep.Status)
	switch {
	case rep.Status == 529 || rep.Status == 0:
		typ, msg = "overloaded_error", "Overloaded"
	case msg == "":
		msg = "Internal server error"
	}
	return errorJSON(typ, msg)
}

func errorJSON(typ, msg string) string {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
	return string(b)
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeRaw(w, status, errorJSON(typ, msg))
}

func writeRaw(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// estimate guesses token counts at 4 bytes a token.
func estimate(body []byte, rep Reply) engine.Usage {
	out := len(rep.Text) + len(rep.Thinking)
	for _, c := range rep.ToolCalls {
		out += len(c.Name) + len(c.Arguments)
	}
	u := engine.Usage{Input: len(body)/4 + 1, Output: out/4 + 1}
	u.TotalTokens = u.Input + u.Output
	return u
}

func stopReason(rep Reply) string {
	switch rep.StopReason {
	case engine.StopLength:
		return "max_tokens"
	case engine.StopToolUse:
		return "tool_use"
	case engine.StopError:
		return "refusal"
	case engine.StopEnd:
		return "end_turn"
	}
	if len(rep.ToolCalls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

func input(c engine.ToolCall) string {
	if len(c.Arguments) == 0 {
		return "{}"
	}
	var b bytes.Buffer
	if json.Compact(&b, c.Arguments) == nil {
		return b.String()
	}
	return string(c.Arguments) // as given when not valid JSON, to test that path
}

func usageJSON(u engine.Usage, final bool) map[string]any {
	m := map[string]any{
		"input_tokens":                u.Input,
		"cache_creation_input_tokens": u.CacheWrite,
		"cache_read_input_tokens":     u.CacheRead,
		"output_tokens":               1,
	}
	if final {
		m = map[string]any{"output_tokens": u.Output}
	}
	return m
}

// writeMessage answers a non-streamed request.
func writeMessage(w http.ResponseWriter, model string, rep Reply) {
	var content []any
	if rep.Thinking != "" {
		content = append(content, map[string]any{"type": "thinking", "thinking": rep.Thinking, "signature": rep.Signature})
	}
	if rep.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": rep.Text})
	}
	for _, c := range rep.ToolCalls {
		content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": json.RawMessage(input(c))})
	}
	u := usageJSON(rep.Usage, false)
	u["output_tokens"] = rep.Usage.Output
	b, err := json.Marshal(map[string]any{
		"id": "msg_test", "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": stopReason(rep), "stop_sequence": nil, "usage": u,
	})
	if err != nil { // tool input that is not JSON cannot go in a plain message
		writeError(w, http.StatusInternalServerError, "api_error", err.Error())
		return
	}
	writeRaw(w, http.StatusOK, string(b))
}

type sseEvent struct {
	name string
	data []byte
}

// stream writes rep as Messages API stream events.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, model string, rep Reply) {
	n := rep.Chunk
	if n <= 0 {
		n = 4
	}
	var events []sseEvent
	add := func(name string, data map[string]any) {
		data["type"] = name
		b, _ := json.Marshal(data)
		events = append(events, sseEvent{name, b})
	}
	add("message_start", map[string]any{"message": map[string]any{
		"id": "msg_test", "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": usageJSON(rep.Usage, false),
	}})
	add("ping", map[string]any{})
	index := 0
	if rep.Thinking != "" {
		add("content_block_start", map[string]any{"index": index, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
		for _, s := range fakeserver.Split(rep.Thinking, n) {
			add("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "thinking_delta", "thinking": s}})
		}
		add("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "signature_delta", "signature": rep.Signature}})
		add("content_block_stop", map[string]any{"index": index})
		index++
	}
	if rep.Text != "" {
		add("content_block_start", map[string]any{"index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, s := range fakeserver.Split(rep.Text, n) {
			add("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "text_delta", "text": s}})
		}
		add("content_block_stop", map[string]any{"index": index})
		index++
	}
	for _, c := range rep.ToolCalls {
		add("content_block_start", map[string]any{"index": index, "content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}})
		add("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": ""}})
		for _, s := range fakeserver.Split(input(c), n) {
			add("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": s}})
		}
		add("content_block_stop", map[string]any{"index": index})
		index++
	}
	cut := max(len(events)/2, 1)
	switch {
	case rep.StreamError:
		events = append(events[:cut], sseEvent{"error", []byte(errorBody(rep))})
	case rep.CutStream || rep.Stall:
		events = events[:cut]
	default:
		add("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stopReason(rep), "stop_sequence": nil}, "usage": usageJSON(rep.Usage, true)})
		add("message_stop", map[string]any{})
	}

	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	for _, e := range events {
		var b bytes.Buffer
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", e.name, e.data)
		if _, err := w.Write(b.Bytes()); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	if rep.Stall {
		h.Stall(r)
	}
}
