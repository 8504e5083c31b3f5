// Package geminitest is a loopback server that speaks the Gemini API's
// generateContent wire format — POST …/models/<model>:streamGenerateContent
// (SSE with alt=sse, else a JSON array) and :generateContent, GET …/models —
// for tests of any package that talks to Gemini. It serves scripted replies
// in order, then echoes.
//
// It checks requests the way the API does and answers 400 with a Google
// error body ({"error": {"code", "message", "status"}}) otherwise, so a
// mapping bug fails a test instead of passing silently: unknown JSON fields
// anywhere (the API's proto parser refuses them, tool schemas included),
// roles user|model alternating, non-empty parts holding one datum each,
// base64 image data, a functionResponse turn right after each function
// call turn with as many responses as calls and the same names, object
// responses and args, function names and schema rules (no empty OBJECT at
// the top, items on arrays, required names that exist, no empty enum
// values, supported formats), thinking config per model, the input token
// limit, and on gemini-3 models a thought signature on the first function
// call of each step of the current turn (one this server issued, or the
// documented placeholders).
//
// Choices where the spec is silent: a request refused by validation does
// not use up a reply; usage left zero in a Reply is estimated (4 bytes a
// token); thoughts stream only when includeThoughts asks for them; every
// chunk carries usageMetadata (the last one complete), as Gemini sends
// them; the model's function call names are not checked against the
// declared tools (Gemini does not either).
package geminitest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/providertest/fakeserver"
)

// Reply is one scripted answer.
type Reply struct {
	Text      string            `json:"text,omitempty"`
	Thinking  string            `json:"thinking,omitempty"`
	ToolCalls []engine.ToolCall `json:"toolCalls,omitempty"`
	// StopReason: length sends MAX_TOKENS, error SAFETY, anything else
	// STOP (Gemini ends function calls with STOP too).
	StopReason engine.StopReason `json:"stopReason,omitempty"`
	// FinishReason, when set, is sent as it is (e.g. RECITATION,
	// MALFORMED_FUNCTION_CALL).
	FinishReason string `json:"finishReason,omitempty"`
	// BlockReason answers with promptFeedback.blockReason and no
	// candidates: the prompt was blocked.
	BlockReason string `json:"blockReason,omitempty"`
	// Signature is the thoughtSignature sent on the first function call
	// (or the last text part); default: one made up for models that think,
	// none for others. NoSignature sends none.
	Signature   string `json:"signature,omitempty"`
	NoSignature bool   `json:"noSignature,omitempty"`
	// Status, when non-zero, answers with that HTTP status and ErrorBody
	// (default: a Google error object fitting the status).
	Status    int    `json:"status,omitempty"`
	ErrorBody string `json:"errorBody,omitempty"`
	// StreamError sends the error body as a data chunk in the middle of a
	// 200 stream instead.
	StreamError bool `json:"streamError,omitempty"`
	// Usage: Input+CacheRead is promptTokenCount, CacheRead
	// cachedContentTokenCount, Output-ThoughtTokens candidatesTokenCount;
	// all zero means estimated.
	Usage         engine.Usage `json:"usage"`
	ThoughtTokens int          `json:"thoughtTokens,omitempty"`
	// CutStream stops half-way through, before the finish reason.
	CutStream bool `json:"cutStream,omitempty"`
	// Stall stops half-way through and holds the connection open until the
	// client goes away or the server closes.
	Stall bool `json:"stall,omitempty"`
	// Chunk splits text and thoughts into chunks of this many runes
	// (default 4).
	Chunk int `json:"chunk,omitempty"`
}

// Model is a model the server knows.
type Model struct {
	Name string // without "models/"
	// Thinking: the model thinks; CanStopThinking: thinkingBudget 0 is
	// accepted; Levels: it takes thinkingLevel instead of budgets (gemini-3,
	// which also requires thought signatures on function calls).
	Thinking, CanStopThinking, Levels bool
	InputTokenLimit                   int
}

// DefaultModels are the models a new Handler knows.
var DefaultModels = []Model{
	{Name: "gemini-2.5-flash", Thinking: true, CanStopThinking: true, InputTokenLimit: 1048576},
	{Name: "gemini-2.5-flash-lite", Thinking: true, CanStopThinking: true, InputTokenLimit: 1048576},
	{Name: "gemini-2.5-pro", Thinking: true, InputTokenLimit: 1048576},
	{Name: "gemini-2.0-flash", InputTokenLimit: 1048576},
	{Name: "gemini-3-pro-preview", Thinking: true, Levels: true, InputTokenLimit: 1048576},
}

