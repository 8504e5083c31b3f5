package client

import (
	"context"
	"net/http"

	"github.com/openclaw-edge/edge/engine/api"
)

// Doctor runs the gateway's self-checks on the gateway's machine. An older
// gateway without them answers an *api.Error with code not_found.
func (c *Client) Doctor(ctx context.Context) (*api.DoctorReport, error) {
	var r api.DoctorReport
	if err := c.callJSON(ctx, http.MethodGet, api.PathDoctor, nil, nil, "", &r); err != nil {
		return nil, err
	}
	return &r, nil
}
