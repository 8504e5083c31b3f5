package main

import (
	"context"
	"fmt"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/config"
	"github.com/openclaw-edge/edge/engine/localapi"
	"github.com/openclaw-edge/edge/engine/memory"
)

// memoryIndex is an agent's index as the control API sees it
// (localapi.MemoryIndex): engine/memory's types become the wire's here,
// where both meet, so the index never imports engine/api.
type memoryIndex struct{ ix *memory.Index }

func (m memoryIndex) Status() api.MemoryStatus { return api.MemoryStatus(m.ix.Status()) }

func (m memoryIndex) Search(ctx context.Context, query string, maxResults int) (api.MemorySearchResponse, error) {
	resp, err := m.ix.Search(ctx, query, memory.Options{MaxResults: maxResults})
	if err != nil {
		return api.MemorySearchResponse{}, err
	}
	out := api.MemorySearchResponse{Results: []api.MemoryResult{}, Mode: resp.Mode, Provider: resp.Provider, Model: resp.Model, Fallback: resp.Fallback, Warning: resp.Warning}
	for _, x := range resp.Results {
		out.Results = append(out.Results, api.MemoryResult(x))
	}
	return out, nil
}

func (m memoryIndex) Sync(ctx context.Context, force bool, progress func(done, total int)) (api.MemoryIndexResult, error) {
	res, err := m.ix.Sync(ctx, force, func(p memory.Progress) { progress(p.ChunksDone, p.Chunks) })
	if err != nil {
		return api.MemoryIndexResult{}, err
	}
	return api.MemoryIndexResult{
		Files: res.Files, Chunks: res.Chunks, Added: res.Added, Removed: res.Removed, Embedded: res.Embedded,
		Cached: res.Cached, Provider: res.Provider, Model: res.Model, Fallback: res.Fallback, Rebuilt: res.Rebuilt,
		DurationMs: res.Duration.Milliseconds(), Warnings: res.Warnings,
	}, nil
}

// memoryLookup is the control API's way to an agent's index ("": the
// default agent): an agent that is not configured is an error, one without
// memory search a nil index.
func memoryLookup(cfg *config.Config, mems *memories) localapi.MemoryLookup {
	return func(agent string) (localapi.MemoryIndex, string, error) {
		if agent == "" {
			agent = cfg.DefaultAgentID()
		}
		if _, ok := cfg.Agent(agent); !ok {
			return nil, agent, fmt.Errorf("no agent %q is configured", agent)
		}
		ix := mems.index(agent)
		if ix == nil { // a nil *Index in the interface would not be nil
			return nil, agent, nil
		}
		return memoryIndex{ix}, agent, nil
	}
}
