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

// Approvals lists the exec approvals waiting for the owner, oldest first.
func (c *Client) Approvals(ctx context.Context) ([]api.Approval, error) {
	var list []api.Approval
	if err := c.callJSON(ctx, http.MethodGet, api.PathApprovals, nil, nil, "", &list); err != nil {
		return nil, err
	}
	return list, nil
}

// Decide answers the pending approval id with decision (api.DecisionAllowOnce,
// …). An unknown, expired or already answered id is an *api.Error with
// Code api.CodeNotFound.
func (c *Client) Decide(ctx context.Context, id, decision string) (*api.ApprovalResult, error) {
	var res api.ApprovalResult
	if err := c.sendJSON(ctx, http.MethodPost, api.PathApprovals+"/"+url.PathEscape(id), nil, api.ApprovalDecision{Decision: decision}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Allowlist returns the exec allowlist of agentID ("" = the default agent).
func (c *Client) Allowlist(ctx context.Context, agentID string) ([]api.AllowEntry, error) {
	var q url.Values
	if agentID != "" {
		q = url.Values{"agent": {agentID}}
	}
	var list []api.AllowEntry
	if err := c.callJSON(ctx, http.MethodGet, api.PathApprovalAllowlist, q, nil, "", &list); err != nil {
		return nil, err
	}
	return list, nil
}

// AllowlistAdd adds e to its agent's allowlist and returns the entry as
// stored (with argv[0] resolved on the gateway when e.Path was empty).
func (c *Client) AllowlistAdd(ctx context.Context, e api.AllowEntry) (*api.AllowEntry, error) {
	var out api.AllowEntry
	if err := c.sendJSON(ctx, http.MethodPost, api.PathApprovalAllowlist, nil, e, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AllowlistRemove removes the entry matching e exactly and returns it.
func (c *Client) AllowlistRemove(ctx context.Context, e api.AllowEntry) (*api.AllowEntry, error) {
	var out api.AllowRemoved
	if err := c.sendJSON(ctx, http.MethodDelete, api.PathApprovalAllowlist, nil, e, &out); err != nil {
		return nil, err
	}
	return &out.Removed, nil
}

// sendJSON sends body as a JSON request and decodes the JSON reply into v.
func (c *Client) sendJSON(ctx context.Context, method, path string, query url.Values, body, v any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode request to %s: %w", path, err)
	}
	return c.callJSON(ctx, method, path, query, bytes.NewReader(data), "application/json", v)
}
