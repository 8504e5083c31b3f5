// Package ollamatest is a loopback server that speaks Ollama's native API —
// /api/chat (NDJSON streaming or one JSON answer), /api/embed, /api/tags,
// /api/show, /api/version — for tests of any package that talks to Ollama.
// It serves scripted replies in order, then echoes.
//
// Why not a real `ollama serve`: building one from the pinned module
// compiles llama.cpp (about 16 minutes on the project's 2-core CI machine,
// once per flag set), more than a provider test may cost. This server
// decodes requests into the module's own api types, as Ollama's server
// does, so a request Ollama could not bind fails here too, and it answers
// with Ollama's own response types and error texts.
//
// It checks requests the way Ollama does — a model that exists ("model
// 'x' not found", 404), think only for models that can think and a level
// string only for gpt-oss, tools only for models that have them — and, to
// catch mapping bugs, more strictly than Ollama in one respect: every tool
// message must name a call of the assistant message before it, and every
// call must be answered before the conversation goes on (Ollama would
// render such a conversation silently). Those answers are 400s whose text
// starts with "ollamatest:".
//
// Choices where the spec is silent: a refused request does not use up a
// reply; usage left zero in a Reply is estimated (4 bytes a token);
// embeddings are deterministic unit vectors of EmbedDims numbers derived
// from the text, so equal texts embed equally.
package ollamatest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/providertest/fakeserver"
)

// Reply is one scripted answer to /api/chat.
type Reply struct {
	Text      string            `json:"text,omitempty"`
	Thinking  string            `json:"thinking,omitempty"`
	ToolCalls []engine.ToolCall `json:"toolCalls,omitempty"`
	// StopReason: length sends done_reason "length"; anything else "stop"
	// (Ollama ends tool calls with "stop" too).
	StopReason engine.StopReason `json:"stopReason,omitempty"`
	// Status, when non-zero, answers with that HTTP status and
	// {"error": Error} (default: the status text).
	Status int    `json:"status,omitempty"`
	Error  string `json:"error,omitempty"`
	// StreamError sends {"error": Error} as a line in the middle of a 200
	// stream instead, the way Ollama reports a failure after it started.
	StreamError bool `json:"streamError,omitempty"`
	// Usage: Input becomes prompt_eval_count and Output eval_count; all
	// zero means estimated.
	Usage engine.Usage `json:"usage"`
	// NoIDs sends tool calls without ids, as Ollama before 0.12 did.
	NoIDs bool `json:"noIds,omitempty"`
	// CutStream stops half-way through, without a done line.
	CutStream bool `json:"cutStream,omitempty"`
	// Stall stops half-way through and holds the connection open until the
	// client goes away or the server closes.
	Stall bool `json:"stall,omitempty"`
	// Chunk splits text and thinking into lines of this many runes
	// (default 4).
	Chunk int `json:"chunk,omitempty"`
}

// Model is a model the server has "pulled".
type Model struct {
	// Name as Ollama lists it, e.g. "qwen3:1.7b"; a name without a tag is
	// ":latest".
	Name string
	// Capabilities: "completion", "tools", "thinking", "vision",
	// "embedding".
	Capabilities  []string
	Family        string
	ContextLength int
}

// EmbedDims is the length of the vectors /api/embed returns.
const EmbedDims = 8

// DefaultModels are the models a new Handler has.
var DefaultModels = []Model{
	{Name: "qwen3:1.7b", Capabilities: []string{"completion", "tools", "thinking"}, Family: "qwen3", ContextLength: 40960},
	{Name: "llama3.2:latest", Capabilities: []string{"completion", "tools"}, Family: "llama", ContextLength: 131072},
	{Name: "gemma2:2b", Capabilities: []string{"completion"}, Family: "gemma2", ContextLength: 8192},
	{Name: "gpt-oss:20b", Capabilities: []string{"completion", "tools", "thinking"}, Family: "gptoss", ContextLength: 131072},
	{Name: "qwen2.5vl:7b", Capabilities: []string{"completion", "tools", "vision"}, Family: "qwen25vl", ContextLength: 128000},
	{Name: "nomic-embed-text:latest", Capabilities: []string{"embedding"}, Family: "nomic-bert", ContextLength: 2048},
}

// Handler serves Ollama's API.
type Handler struct {
	*fakeserver.Script[Reply]
	mu     sync.Mutex // guards the fields below
	models []Model
	nextID int
}

