// Package openaitest is a loopback server that speaks the OpenAI chat
// completions wire format (streaming SSE and plain JSON), for tests of any
// package that talks to an OpenAI-compatible model, and for the fakeopenai

// binary. It serves scripted replies in order, then echoes.
//
// It checks requests the way the real API does — a messages array, known
// roles, tool_calls arguments as strings, every tool message answering a
// pending tool_call id, every tool call answered before the conversation
// goes on, well-formed tools — and answers 400 with an OpenAI error body
// otherwise, so a mapping bug fails a test instead of passing silently.
//
// Choices where the spec is silent: a request refused by validation does
// not use up a reply; thinking streams as delta.reasoning_content; usage
// left zero in a Reply is estimated (4 bytes a token) so callers always see
// some; the usage chunk is sent only when stream_options.include_usage asks
// for it, like the real API.
//
//lint:file-ignore ST1005 these are the provider's own error texts, sent on the wire as the real API words them
package openaitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/providertest/fakeserver"
)

// Reply is one scripted answer.
type Reply struct {
	Text      string            `json:"text,omitempty"`
	Thinking  string            `json:"thinking,omitempty"`
	ToolCalls []engine.ToolCall `json:"toolCalls,omitempty"`
	// StopReason defaults to toolUse when there are tool calls, else stop.
	StopReason engine.StopReason `json:"stopReason,omitempty"`
	// Status, when non-zero, answers with that HTTP status and ErrorBody
	// (default: an OpenAI error object fitting the status).
	Status    int    `json:"status,omitempty"`
	ErrorBody string `json:"errorBody,omitempty"`
	// StreamError sends Status/ErrorBody as an {"error":…} chunk in the
	// middle of a 200 stream instead.
	StreamError bool `json:"streamError,omitempty"`
	// Usage is reported as given; all zero means estimated.
	Usage engine.Usage `json:"usage"`
	// CutStream stops half-way through, without finish_reason or [DONE].
	CutStream bool `json:"cutStream,omitempty"`
	// Stall stops half-way through and holds the connection open until the
	// client goes away or the server closes.
	Stall bool `json:"stall,omitempty"`
	// Chunk splits text, thinking and arguments into deltas of this many
	// runes (default 4).
	Chunk int `json:"chunk,omitempty"`
}

// Handler serves POST …/chat/completions and GET …/models.
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
	// URL is the base URL for the client's config, ending in /v1.
	URL string
	ts  *httptest.Server
}

// NewServer starts a server on 127.0.0.1 serving replies in order; when
// they run out it echoes: "echo: " + the text of the last user message,
// without the gateway's inbound-metadata blocks in front of it.
func NewServer(replies ...Reply) *Server {
	h := NewHandler(replies...)
	ts := httptest.NewServer(h)
	return &Server{Handler: h, URL: ts.URL + "/v1", ts: ts}
}

// Close releases stalled replies and shuts the server down.
func (s *Server) Close() {
	s.Release()
	s.ts.Close()
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasSuffix(r.URL.Path, "/models") && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"echo","object":"model","owned_by":"openaitest"}]}`)
	case strings.HasSuffix(r.URL.Path, "/chat/completions") && r.Method == http.MethodPost:
		h.chat(w, r)
	default:
		writeError(w, http.StatusNotFound, "invalid_request_error", "Unknown request URL: "+r.Method+" "+r.URL.Path)
	}
}

// request is what the handler reads from a chat request.
type request struct {
	Model         string             `json:"model"`
	Messages      *[]json.RawMessage `json:"messages"`
	Stream        bool               `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Tools           []json.RawMessage `json:"tools"`
	ReasoningEffort string            `json:"reasoning_effort"`
}

func (h *Handler) chat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "cannot read body: "+err.Error())
		return
	}
	h.Log(body)

	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error",
			"We could not parse the JSON body of your request. ("+err.Error()+")")
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
			c.ID = fmt.Sprintf("call_%d", h.nextID)
		}
		calls[i] = c
	}
	rep.ToolCalls = calls
	h.mu.Unlock()

	if rep.Status != 0 && !rep.StreamError {
		writeRaw(w, rep.Status, errorBody(rep))
		return
	}
	if rep.Usage == (engine.Usage{}) {
		rep.Usage = estimate(body, rep)
	}
	if !req.Stream {
		writeCompletion(w, req.Model, rep)
		return
	}
	h.stream(w, r, req.Model, req.StreamOptions != nil && req.StreamOptions.IncludeUsage, rep)
}

func errorBody(rep Reply) string {
	if rep.ErrorBody != "" {
		return rep.ErrorBody
	}
	typ := "invalid_request_error"
	switch {
	case rep.Status == 401:
		typ = "invalid_api_key"
	case rep.Status == 429:
		typ = "rate_limit_exceeded"
	case rep.Status >= 500 || rep.Status == 0:
		typ = "server_error"
	}
	msg := http.StatusText(rep.Status)
	if msg == "" {
		msg = "The server had an error while processing your request."
	}
	return errorJSON(typ, msg)
}

