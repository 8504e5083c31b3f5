package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/user"
	"slices"
	"strings"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/models/gguf"
)

// CodePullFailed is the api.Error code of a pull that failed after it
// started (network, checksum, invalid file).
const CodePullFailed = "pull_failed"

// PullFunc installs a model: Registry.PullAs is one.
type PullFunc func(ctx context.Context, ref, name string, progress func(done, total int64)) (Entry, error)

// HandlerOptions configures Handler; the zero value serves the registry as
// it is.
type HandlerOptions struct {
	// Pull replaces Registry.PullAs (wiring that wraps it, tests).
	Pull PullFunc
	// Changed, when set, is called after a model was imported, pulled or
	// removed, with its name: the wiring can drop a loaded model whose
	// file went away.
	Changed func(name string)
	// ProgressInterval is the least time between two progress events of a
	// pull (default 250 ms); the last one is always sent.
	ProgressInterval time.Duration
}

// Request body limit of import and pull.
const maxRequestBody = 64 << 10

// Handler serves the model endpoints of the control API (api.PathModels
// and the paths under it). Mount it for "/v1/models" and "/v1/models/".
func Handler(reg *Registry, opts HandlerOptions) http.Handler {
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = 250 * time.Millisecond
	}
	h := &handler{reg: reg, opts: opts}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.PathModels, h.list)
	mux.HandleFunc("GET "+api.PathModelInfo, h.info)
	mux.HandleFunc("POST "+api.PathModelImport, h.importModel)
	mux.HandleFunc("POST "+api.PathModelPull, h.pull)
	mux.HandleFunc("POST "+api.PathModelRemove, h.remove)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		api.WriteError(w, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path)})
	})
	return mux
}

type handler struct {
	reg  *Registry
	opts HandlerOptions
}

func (h *handler) changed(name string) {
	if h.opts.Changed != nil {
		h.opts.Changed(name)
	}
}

func (h *handler) list(w http.ResponseWriter, r *http.Request) {
	api.WriteJSON(w, http.StatusOK, h.reg.Models())
}

func nameParam(r *http.Request) (string, error) {
	name := r.URL.Query().Get("name")
	if name == "" {
		return "", &api.Error{Code: api.CodeBadRequest, Message: "missing the name parameter"}
	}
	return name, nil
}

func (h *handler) info(w http.ResponseWriter, r *http.Request) {
	name, err := nameParam(r)
	if err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	info, err := h.reg.Describe(name, true)
	if err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	api.WriteJSON(w, http.StatusOK, info)
}

func (h *handler) importModel(w http.ResponseWriter, r *http.Request) {
	var req api.ImportModelRequest
	if err := decodeJSON(w, r, &req); err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	e, err := h.reg.Import(req.Path, req.Name, req.Copy)
	if err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	h.changed(e.Name)
	api.WriteJSON(w, http.StatusOK, h.reg.describeEntry(e, true))
}

func (h *handler) remove(w http.ResponseWriter, r *http.Request) {
	name, err := nameParam(r)
	if err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	info, derr := h.reg.Describe(name, false)
	if err := h.reg.Remove(name); err != nil {
		if errors.Is(err, ErrNotInstalled) {
			api.WriteError(w, asAPIError(err))
			return
		}
		if derr == nil && !errors.Is(err, ErrBusy) {
			h.changed(name) // the entry is gone even when its file stayed
		}
		api.WriteError(w, asAPIError(err))
		return
	}
	h.changed(name)
	if derr != nil {
		info = api.ModelInfo{Name: name, Ref: "local/" + name}
	}
	api.WriteJSON(w, http.StatusOK, info)
}