// NewHandler returns a Handler with DefaultModels serving replies in order,
// then echo replies.
func NewHandler(replies ...Reply) *Handler {
	return &Handler{Script: fakeserver.NewScript(replies...), models: slices.Clone(DefaultModels)}
}

// AddModel adds (or replaces) a model.
func (h *Handler) AddModel(m Model) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m.Name = fullName(m.Name)
	h.models = slices.DeleteFunc(h.models, func(o Model) bool { return o.Name == m.Name })
	h.models = append(h.models, m)
}

// Server is a Handler on a loopback httptest server.
type Server struct {
	*Handler
	// URL is the base URL for the client's config, e.g.
	// http://127.0.0.1:41234 (no /api).
	URL string
	ts  *httptest.Server
}

// NewServer starts a server on 127.0.0.1 serving replies in order; when
// they run out it echoes: "echo: " + the text of the last user message.
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
	switch {
	case r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		io.WriteString(w, "Ollama is running")
	case r.URL.Path == "/api/version" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]string{"version": "0.17.4"})
	case r.URL.Path == "/api/tags" && r.Method == http.MethodGet:
		h.tags(w)
	case r.URL.Path == "/api/show" && r.Method == http.MethodPost:
		h.show(w, r)
	case r.URL.Path == "/api/embed" && r.Method == http.MethodPost:
		h.embed(w, r)
	case r.URL.Path == "/api/chat" && r.Method == http.MethodPost:
		h.chat(w, r)
	default:
		// gin's answer to an unknown route.
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, "404 page not found")
	}
}

// fullName adds ":latest" to a name without a tag.
func fullName(name string) string {
	if name == "" || strings.Contains(name[strings.LastIndex(name, "/")+1:], ":") {
		return name
	}
	return name + ":latest"
}

func (h *Handler) model(name string) (Model, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	full := fullName(name)
	for _, m := range h.models {
		if m.Name == full {
			return m, true
		}
	}
	return Model{}, false
}

func (m Model) can(c string) bool { return slices.Contains(m.Capabilities, c) }

// readBody records the body and decodes it into v as gin's ShouldBindJSON
// does, answering 400 when that fails.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return false
	}
	h.Log(body)
	if len(bytes.TrimSpace(body)) == 0 {
		writeError(w, http.StatusBadRequest, "missing request body")
		return false
	}
	if err := json.Unmarshal(body, v); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func (h *Handler) tags(w http.ResponseWriter) {
	h.mu.Lock()
	models := slices.Clone(h.models)
	h.mu.Unlock()
	list := api.ListResponse{Models: []api.ListModelResponse{}}
	for _, m := range models {
		list.Models = append(list.Models, api.ListModelResponse{
			Name: m.Name, Model: m.Name, ModifiedAt: time.Unix(1767225600, 0).UTC(),
			Size: 1 << 30, Digest: fmt.Sprintf("%064x", fnv64(m.Name)),
			Details: api.ModelDetails{Format: "gguf", Family: m.Family, Families: []string{m.Family}, QuantizationLevel: "Q4_K_M"},
		})
	}
	writeJSON(w, http.StatusOK, list)
}

func (h *Handler) show(w http.ResponseWriter, r *http.Request) {
	var req api.ShowRequest
	if !h.readBody(w, r, &req) {
		return
	}
	name := req.Model
	m, ok := h.model(name)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("model '%s' not found", name))
		return
	}
	var caps []string
	caps = append(caps, m.Capabilities...)
	writeJSON(w, http.StatusOK, map[string]any{
		"modelfile":    "# Modelfile generated by ollamatest\nFROM " + m.Name + "\n",
		"template":     "{{ .Prompt }}",
		"details":      api.ModelDetails{Format: "gguf", Family: m.Family, Families: []string{m.Family}, QuantizationLevel: "Q4_K_M"},
		"model_info":   map[string]any{"general.architecture": m.Family, m.Family + ".context_length": m.ContextLength},
		"capabilities": caps,
		"modified_at":  time.Unix(1767225600, 0).UTC(),
	})
}