func errorJSON(typ, msg string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": nil,
	}})
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

func finishReason(rep Reply) string {
	switch rep.StopReason {
	case engine.StopLength:
		return "length"
	case engine.StopToolUse:
		return "tool_calls"
	case engine.StopError:
		return "content_filter"
	case engine.StopEnd:
		return "stop"
	}
	if len(rep.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func usageJSON(u engine.Usage) map[string]any {
	prompt := u.Input + u.CacheRead + u.CacheWrite
	total := u.TotalTokens
	if total == 0 {
		total = prompt + u.Output
	}
	return map[string]any{
		"prompt_tokens":         prompt,
		"completion_tokens":     u.Output,
		"total_tokens":          total,
		"prompt_tokens_details": map[string]any{"cached_tokens": u.CacheRead},
	}
}

func arguments(c engine.ToolCall) string {
	if len(c.Arguments) == 0 {
		return "{}"
	}
	var b bytes.Buffer
	if json.Compact(&b, c.Arguments) == nil {
		return b.String()
	}
	return string(c.Arguments) // as given when not valid JSON, to test that path
}

// writeCompletion answers a non-streamed request.
func writeCompletion(w http.ResponseWriter, model string, rep Reply) {
	msg := map[string]any{"role": "assistant", "content": rep.Text}
	if rep.Thinking != "" {
		msg["reasoning_content"] = rep.Thinking
	}
	if len(rep.ToolCalls) > 0 {
		var calls []map[string]any
		for _, c := range rep.ToolCalls {
			calls = append(calls, map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": arguments(c)}})
		}
		msg["tool_calls"] = calls
	}
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finishReason(rep)}},
		"usage":   usageJSON(rep.Usage),
	})
	writeRaw(w, http.StatusOK, string(b))
}

