package localapi

import (
	"context"
	"net/http"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
)

// CodePullFailed is the api.Error code of a pull that failed after it
// started (network, checksum, invalid file).
const CodePullFailed = "pull_failed"

// Models is the local model registry (models/catalog, through
// models/catalog/catalogapi). Its errors are *api.Error where they mean
// something on the wire (not found, bad request, forbidden, aborted);
// anything else is internal (a pull's: pull_failed).
type Models interface {
	// List is the installed models and the catalog's, sorted by name.
	List() []api.ModelInfo
	// Describe is what is known of name, with the file header's details.
	Describe(name string) (api.ModelInfo, error)
	Import(req api.ImportModelRequest) (api.ModelInfo, error)
	// Remove forgets an installed model (and deletes a pulled file); it
	// returns the model as it was.
	Remove(name string) (api.ModelInfo, error)
	// CheckPull refuses a bad name or URL, before the stream starts.
	CheckPull(req api.PullRequest) error
	Pull(ctx context.Context, req api.PullRequest, progress func(done, total int64)) (api.ModelInfo, error)
	// Dir is the models directory: an upload is assembled under it
	// (upload.go) and lands in it, then Import registers it there.
	Dir() string
	// ModelName is the registry name a file would be imported under:
	// name when it is valid (a bad_request *api.Error when not), else the
	// one derived from file ("" when nothing usable is left) — the
	// registry's own rules, so an upload is refused before a byte is sent.
	ModelName(name, file string) (string, error)
}

// Request body limit of import and pull.
const maxModelBody = 64 << 10

// pullProgressEvery is the least time between two progress events of a
// pull; the last one is always sent.
const pullProgressEvery = 250 * time.Millisecond

// modelRoutes are the model endpoints (docs/design.md §7).
func modelRoutes(ms Models) []Route {
	h := modelsAPI{ms}
	up := newUploads(ms)
	return []Route{
		{http.MethodPost, api.PathModelUpload, jsonBody(maxModelBody, up.start)},
		{http.MethodPut, api.PathModelUpload + "/{id}", up.put},
		{http.MethodGet, api.PathModelUpload + "/{id}", jsonQuery(up.status)},
		{http.MethodPost, api.PathModelUploadFinish, up.serveFinish},
		{http.MethodGet, api.PathModels, h.list},
		{http.MethodGet, api.PathModelInfo, jsonQuery(h.info)},
		{http.MethodPost, api.PathModelImport, jsonBody(maxModelBody, h.importModel)},
		{http.MethodPost, api.PathModelPull, h.pull},
		{http.MethodPost, api.PathModelRemove, jsonQuery(h.remove)},
	}
}

type modelsAPI struct{ ms Models }

func (h modelsAPI) list(w http.ResponseWriter, r *http.Request) {
	api.WriteJSON(w, http.StatusOK, h.ms.List())
}

func nameParam(r *http.Request) (string, error) {
	name := r.URL.Query().Get("name")
	if name == "" {
		return "", badRequest("missing the name parameter")
	}
	return name, nil
}

func (h modelsAPI) info(r *http.Request) (api.ModelInfo, error) {
	name, err := nameParam(r)
	if err != nil {
		return api.ModelInfo{}, err
	}
	return h.ms.Describe(name)
}

func (h modelsAPI) importModel(r *http.Request, req api.ImportModelRequest) (api.ModelInfo, error) {
	return h.ms.Import(req)
}

func (h modelsAPI) remove(r *http.Request) (api.ModelInfo, error) {
	name, err := nameParam(r)
	if err != nil {
		return api.ModelInfo{}, err
	}
	return h.ms.Remove(name)
}

func (h modelsAPI) pull(w http.ResponseWriter, r *http.Request) {
	var req api.PullRequest
	if err := decodeJSON(w, r, maxModelBody, &req); err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	// Refuse a bad name or URL with a plain error before the stream.
	if err := h.ms.CheckPull(req); err != nil {
		api.WriteError(w, badRequest(err.Error()))
		return
	}
	flusher := startStream(w)
	if flusher != nil {
		flusher.Flush()
	}
	send := func(ev api.PullEvent) {
		_ = writeSSE(w, string(ev.Type), ev) // a client gone away: the context stops the pull
	}
	var last time.Time
	var lastDone int64 = -1
	progress := func(done, total int64) {
		now := time.Now()
		if done == lastDone || (now.Sub(last) < pullProgressEvery && done != total) {
			return
		}
		last, lastDone = now, done
		send(api.PullEvent{Type: api.PullProgress, Done: done, Total: total})
	}
	// A client that goes away (Ctrl-C) stops the download; the .part stays
	// for the next pull.
	info, err := h.ms.Pull(r.Context(), req, progress)
	if err != nil {
		ae := asAPIError(err)
		if ae.Code == api.CodeInternal {
			ae.Code = CodePullFailed
		}
		send(api.PullEvent{Type: api.PullError, Error: ae})
		return
	}
	send(api.PullEvent{Type: api.PullDone, Model: &info})
}