func (h *Handler) embed(w http.ResponseWriter, r *http.Request) {
	var req api.EmbedRequest
	if !h.readBody(w, r, &req) {
		return
	}
	var input []string
	switch in := req.Input.(type) {
	case string:
		if in != "" {
			input = append(input, in)
		}
	case []any:
		for _, v := range in {
			s, ok := v.(string)
			if !ok {
				writeError(w, http.StatusBadRequest, "invalid input type")
				return
			}
			input = append(input, s)
		}
	case nil:
	default:
		writeError(w, http.StatusBadRequest, "invalid input type")
		return
	}
	if _, ok := h.model(req.Model); !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("model '%s' not found", req.Model))
		return
	}
	resp := api.EmbedResponse{Model: req.Model, Embeddings: [][]float32{}}
	for _, s := range input {
		resp.Embeddings = append(resp.Embeddings, Embedding(s))
		resp.PromptEvalCount += len(s)/4 + 1
	}
	resp.TotalDuration, resp.LoadDuration = 12*time.Millisecond, time.Millisecond
	writeJSON(w, http.StatusOK, resp)
}

// Embedding is the vector the server returns for text: EmbedDims numbers
// of unit length, a function of the text alone.
func Embedding(text string) []float32 {
	v := make([]float32, EmbedDims)
	var norm float64
	for i := range v {
		x := float64(fnv64(fmt.Sprint(i, "\x00", text))%2000)/1000 - 1
		v[i] = float32(x)
		norm += x * x
	}
	if norm == 0 {
		v[0], norm = 1, 1
	}
	for i := range v {
		v[i] = float32(float64(v[i]) / math.Sqrt(norm))
	}
	return v
}

func fnv64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

func (h *Handler) chat(w http.ResponseWriter, r *http.Request) {
	var req api.ChatRequest
	if !h.readBody(w, r, &req) {
		return
	}
	if req.Model == "" {
		writeError(w, http.StatusBadRequest, "model is required")
		return
	}
	m, ok := h.model(req.Model)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("model '%s' not found", req.Model))
		return
	}
	if !m.can("thinking") && req.Think != nil && req.Think.Bool() {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%q does not support thinking", req.Model))
		return
	}
	if !m.can("completion") {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%q does not support chat", req.Model))
		return
	}
	if len(req.Tools) > 0 && !m.can("tools") {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("registry.ollama.ai/library/%s does not support tools", m.Name))
		return
	}
	if req.Think != nil && req.Think.IsString() && m.Family != "gptoss" {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("think value %q is not supported for this model", req.Think.String()))
		return
	}
	for _, msg := range req.Messages {
		if len(msg.Images) > 0 && !m.can("vision") {
			// The runner's answer to images for a text-only model.
			writeError(w, http.StatusInternalServerError, "this model is missing data required for image input")
			return
		}
	}
	lastUser, err := validate(&req)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}

	h.mu.Lock()
	rep, ok := h.Next()
	if !ok {
		rep = Reply{Text: fakeserver.Echo(lastUser)}
	}
	calls := make([]engine.ToolCall, len(rep.ToolCalls))
	for i, c := range rep.ToolCalls {
		if c.ID == "" && !rep.NoIDs {
			h.nextID++
			c.ID = fmt.Sprintf("call_%d", h.nextID)
		}
		calls[i] = c
	}
	rep.ToolCalls = calls
	h.mu.Unlock()

	if rep.Status != 0 && !rep.StreamError {
		writeError(w, rep.Status, errorText(rep))
		return
	}
	if rep.Usage == (engine.Usage{}) {
		rep.Usage = estimate(&req, rep)
	}
	thinks := m.can("thinking") && (req.Think == nil || req.Think.Bool())
	if !thinks {
		rep.Thinking = ""
	}
	lines := responses(req.Model, rep)
	if req.Stream != nil && !*req.Stream {
		writeJSON(w, http.StatusOK, merge(lines))
		return
	}
	h.stream(w, r, lines, rep)
}

func errorText(rep Reply) string {
	if rep.Error != "" {
		return rep.Error
	}
	if t := http.StatusText(rep.Status); t != "" {
		return t
	}
	return "something went wrong"
}

// estimate guesses token counts at 4 bytes a token.
func estimate(req *api.ChatRequest, rep Reply) engine.Usage {
	in := 0
	for _, m := range req.Messages {
		in += len(m.Content) + len(m.Thinking)
	}
	out := len(rep.Text) + len(rep.Thinking)
	for _, c := range rep.ToolCalls {
		out += len(c.Name) + len(c.Arguments)
	}
	return engine.Usage{Input: in/4 + 1, Output: out/4 + 1}
}