// Handler serves the API.
type Handler struct {
	*fakeserver.Script[Reply]
	mu         sync.Mutex // guards the fields below
	models     []Model
	key        string
	signatures map[string]bool // issued thought signatures
	nextResp   int
}

// NewHandler returns a Handler knowing DefaultModels, serving replies in
// order, then echo replies.
func NewHandler(replies ...Reply) *Handler {
	return &Handler{Script: fakeserver.NewScript(replies...), models: slices.Clone(DefaultModels), signatures: map[string]bool{}}
}

// AddModel adds (or replaces) a model.
func (h *Handler) AddModel(m Model) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.models = slices.DeleteFunc(h.models, func(o Model) bool { return o.Name == m.Name })
	h.models = append(h.models, m)
}

// RequireKey makes every request need this API key (x-goog-api-key or
// ?key=).
func (h *Handler) RequireKey(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.key = key
}

// Server is a Handler on a loopback httptest server.
type Server struct {
	*Handler
	// URL is the base URL for the client's config, ending in /v1beta.
	URL string
	ts  *httptest.Server
}

// NewServer starts a server on 127.0.0.1 serving replies in order; when
// they run out it echoes: "echo: " + the text of the last user content
// that has text.
func NewServer(replies ...Reply) *Server {
	h := NewHandler(replies...)
	ts := httptest.NewServer(h)
	return &Server{Handler: h, URL: ts.URL + "/v1beta", ts: ts}
}

// Close releases stalled replies and shuts the server down.
func (s *Server) Close() {
	s.Release()
	s.ts.Close()
}

// ErrorBody is a Google error body.
func ErrorBody(code int, status, message string, details ...any) string {
	e := map[string]any{"code": code, "message": message, "status": status}
	if len(details) > 0 {
		e["details"] = details
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	return string(b)
}

func writeRaw(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func writeError(w http.ResponseWriter, code int, status, message string, details ...any) {
	writeRaw(w, code, ErrorBody(code, status, message, details...))
}

func badRequest(w http.ResponseWriter, message string) {
	writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", message)
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path, ok := strings.CutPrefix(r.URL.Path, "/v1beta/")
	if !ok {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "Requested entity was not found.")
		return
	}
	if !h.checkKey(w, r) {
		return
	}
	if path == "models" && r.Method == http.MethodGet {
		h.list(w)
		return
	}
	name, method, ok := strings.Cut(strings.TrimPrefix(path, "models/"), ":")
	if !ok || r.Method != http.MethodPost || !strings.HasPrefix(path, "models/") ||
		method != "streamGenerateContent" && method != "generateContent" {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "Requested entity was not found.")
		return
	}
	h.generate(w, r, name, method == "streamGenerateContent", r.URL.Query().Get("alt") == "sse")
}

func (h *Handler) checkKey(w http.ResponseWriter, r *http.Request) bool {
	h.mu.Lock()
	want := h.key
	h.mu.Unlock()
	if want == "" {
		return true
	}
	got := r.Header.Get("x-goog-api-key")
	if got == "" {
		got = r.URL.Query().Get("key")
	}
	switch {
	case got == "":
		writeError(w, http.StatusForbidden, "PERMISSION_DENIED",
			"Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.")
		return false
	case got != want:
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.",
			map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com"})
		return false
	}
	return true
}

func (h *Handler) list(w http.ResponseWriter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var models []map[string]any
	for _, m := range h.models {
		models = append(models, map[string]any{
			"name": "models/" + m.Name, "displayName": m.Name, "inputTokenLimit": m.InputTokenLimit,
			"outputTokenLimit": 65536, "supportedGenerationMethods": []string{"generateContent", "countTokens"},
			"thinking": m.Thinking,
		})
	}
	b, _ := json.Marshal(map[string]any{"models": models})
	writeRaw(w, http.StatusOK, string(b))
}

func (h *Handler) model(name string) (Model, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.models {
		if m.Name == name {
			return m, true
		}
	}
	return Model{}, false
}

