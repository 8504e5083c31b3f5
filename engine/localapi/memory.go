package localapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
)

// MemoryIndex is one agent's memory index (engine/memory's Index, through
// the wiring's adapter, which converts its types to the wire's).
type MemoryIndex interface {
	Status() api.MemoryStatus
	Search(ctx context.Context, query string, maxResults int) (api.MemorySearchResponse, error)
	// Sync brings the index up to date (force: rebuild), calling progress
	// with the chunks done of all.
	Sync(ctx context.Context, force bool, progress func(done, total int)) (api.MemoryIndexResult, error)
}

// MemoryLookup finds an agent's index ("" = the default agent) and says
// which agent that is; a nil index with a nil error means memory search is
// off for that agent. An error is an agent that is not configured.
type MemoryLookup func(agent string) (MemoryIndex, string, error)

// Request body limit of the memory routes.
const maxMemoryBody = 64 << 10

// memoryRoutes are the memory endpoints (docs/design.md §6).
func memoryRoutes(lookup MemoryLookup) []Route {
	m := memoryAPI{lookup}
	return []Route{
		{http.MethodGet, api.PathMemoryStatus, m.status},
		{http.MethodPost, api.PathMemorySearch, m.search},
		{http.MethodPost, api.PathMemoryIndex, m.index},
	}
}

type memoryAPI struct{ lookup MemoryLookup }

func (m memoryAPI) status(w http.ResponseWriter, r *http.Request) {
	ix, ok := m.find(w, r.URL.Query().Get("agent"))
	if !ok {
		return
	}
	api.WriteJSON(w, http.StatusOK, ix.Status())
}

func (m memoryAPI) search(w http.ResponseWriter, r *http.Request) {
	var req api.MemorySearchRequest
	if err := decodeOptionalJSON(w, r, maxMemoryBody, &req); err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	if req.MaxResults < 0 || req.MaxResults > 50 {
		api.WriteError(w, badRequest("maxResults: want 1 to 50"))
		return
	}
	ix, ok := m.find(w, req.Agent)
	if !ok {
		return
	}
	resp, err := ix.Search(r.Context(), req.Query, req.MaxResults)
	if err != nil {
		api.WriteError(w, &api.Error{Code: api.CodeInternal, Message: err.Error()})
		return
	}
	if resp.Results == nil {
		resp.Results = []api.MemoryResult{}
	}
	api.WriteJSON(w, http.StatusOK, resp)
}

func (m memoryAPI) index(w http.ResponseWriter, r *http.Request) {
	var req api.MemoryIndexRequest
	if err := decodeOptionalJSON(w, r, maxMemoryBody, &req); err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	ix, ok := m.find(w, req.Agent)
	if !ok {
		return
	}
	startStream(w)
	send := func(ev api.MemoryIndexEvent) { _ = writeSSE(w, string(ev.Type), ev) }
	var last time.Time
	res, err := ix.Sync(r.Context(), req.Force, func(done, total int) {
		if now := time.Now(); now.Sub(last) >= 100*time.Millisecond || done == total {
			last = now
			send(api.MemoryIndexEvent{Type: "progress", Done: done, Total: total})
		}
	})
	if err != nil {
		send(api.MemoryIndexEvent{Type: "error", Error: &api.Error{Code: api.CodeInternal, Message: err.Error()}})
		return
	}
	send(api.MemoryIndexEvent{Type: "done", Result: &res})
}

// find answers not_found for an agent that is not configured and
// memory_off for one without memory search; ok is false when it answered.
func (m memoryAPI) find(w http.ResponseWriter, agent string) (MemoryIndex, bool) {
	ix, id, err := m.lookup(agent)
	if err != nil {
		api.WriteError(w, &api.Error{Code: api.CodeNotFound, Message: err.Error()})
		return nil, false
	}
	if ix == nil {
		api.WriteError(w, &api.Error{Code: api.CodeMemoryOff, Message: fmt.Sprintf("memory search is off for agent %s (agents.defaults.memorySearch.enabled)", id)})
		return nil, false
	}
	return ix, true
}
