package localapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine/api"
)

// fakeIndex is one agent's memory index; it records what it was asked.
type fakeIndex struct {
	query   string
	max     int
	force   bool
	fail    error
	results []api.MemoryResult
}

func (f *fakeIndex) Status() api.MemoryStatus { return api.MemoryStatus{AgentID: "main", Files: 2} }

func (f *fakeIndex) Search(_ context.Context, q string, max int) (api.MemorySearchResponse, error) {
	f.query, f.max = q, max
	return api.MemorySearchResponse{Results: f.results, Mode: "bm25"}, f.fail
}

func (f *fakeIndex) Sync(_ context.Context, force bool, progress func(done, total int)) (api.MemoryIndexResult, error) {
	f.force = force
	for i := range 3 {
		progress(i+1, 3)
	}
	return api.MemoryIndexResult{Files: 2, Chunks: 3}, f.fail
}

// fakeLookup knows "main" (the default, with ix) and "quiet" (memory
// search off).
func fakeLookup(ix *fakeIndex) MemoryLookup {
	return func(agent string) (MemoryIndex, string, error) {
		switch agent {
		case "", "main":
			return ix, "main", nil
		case "quiet":
			return nil, "quiet", nil
		}
		return nil, agent, fmt.Errorf("no agent %q is configured", agent)
	}
}

func TestMemoryRoutes(t *testing.T) {
	ix := &fakeIndex{}
	h := New(nil, nil, Config{Memory: fakeLookup(ix)})

	w := serve(h, httptest.NewRequest("GET", api.PathMemoryStatus+"?agent=main", nil))
	var st api.MemoryStatus
	if err := json.Unmarshal(w.Body.Bytes(), &st); w.Code != 200 || err != nil || st.AgentID != "main" || st.Files != 2 {
		t.Errorf("status: %d %s", w.Code, w.Body)
	}

	// No results is an empty list, not null.
	w = serve(h, httptest.NewRequest("POST", api.PathMemorySearch, strings.NewReader(`{"query":"tea","maxResults":5}`)))
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"results":[]`) || ix.query != "tea" || ix.max != 5 {
		t.Errorf("search: %d %s (asked %q, %d)", w.Code, w.Body, ix.query, ix.max)
	}

	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code, msg                string
	}{
		{"unknown agent", "GET", api.PathMemoryStatus + "?agent=ghost", "", 404, api.CodeNotFound, `no agent "ghost" is configured`},
		{"memory off", "POST", api.PathMemorySearch, `{"agent":"quiet","query":"x"}`, 409, api.CodeMemoryOff, "memory search is off for agent quiet (agents.defaults.memorySearch.enabled)"},
		{"memory off, index", "POST", api.PathMemoryIndex, `{"agent":"quiet"}`, 409, api.CodeMemoryOff, "memory search is off for agent quiet"},
		{"too many results", "POST", api.PathMemorySearch, `{"query":"x","maxResults":51}`, 400, api.CodeBadRequest, "maxResults: want 1 to 50"},
		{"negative results", "POST", api.PathMemorySearch, `{"query":"x","maxResults":-1}`, 400, api.CodeBadRequest, "maxResults: want 1 to 50"},
		{"unknown field", "POST", api.PathMemorySearch, `{"query":"x","limit":3}`, 400, api.CodeBadRequest, `unknown field "limit"`},
		{"not JSON", "POST", api.PathMemoryIndex, `force`, 400, api.CodeBadRequest, "invalid JSON request body"},
	} {
		code, ae := do(t, h, tc.method, tc.path, tc.body)
		if code != tc.status || ae.Code != tc.code || !strings.Contains(ae.Message, tc.msg) {
			t.Errorf("%s: %d %+v; want %d %s %q", tc.name, code, ae, tc.status, tc.code, tc.msg)
		}
	}

	ix.fail = errors.New("index unreadable")
	if code, ae := do(t, h, "POST", api.PathMemorySearch, `{"query":"x"}`); code != 500 || ae.Code != api.CodeInternal || ae.Message != "index unreadable" {
		t.Errorf("a failed search: %d %+v", code, ae)
	}
}

// The index stream: progress (the last always sent), then done or error;
// an empty body is the zero request (reindex, not forced).
func TestMemoryIndexStream(t *testing.T) {
	ix := &fakeIndex{force: true}
	h := New(nil, nil, Config{Memory: fakeLookup(ix)})
	w := serve(h, httptest.NewRequest("POST", api.PathMemoryIndex, nil))
	if w.Code != 200 || w.Header().Get("Content-Type") != "text/event-stream" || ix.force {
		t.Fatalf("index: %d %v (force %v)", w.Code, w.Header(), ix.force)
	}
	evs := events(t, w.Body)
	last := evs[len(evs)-1]
	var done api.MemoryIndexEvent
	if err := json.Unmarshal([]byte(last[1]), &done); err != nil || last[0] != "done" || done.Result == nil || done.Result.Chunks != 3 {
		t.Fatalf("last event %v", last)
	}
	var p api.MemoryIndexEvent
	if prev := evs[len(evs)-2]; prev[0] != "progress" || json.Unmarshal([]byte(prev[1]), &p) != nil || p.Done != 3 || p.Total != 3 {
		t.Errorf("last progress %v", prev)
	}

	ix.fail = errors.New("embedder gone")
	w = serve(h, httptest.NewRequest("POST", api.PathMemoryIndex, strings.NewReader(`{"force":true}`)))
	evs = events(t, w.Body)
	var e api.MemoryIndexEvent
	if last := evs[len(evs)-1]; last[0] != "error" || json.Unmarshal([]byte(last[1]), &e) != nil || e.Error == nil || e.Error.Code != api.CodeInternal || e.Error.Message != "embedder gone" || !ix.force {
		t.Errorf("failed sync: %v", evs)
	}
}

var _ http.Handler = New(nil, nil, Config{})