// stream writes rep as chat.completion.chunk events.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, model string, includeUsage bool, rep Reply) {
	n := rep.Chunk
	if n <= 0 {
		n = 4
	}
	created := time.Now().Unix()
	var events [][]byte
	add := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{
			"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		})
		events = append(events, b)
	}
	add(map[string]any{"role": "assistant", "content": ""}, nil)
	for _, s := range fakeserver.Split(rep.Thinking, n) {
		add(map[string]any{"reasoning_content": s}, nil)
	}
	for _, s := range fakeserver.Split(rep.Text, n) {
		add(map[string]any{"content": s}, nil)
	}
	for i, c := range rep.ToolCalls {
		add(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""},
		}}}, nil)
		for _, s := range fakeserver.Split(arguments(c), n) {
			add(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": s},
			}}}, nil)
		}
	}
	cut := len(events) / 2
	if cut == 0 {
		cut = 1
	}
	if rep.StreamError {
		events = append(events[:cut], []byte(errorBody(rep)))
	}
	if !rep.CutStream && !rep.Stall && !rep.StreamError {
		add(map[string]any{}, finishReason(rep))
		if includeUsage {
			b, _ := json.Marshal(map[string]any{
				"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": created, "model": model,
				"choices": []any{}, "usage": usageJSON(rep.Usage),
			})
			events = append(events, b)
		}
		events = append(events, []byte("[DONE]"))
	} else if !rep.StreamError {
		events = events[:cut]
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	for _, e := range events {
		var b bytes.Buffer
		b.WriteString("data: ")
		b.Write(e)
		b.WriteString("\n\n")
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

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// validate checks a request the way the API does and returns the text of
// the last user message, for echo replies.
func validate(req *request) (string, error) {
	if req.Model == "" {
		return "", fmt.Errorf("you must provide a model parameter")
	}
	if req.StreamOptions != nil && !req.Stream {
		return "", fmt.Errorf("The 'stream_options' parameter is only allowed when 'stream' is enabled.")
	}
	switch req.ReasoningEffort {
	case "", "minimal", "low", "medium", "high":
	default:
		return "", fmt.Errorf("Invalid value: '%s'. Supported values are: 'minimal', 'low', 'medium', and 'high'.", req.ReasoningEffort)
	}
	for i, raw := range req.Tools {
		var t struct {
			Type     string `json:"type"`
			Function *struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return "", fmt.Errorf("Invalid type for 'tools[%d]': %v", i, err)
		}
		if t.Type != "function" || t.Function == nil {
			return "", fmt.Errorf("Missing required parameter: 'tools[%d].function'.", i)
		}
		if !toolName.MatchString(t.Function.Name) {
			return "", fmt.Errorf("Invalid 'tools[%d].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", i)
		}
		if p := bytes.TrimSpace(t.Function.Parameters); len(p) > 0 && p[0] != '{' {
			return "", fmt.Errorf("Invalid type for 'tools[%d].function.parameters': expected an object.", i)
		}
	}
	if req.Messages == nil {
		return "", fmt.Errorf("Missing required parameter: 'messages'.")
	}
	msgs := *req.Messages
	if len(msgs) == 0 {
		return "", fmt.Errorf("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.")
	}
	var lastUser string
	pending := map[string]bool{} // tool_call ids not answered yet
	var pendingOrder []string
	for i, raw := range msgs {
		var m struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID *string         `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return "", fmt.Errorf("Invalid type for 'messages[%d]': %v", i, err)
		}
		if m.Role != "tool" && len(pending) > 0 {
			var missing []string
			for _, id := range pendingOrder {
				if pending[id] {
					missing = append(missing, id)
				}
			}
			return "", fmt.Errorf("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", strings.Join(missing, ", "))
		}
		switch m.Role {
		case "system", "developer", "user":
			text, err := contentText(m.Content, m.Role == "user", fmt.Sprintf("messages[%d]", i))
			if err != nil {
				return "", err
			}
			if m.Role == "user" {
				lastUser = text
			}
		case "assistant":
			if (len(m.Content) == 0 || string(m.Content) == "null") && len(m.ToolCalls) == 0 {
				return "", fmt.Errorf("Invalid 'messages[%d]': an assistant message must have content or tool_calls.", i)
			}
			if len(m.Content) > 0 && string(m.Content) != "null" {
				if _, err := contentText(m.Content, false, fmt.Sprintf("messages[%d]", i)); err != nil {
					return "", err
				}
			}
			pendingOrder = pendingOrder[:0]
			for j, c := range m.ToolCalls {
				where := fmt.Sprintf("messages[%d].tool_calls[%d]", i, j)
				if c.ID == "" {
					return "", fmt.Errorf("Missing required parameter: '%s.id'.", where)
				}
				if c.Type != "function" {
					return "", fmt.Errorf("Missing required parameter: '%s.type'.", where)
				}
				if c.Function.Name == "" {
					return "", fmt.Errorf("Missing required parameter: '%s.function.name'.", where)
				}
				var s string
				if json.Unmarshal(c.Function.Arguments, &s) != nil {
					return "", fmt.Errorf("Invalid type for '%s.function.arguments': expected a string, but got %s instead.", where, kindOf(c.Function.Arguments))
				}
				pending[c.ID] = true
				pendingOrder = append(pendingOrder, c.ID)
			}
		case "tool":
			if m.ToolCallID == nil {
				return "", fmt.Errorf("Missing required parameter: 'messages[%d].tool_call_id'.", i)
			}
			if !pending[*m.ToolCallID] {
				return "", fmt.Errorf("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.")
			}
			delete(pending, *m.ToolCallID)
			if _, err := contentText(m.Content, false, fmt.Sprintf("messages[%d]", i)); err != nil {
				return "", err
			}
		default:
			return "", fmt.Errorf("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", m.Role)
		}
	}
	if len(pending) > 0 {
		return "", fmt.Errorf("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'.")
	}
	return lastUser, nil
}

// contentText checks a message's content (a string or an array of parts;
// image parts only where allowed) and returns its text.
func contentText(c json.RawMessage, images bool, where string) (string, error) {
	if len(c) == 0 || string(c) == "null" {
		return "", fmt.Errorf("Missing required parameter: '%s.content'.", where)
	}
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type     string  `json:"type"`
		Text     *string `json:"text"`
		ImageURL *struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(c, &parts); err != nil {
		return "", fmt.Errorf("Invalid type for '%s.content': expected one of a string or array of objects, but got %s instead.", where, kindOf(c))
	}
	var text []string
	for j, p := range parts {
		switch p.Type {
		case "text":
			if p.Text == nil {
				return "", fmt.Errorf("Missing required parameter: '%s.content[%d].text'.", where, j)
			}
			text = append(text, *p.Text)
		case "image_url":
			if !images {
				return "", fmt.Errorf("Invalid value: 'image_url'. Supported values are: 'text'. (%s.content[%d])", where, j)
			}
			if p.ImageURL == nil || p.ImageURL.URL == "" {
				return "", fmt.Errorf("Missing required parameter: '%s.content[%d].image_url.url'.", where, j)
			}
			if u := p.ImageURL.URL; strings.HasPrefix(u, "data:") &&
				(!strings.HasPrefix(u, "data:image/") || !strings.Contains(u, ";base64,")) {
				return "", fmt.Errorf("Invalid '%s.content[%d].image_url.url': expected a base64-encoded data URL with an image MIME type.", where, j)
			}
		default:
			return "", fmt.Errorf("Invalid value: '%s'. Supported values are: 'text' and 'image_url'. (%s.content[%d].type)", p.Type, where, j)
		}
	}
	return strings.Join(text, "\n"), nil
}

func kindOf(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}