// responses is the reply as the chunks Ollama streams: thinking, then
// content, then one chunk per tool call, then the done chunk.
func responses(model string, rep Reply) []api.ChatResponse {
	n := rep.Chunk
	if n <= 0 {
		n = 4
	}
	created := time.Unix(1767225600, 0).UTC()
	var out []api.ChatResponse
	add := func(m api.Message) {
		m.Role = "assistant"
		out = append(out, api.ChatResponse{Model: model, CreatedAt: created, Message: m})
	}
	for _, s := range fakeserver.Split(rep.Thinking, n) {
		add(api.Message{Thinking: s})
	}
	for _, s := range fakeserver.Split(rep.Text, n) {
		add(api.Message{Content: s})
	}
	for i, c := range rep.ToolCalls {
		args := api.NewToolCallFunctionArguments()
		if len(c.Arguments) > 0 {
			if err := json.Unmarshal(c.Arguments, &args); err != nil {
				args = api.NewToolCallFunctionArguments()
			}
		}
		add(api.Message{ToolCalls: []api.ToolCall{{ID: c.ID, Function: api.ToolCallFunction{Index: i, Name: c.Name, Arguments: args}}}})
	}
	reason := "stop"
	if rep.StopReason == engine.StopLength {
		reason = "length"
	}
	out = append(out, api.ChatResponse{
		Model: model, CreatedAt: created, Message: api.Message{Role: "assistant"},
		Done: true, DoneReason: reason,
		Metrics: api.Metrics{
			TotalDuration: 250 * time.Millisecond, LoadDuration: 5 * time.Millisecond,
			PromptEvalCount: rep.Usage.Input, PromptEvalDuration: 100 * time.Millisecond,
			EvalCount: rep.Usage.Output, EvalDuration: 140 * time.Millisecond,
		},
	})
	return out
}

// merge is the non-streamed answer: one response holding everything.
func merge(lines []api.ChatResponse) api.ChatResponse {
	final := lines[len(lines)-1]
	var content, thinking strings.Builder
	var calls []api.ToolCall
	for _, l := range lines {
		content.WriteString(l.Message.Content)
		thinking.WriteString(l.Message.Thinking)
		calls = append(calls, l.Message.ToolCalls...)
	}
	final.Message.Content, final.Message.Thinking, final.Message.ToolCalls = content.String(), thinking.String(), calls
	return final
}

// stream writes the lines as NDJSON.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, lines []api.ChatResponse, rep Reply) {
	var out [][]byte
	for _, l := range lines {
		b, _ := json.Marshal(l)
		out = append(out, b)
	}
	cut := max((len(out)-1)/2, 1)
	switch {
	case rep.StreamError:
		b, _ := json.Marshal(map[string]string{"error": errorText(rep)})
		out = append(out[:cut:cut], b)
	case rep.CutStream || rep.Stall:
		out = out[:cut]
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	for _, b := range out {
		if _, err := w.Write(append(b, '\n')); err != nil {
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

// validate checks the conversation (see the package doc) and returns the
// text of the last user message, for echo replies.
func validate(req *api.ChatRequest) (string, error) {
	var lastUser string
	pending := map[string]int{} // tool names called and not answered yet
	for i, msg := range req.Messages {
		if msg.Role != "tool" && len(pending) > 0 {
			return "", fmt.Errorf("ollamatest: messages[%d] (%s) comes before every tool call of the assistant message is answered (%s unanswered)", i, msg.Role, strings.Join(sortedKeys(pending), ", "))
		}
		switch msg.Role {
		case "system":
			if i != 0 {
				return "", fmt.Errorf("ollamatest: messages[%d]: a system message only comes first", i)
			}
		case "user":
			lastUser = msg.Content
		case "assistant":
			if msg.Content == "" && msg.Thinking == "" && len(msg.ToolCalls) == 0 {
				return "", fmt.Errorf("ollamatest: messages[%d]: an empty assistant message", i)
			}
			for j, c := range msg.ToolCalls {
				if c.Function.Name == "" {
					return "", fmt.Errorf("ollamatest: messages[%d].tool_calls[%d]: no function name", i, j)
				}
				pending[c.Function.Name]++
			}
		case "tool":
			if pending[msg.ToolName] == 0 {
				return "", fmt.Errorf("ollamatest: messages[%d]: tool message for %q answers no call of the assistant message before it", i, msg.ToolName)
			}
			if pending[msg.ToolName]--; pending[msg.ToolName] == 0 {
				delete(pending, msg.ToolName)
			}
		default:
			return "", fmt.Errorf("ollamatest: messages[%d]: unknown role %q", i, msg.Role)
		}
	}
	if len(pending) > 0 {
		return "", errors.New("ollamatest: the conversation ends with unanswered tool calls")
	}
	return lastUser, nil
}

func sortedKeys(m map[string]int) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
