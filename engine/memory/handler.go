package memory

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
)

// Lookup finds an agent's index ("" = the default agent); nil with a nil
// error means memory search is off for that agent.
type Lookup func(agent string) (*Index, string, error)

// Handler serves the memory endpoints of the control API.
func Handler(lookup Lookup) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.PathMemoryStatus, func(w http.ResponseWriter, r *http.Request) {
		ix, ok := find(w, lookup, r.URL.Query().Get("agent"))
		if !ok {
			return
		}
		api.WriteJSON(w, http.StatusOK, statusWire(ix.Status()))
	})
	mux.HandleFunc("POST "+api.PathMemorySearch, func(w http.ResponseWriter, r *http.Request) {
		var req api.MemorySearchRequest
		if err := decode(r, &req); err != nil {
			api.WriteError(w, &api.Error{Code: api.CodeBadRequest, Message: err.Error()})
			return
		}
		if req.MaxResults < 0 || req.MaxResults > 50 {
			api.WriteError(w, &api.Error{Code: api.CodeBadRequest, Message: "maxResults: want 1 to 50"})
			return
		}
		ix, ok := find(w, lookup, req.Agent)
		if !ok {
			return
		}
		resp, err := ix.Search(r.Context(), req.Query, Options{MaxResults: req.MaxResults})
		if err != nil {
			api.WriteError(w, &api.Error{Code: api.CodeInternal, Message: err.Error()})
			return
		}
		out := api.MemorySearchResponse{Results: []api.MemoryResult{}, Mode: resp.Mode, Provider: resp.Provider, Model: resp.Model, Fallback: resp.Fallback, Warning: resp.Warning}
		for _, x := range resp.Results {
			out.Results = append(out.Results, api.MemoryResult(x))
		}
		api.WriteJSON(w, http.StatusOK, out)
	})
	mux.HandleFunc("POST "+api.PathMemoryIndex, func(w http.ResponseWriter, r *http.Request) {
		var req api.MemoryIndexRequest
		if err := decode(r, &req); err != nil {
			api.WriteError(w, &api.Error{Code: api.CodeBadRequest, Message: err.Error()})
			return
		}
		ix, ok := find(w, lookup, req.Agent)
		if !ok {
			return
		}
		flusher, _ := w.(http.Flusher)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		send := func(ev api.MemoryIndexEvent) {
			b, _ := json.Marshal(ev)
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, b); err == nil && flusher != nil {
				flusher.Flush()
			}
		}
		var last time.Time
		res, err := ix.Sync(r.Context(), req.Force, func(p Progress) {
			if now := time.Now(); now.Sub(last) >= 100*time.Millisecond || p.ChunksDone == p.Chunks {
				last = now
				send(api.MemoryIndexEvent{Type: "progress", Done: p.ChunksDone, Total: p.Chunks})
			}
		})
		if err != nil {
			send(api.MemoryIndexEvent{Type: "error", Error: &api.Error{Code: api.CodeInternal, Message: err.Error()}})
			return
		}
		send(api.MemoryIndexEvent{Type: "done", Result: &api.MemoryIndexResult{
			Files: res.Files, Chunks: res.Chunks, Added: res.Added, Removed: res.Removed, Embedded: res.Embedded,
			Cached: res.Cached, Provider: res.Provider, Model: res.Model, Fallback: res.Fallback, Rebuilt: res.Rebuilt,
			DurationMs: res.Duration.Milliseconds(), Warnings: res.Warnings,
		}})
	})
	return mux
}

func find(w http.ResponseWriter, lookup Lookup, agent string) (*Index, bool) {
	ix, id, err := lookup(agent)
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

func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("bad request body: %w", err)
	}
	return nil
}

func statusWire(s Status) api.MemoryStatus { return api.MemoryStatus(s) }
