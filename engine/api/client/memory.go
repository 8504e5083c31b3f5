package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/openclaw-edge/edge/engine/api"
)

func agentQuery(agent string) url.Values {
	if agent == "" {
		return nil
	}
	return url.Values{"agent": {agent}}
}

// MemoryStatus describes an agent's memory index ("" = the default agent).
func (c *Client) MemoryStatus(ctx context.Context, agent string) (*api.MemoryStatus, error) {
	var st api.MemoryStatus
	if err := c.callJSON(ctx, http.MethodGet, api.PathMemoryStatus, agentQuery(agent), nil, "", &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// MemorySearch runs a search as the memory_search tool does.
func (c *Client) MemorySearch(ctx context.Context, req api.MemorySearchRequest) (*api.MemorySearchResponse, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var r api.MemorySearchResponse
	if err := c.callJSON(ctx, http.MethodPost, api.PathMemorySearch, nil, bytes.NewReader(body), "application/json", &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// MemoryIndex syncs (Force: rebuilds) an agent's index, calling progress
// with the chunks embedded so far and the total.
func (c *Client) MemoryIndex(ctx context.Context, req api.MemoryIndexRequest, progress func(done, total int)) (*api.MemoryIndexResult, error) {
	resp, err := c.postStream(ctx, api.PathMemoryIndex, req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	sr := &sseReader{r: bufio.NewReaderSize(resp.Body, 16<<10)}
	for {
		name, data, err := sr.next()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, io.EOF) {
				return nil, ErrStreamEnded
			}
			return nil, err
		}
		var ev api.MemoryIndexEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return nil, fmt.Errorf("gateway sent a malformed %q event: %w", name, err)
		}
		switch ev.Type {
		case "progress":
			if progress != nil {
				progress(ev.Done, ev.Total)
			}
		case "done":
			if ev.Result == nil {
				return nil, errors.New("gateway sent a done event without the result")
			}
			return ev.Result, nil
		case "error":
			if ev.Error == nil {
				return nil, errors.New("indexing failed")
			}
			return nil, ev.Error
		}
	}
}