func (h *handler) pull(w http.ResponseWriter, r *http.Request) {
	var req api.PullRequest
	if err := decodeJSON(w, r, &req); err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	pull := h.opts.Pull
	if pull == nil {
		// Refuse a bad name or URL with a plain error before the stream.
		if _, err := h.reg.source(req.Name, req.As); err != nil {
			api.WriteError(w, &api.Error{Code: api.CodeBadRequest, Message: err.Error()})
			return
		}
		pull = h.reg.PullAs
	}
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	send := func(ev api.PullEvent) {
		data, err := json.Marshal(ev)
		if err != nil {
			return
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, data); err != nil {
			return // the client went away; the context stops the pull
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	var last time.Time
	var lastDone int64 = -1
	progress := func(done, total int64) {
		now := time.Now()
		if done == lastDone || (now.Sub(last) < h.opts.ProgressInterval && done != total) {
			return
		}
		last, lastDone = now, done
		send(api.PullEvent{Type: api.PullProgress, Done: done, Total: total})
	}
	// A client that goes away (Ctrl-C) stops the download; the .part stays
	// for the next pull.
	e, err := pull(r.Context(), req.Name, req.As, progress)
	if err != nil {
		ae := asAPIError(err)
		if ae.Code == api.CodeInternal {
			ae.Code = CodePullFailed
		}
		send(api.PullEvent{Type: api.PullError, Error: ae})
		return
	}
	h.changed(e.Name)
	info := h.reg.describeEntry(e, false)
	send(api.PullEvent{Type: api.PullDone, Model: &info})
}

// Models lists installed models and the catalog's, sorted by name.
func (r *Registry) Models() []api.ModelInfo {
	out := []api.ModelInfo{}
	seen := map[string]bool{}
	for _, e := range r.List() {
		out = append(out, r.describeEntry(e, false))
		seen[e.Name] = true
	}
	for _, m := range r.catalog {
		if !seen[m.Name] {
			out = append(out, describeModel(m))
		}
	}
	slices.SortFunc(out, func(a, b api.ModelInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Describe returns what is known of name: the installed file (with the
// header's details when details is set) and the catalog entry. A name that
// is neither installed nor in the catalog gets a *NotInstalledError.
func (r *Registry) Describe(name string, details bool) (api.ModelInfo, error) {
	if e, ok := r.Get(name); ok {
		return r.describeEntry(e, details), nil
	}
	if m, ok := r.Lookup(name); ok {
		return describeModel(m), nil
	}
	return api.ModelInfo{}, &NotInstalledError{Name: name}
}

func describeModel(m Model) api.ModelInfo {
	info := api.ModelInfo{
		Name: m.Name, Ref: "local/" + m.Name, Catalog: true, Kind: string(m.Kind), Family: m.Family,
		Description: m.Description, Size: m.Size, SHA256: m.SHA256, Verified: m.Verified,
		ContextWindow: m.ContextWindow, Architecture: m.Architecture, Quantization: m.Quantization,
		License: m.License, Tools: m.Tools, TemplateNotes: m.TemplateNotes, Params: m.Params,
		QueryPrefix: m.QueryPrefix, DocumentPrefix: m.DocumentPrefix, File: m.File, URL: m.URL,
	}
	switch m.Name {
	case DefaultChat:
		info.Default = string(KindChat)
	case DefaultEmbedding:
		info.Default = string(KindEmbedding)
	}
	return info
}

func (r *Registry) describeEntry(e Entry, details bool) api.ModelInfo {
	info := api.ModelInfo{Name: e.Name, Ref: e.Ref()}
	if m, ok := r.Lookup(e.Name); ok {
		info = describeModel(m)
	}
	info.Installed = true
	info.Kind = string(e.Kind)
	info.Size, info.SHA256, info.Verified = e.Size, e.SHA256, e.Verified
	info.Architecture, info.Quantization, info.HasTemplate = e.Architecture, e.Quantization, e.HasChatTemplate
	if e.ContextLength > 0 {
		info.ContextWindow = e.ContextLength
	}
	info.Path, info.Source, info.AddedAt = e.Path, e.Source, e.AddedAt
	if e.URL != "" {
		info.URL = e.URL
	}
	if _, err := os.Stat(e.Path); errors.Is(err, fs.ErrNotExist) {
		info.Missing = true
	}
	if details && !info.Missing {
		if f, err := gguf.Open(e.Path); err == nil {
			info.Details = ggufDetails(f)
		}
	}
	return info
}

// shownKeys are header keys ModelDetails reports in their own fields.
var shownKeys = map[string]bool{"general.name": true, "tokenizer.chat_template": true, "tokenizer.ggml.model": true}

func ggufDetails(f *gguf.File) *api.ModelDetails {
	d := &api.ModelDetails{
		GGUFName: f.Name(), GGUFVersion: f.Version, TensorCount: f.TensorCount, BlockCount: f.BlockCount(),
		EmbeddingLength: f.EmbeddingLength(), ChatTemplate: f.ChatTemplate(), Metadata: map[string]string{},
	}
	d.Tokenizer, _ = f.String("tokenizer.ggml.model")
	if v, ok := f.Get("tokenizer.ggml.tokens"); ok {
		d.VocabSize = v.Len()
	}
	if f.IsEmbedding() {
		d.Pooling = f.PoolingType().String()
	}
	for _, k := range f.Keys() {
		if !shownKeys[k] {
			v, _ := f.Get(k)
			d.Metadata[k] = v.String()
		}
	}
	return d
}

// asAPIError classifies a registry error for the control API.
func asAPIError(err error) *api.Error {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae
	}
	msg := err.Error()
	switch {
	case errors.Is(err, ErrNotInstalled):
		return &api.Error{Code: api.CodeNotFound, Message: msg}
	case errors.Is(err, fs.ErrNotExist):
		return &api.Error{Code: api.CodeNotFound, Message: msg}
	case errors.Is(err, fs.ErrPermission):
		who := "the gateway's user"
		if u, err := user.Current(); err == nil {
			who = fmt.Sprintf("the gateway's user (%s)", u.Username)
		}
		return &api.Error{Code: api.CodeForbidden, Message: msg + ": the gateway reads the file itself and " + who +
			" may not; make it readable, or put it in a directory the gateway can read"}
	case errors.Is(err, ErrExists), errors.Is(err, ErrBadModel), errors.Is(err, ErrBusy), errors.Is(err, ErrInvalid):
		return &api.Error{Code: api.CodeBadRequest, Message: msg}
	case errors.Is(err, context.Canceled):
		return &api.Error{Code: api.CodeAborted, Message: msg}
	}
	return &api.Error{Code: api.CodeInternal, Message: msg}
}

func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequestBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &api.Error{Code: api.CodeBadRequest, Message: "invalid JSON request body: " + err.Error()}
	}
	if dec.More() {
		return &api.Error{Code: api.CodeBadRequest, Message: "invalid JSON request body: more than one value"}
	}
	return nil
}