func (h *Handler) generate(w http.ResponseWriter, r *http.Request, name string, stream, sse bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		badRequest(w, "cannot read body: "+err.Error())
		return
	}
	h.Log(body)

	m, ok := h.model(name)
	if !ok {
		writeError(w, http.StatusNotFound, "NOT_FOUND", fmt.Sprintf("models/%s is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.", name))
		return
	}
	req, err := decode(body)
	if err != nil {
		badRequest(w, err.Error())
		return
	}
	h.mu.Lock()
	issued := func(s string) bool { return h.signatures[s] }
	lastUser, err := validate(req, m, issued)
	h.mu.Unlock()
	if err != nil {
		badRequest(w, err.Error())
		return
	}
	if n := len(body) / 4; n > m.InputTokenLimit {
		badRequest(w, fmt.Sprintf("The input token count (%d) exceeds the maximum number of tokens allowed (%d).", n, m.InputTokenLimit))
		return
	}

	h.mu.Lock()
	rep, ok := h.Next()
	if !ok {
		rep = Reply{Text: fakeserver.Echo(lastUser)}
	}
	h.nextResp++
	respID := fmt.Sprintf("resp%d", h.nextResp)
	if m.Thinking && !rep.NoSignature && rep.Signature == "" && (len(rep.ToolCalls) > 0 || rep.Text != "") {
		rep.Signature = base64.StdEncoding.EncodeToString([]byte("geminitest-signature-" + respID))
	}
	if rep.NoSignature {
		rep.Signature = ""
	}
	if rep.Signature != "" {
		h.signatures[rep.Signature] = true
	}
	h.mu.Unlock()

	if rep.Status != 0 && !rep.StreamError {
		writeRaw(w, rep.Status, errorBody(rep))
		return
	}
	thoughts := req.GenerationConfig != nil && req.GenerationConfig.ThinkingConfig != nil && req.GenerationConfig.ThinkingConfig.IncludeThoughts
	if !thoughts || !m.Thinking {
		rep.Thinking = ""
	}
	if rep.Usage == (engine.Usage{}) {
		rep.Usage = estimate(body, rep)
	}
	chunks := responses(name, respID, rep)
	if !stream {
		writeRaw(w, http.StatusOK, string(mustJSON(merge(chunks))))
		return
	}
	h.stream(w, r, chunks, rep, sse)
}

func errorBody(rep Reply) string {
	if rep.ErrorBody != "" {
		return rep.ErrorBody
	}
	status, msg := "INTERNAL", "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"
	switch rep.Status {
	case 400:
		status, msg = "INVALID_ARGUMENT", "Request contains an invalid argument."
	case 401:
		status, msg = "UNAUTHENTICATED", "Request had invalid authentication credentials."
	case 403:
		status, msg = "PERMISSION_DENIED", "The caller does not have permission"
	case 404:
		status, msg = "NOT_FOUND", "Requested entity was not found."
	case 429:
		status, msg = "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."
	case 503:
		status, msg = "UNAVAILABLE", "The model is overloaded. Please try again later."
	case 504:
		status, msg = "DEADLINE_EXCEEDED", "Deadline expired before operation could complete."
	}
	code := rep.Status
	if code == 0 {
		code = 500
	}
	return ErrorBody(code, status, msg)
}

// estimate guesses token counts at 4 bytes a token.
func estimate(body []byte, rep Reply) engine.Usage {
	out := len(rep.Text) + len(rep.Thinking)
	for _, c := range rep.ToolCalls {
		out += len(c.Name) + len(c.Arguments)
	}
	return engine.Usage{Input: len(body)/4 + 1, Output: out/4 + 1}
}

// chunk is one GenerateContentResponse as the server writes it.
type chunk struct {
	Candidates     []candidate     `json:"candidates,omitempty"`
	PromptFeedback map[string]any  `json:"promptFeedback,omitempty"`
	UsageMetadata  map[string]any  `json:"usageMetadata,omitempty"`
	ModelVersion   string          `json:"modelVersion"`
	ResponseID     string          `json:"responseId"`
	Error          json.RawMessage `json:"error,omitempty"`
}

type candidate struct {
	Content      *content `json:"content,omitempty"`
	FinishReason string   `json:"finishReason,omitempty"`
	Index        int      `json:"index"`
}

func finishReason(rep Reply) string {
	switch {
	case rep.FinishReason != "":
		return rep.FinishReason
	case rep.StopReason == engine.StopLength:
		return "MAX_TOKENS"
	case rep.StopReason == engine.StopError:
		return "SAFETY"
	}
	return "STOP"
}

