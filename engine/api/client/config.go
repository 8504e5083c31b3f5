package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/openclaw-edge/edge/engine/api"
)

// ConfigGet returns the value of key ("": the whole config) in the
// gateway's config file, secrets redacted.
func (c *Client) ConfigGet(ctx context.Context, key string) (*api.ConfigValue, error) {
	var v api.ConfigValue
	if err := c.callJSON(ctx, http.MethodGet, api.PathConfig, url.Values{"key": {key}}, nil, "", &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// ConfigSet sets a key in the gateway's config file. The gateway checks
// the whole result first: an invalid one is an *api.Error with code
// api.CodeInvalidConfig and nothing is written.
func (c *Client) ConfigSet(ctx context.Context, req api.ConfigSetRequest) (*api.ConfigSetResult, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode config set request: %w", err)
	}
	var res api.ConfigSetResult
	if err := c.callJSON(ctx, http.MethodPost, api.PathConfigSet, nil, bytes.NewReader(body), "application/json", &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// ConfigUnset removes a key from the gateway's config file, so its default
// applies. A key the file does not set is an *api.Error with code
// api.CodeNotFound; a result that would not be valid one with
// api.CodeInvalidConfig, and nothing is written.
func (c *Client) ConfigUnset(ctx context.Context, req api.ConfigUnsetRequest) (*api.ConfigSetResult, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode config unset request: %w", err)
	}
	var res api.ConfigSetResult
	if err := c.callJSON(ctx, http.MethodPost, api.PathConfigUnset, nil, bytes.NewReader(body), "application/json", &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// ConfigValidate checks the gateway's own config file.
func (c *Client) ConfigValidate(ctx context.Context) (*api.ConfigValidation, error) {
	var v api.ConfigValidation
	if err := c.callJSON(ctx, http.MethodPost, api.PathConfigValidate, nil, nil, "", &v); err != nil {
		return nil, err
	}
	return &v, nil
}
