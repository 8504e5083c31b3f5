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

// Models lists the gateway's local models: installed ones and the
// catalog's.
func (c *Client) Models(ctx context.Context) ([]api.ModelInfo, error) {
	var list []api.ModelInfo
	if err := c.callJSON(ctx, http.MethodGet, api.PathModels, nil, nil, "", &list); err != nil {
		return nil, err
	}
	return list, nil
}

// ModelInfo describes one model, with the details of its file's header
// when it is installed.
func (c *Client) ModelInfo(ctx context.Context, name string) (*api.ModelInfo, error) {
	var info api.ModelInfo
	if err := c.callJSON(ctx, http.MethodGet, api.PathModelInfo, url.Values{"name": {name}}, nil, "", &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// ImportModel registers a GGUF file on the gateway's machine. req.Path must
// be absolute: the gateway, not the caller, opens it.
func (c *Client) ImportModel(ctx context.Context, req api.ImportModelRequest) (*api.ModelInfo, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode import request: %w", err)
	}
	var info api.ModelInfo
	if err := c.callJSON(ctx, http.MethodPost, api.PathModelImport, nil, bytes.NewReader(body), "application/json", &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// RemoveModel unregisters a model (the gateway deletes its file when it
// lies in the models directory) and returns it as it was.
func (c *Client) RemoveModel(ctx context.Context, name string) (*api.ModelInfo, error) {
	var info api.ModelInfo
	if err := c.callJSON(ctx, http.MethodPost, api.PathModelRemove, url.Values{"name": {name}}, nil, "", &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// PullModel has the gateway download a model and follows its progress:
// progress (if not nil) gets the bytes done and the total (-1 when
// unknown) as they arrive. It returns the installed model, the gateway's
// *api.Error, or ErrStreamEnded. Cancelling ctx stops the download; the
// gateway keeps the partial file and a later pull resumes it.
func (c *Client) PullModel(ctx context.Context, req api.PullRequest, progress func(done, total int64)) (*api.ModelInfo, error) {
	resp, err := c.postStream(ctx, api.PathModelPull, req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	info, err := readPullStream(resp.Body, progress)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return info, err
}

// readPullStream reads PullEvents until done or error. Events of unknown
// types are skipped, so a newer gateway can add some.
func readPullStream(r io.Reader, progress func(done, total int64)) (*api.ModelInfo, error) {
	sr := &sseReader{r: bufio.NewReaderSize(r, 16<<10)}
	for {
		name, data, err := sr.next()
		if err == io.EOF {
			return nil, ErrStreamEnded
		}
		if err != nil {
			return nil, err
		}
		var ev api.PullEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return nil, fmt.Errorf("gateway sent a malformed %q event: %w", name, err)
		}
		if ev.Type == "" {
			ev.Type = api.PullEventType(name)
		}
		switch ev.Type {
		case api.PullProgress:
			if progress != nil {
				progress(ev.Done, ev.Total)
			}
		case api.PullDone:
			if ev.Model == nil {
				return nil, errors.New("gateway sent a done event without the model")
			}
			return ev.Model, nil
		case api.PullError:
			if ev.Error == nil || ev.Error.Message == "" {
				return nil, &api.Error{Code: api.CodeInternal, Message: "the gateway reported an error without details"}
			}
			return nil, ev.Error
		}
	}
}