// responses is the reply as the chunks Gemini streams: thoughts, text,
// then the function calls together, then the finish chunk with full usage.
func responses(model, respID string, rep Reply) []chunk {
	n := rep.Chunk
	if n <= 0 {
		n = 4
	}
	prompt := rep.Usage.Input + rep.Usage.CacheRead
	partial := map[string]any{"promptTokenCount": prompt, "totalTokenCount": prompt,
		"promptTokensDetails": []any{map[string]any{"modality": "TEXT", "tokenCount": prompt}}}
	var out []chunk
	add := func(parts ...part) {
		out = append(out, chunk{
			Candidates:    []candidate{{Content: &content{Role: "model", Parts: parts}}},
			UsageMetadata: partial, ModelVersion: model, ResponseID: respID,
		})
	}
	if rep.BlockReason != "" {
		return []chunk{{PromptFeedback: map[string]any{"blockReason": rep.BlockReason}, UsageMetadata: partial, ModelVersion: model, ResponseID: respID}}
	}
	for _, s := range fakeserver.Split(rep.Thinking, n) {
		add(part{Text: strptr(s), Thought: true})
	}
	texts := fakeserver.Split(rep.Text, n)
	for i, s := range texts {
		p := part{Text: strptr(s)}
		if i == len(texts)-1 && len(rep.ToolCalls) == 0 {
			p.ThoughtSignature = rep.Signature
		}
		add(p)
	}
	if len(rep.ToolCalls) > 0 {
		var parts []part
		for i, c := range rep.ToolCalls {
			args := c.Arguments
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			p := part{FunctionCall: &functionCall{Name: c.Name, Args: args}}
			if i == 0 {
				p.ThoughtSignature = rep.Signature
			}
			parts = append(parts, p)
		}
		add(parts...)
	}
	cand := rep.Usage.Output - rep.ThoughtTokens
	full := map[string]any{
		"promptTokenCount": prompt, "candidatesTokenCount": cand,
		"totalTokenCount":     prompt + rep.Usage.Output,
		"promptTokensDetails": []any{map[string]any{"modality": "TEXT", "tokenCount": prompt}},
	}
	if rep.Usage.CacheRead > 0 {
		full["cachedContentTokenCount"] = rep.Usage.CacheRead
	}
	if rep.ThoughtTokens > 0 {
		full["thoughtsTokenCount"] = rep.ThoughtTokens
	}
	out = append(out, chunk{
		Candidates:    []candidate{{Content: &content{Role: "model", Parts: []part{{Text: strptr("")}}}, FinishReason: finishReason(rep)}},
		UsageMetadata: full, ModelVersion: model, ResponseID: respID,
	})
	return out
}

func strptr(s string) *string { return &s }

// merge is the generateContent answer: one response holding everything.
func merge(chunks []chunk) chunk {
	final := chunks[len(chunks)-1]
	if len(final.Candidates) == 0 {
		return final
	}
	var parts []part
	for _, c := range chunks {
		if len(c.Candidates) > 0 && c.Candidates[0].Content != nil {
			for _, p := range c.Candidates[0].Content.Parts {
				if p.Text == nil || *p.Text != "" {
					parts = append(parts, p)
				}
			}
		}
	}
	final.Candidates = []candidate{{Content: &content{Role: "model", Parts: parts}, FinishReason: final.Candidates[0].FinishReason}}
	return final
}

// stream writes the chunks as SSE events (or a JSON array without
// alt=sse, as Gemini does).
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, chunks []chunk, rep Reply, sse bool) {
	var out [][]byte
	for _, c := range chunks {
		out = append(out, mustJSON(c))
	}
	cut := max((len(out)-1)/2, 1)
	switch {
	case rep.StreamError:
		out = append(out[:cut:cut], []byte(errorBody(rep)))
	case rep.CutStream || rep.Stall:
		out = out[:cut]
	}
	if !sse {
		writeRaw(w, http.StatusOK, "["+string(bytes.Join(out, []byte(",\n")))+"]")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	for _, b := range out {
		if _, err := w.Write([]byte("data: " + string(b) + "\r\n\r\n")); err != nil {
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

func mustJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("geminitest: " + err.Error())
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
