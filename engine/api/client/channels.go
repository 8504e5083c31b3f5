package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/openclaw-edge/edge/engine/api"
)

// Channels lists the configured channel accounts and their links.
func (c *Client) Channels(ctx context.Context) ([]api.ChannelStatus, error) {
	var list []api.ChannelStatus
	if err := c.callJSON(ctx, http.MethodGet, api.PathChannels, nil, nil, "", &list); err != nil {
		return nil, err
	}
	return list, nil
}

// Logout unlinks a channel account.
func (c *Client) Logout(ctx context.Context, req api.LoginRequest) (*api.ChannelStatus, error) {
	var st api.ChannelStatus
	if err := c.sendJSON(ctx, http.MethodPost, api.PathChannelLogout, nil, req, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Login links a channel account, calling on for each step (QR codes to
// render, a pairing code to type); it returns the last (done) event.
func (c *Client) Login(ctx context.Context, req api.LoginRequest, on func(api.LoginEvent)) (*api.LoginEvent, error) {
	resp, err := c.postStream(ctx, api.PathChannelLogin, req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	sr := &sseReader{r: bufio.NewReaderSize(resp.Body, 16<<10)}
	for {
		_, data, err := sr.next()
		if err == io.EOF {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, ErrStreamEnded
		}
		if err != nil {
			return nil, err
		}
		var ev api.LoginEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return nil, fmt.Errorf("gateway sent a malformed login event: %w", err)
		}
		switch ev.Type {
		case "done":
			return &ev, nil
		case "error":
			if ev.Error == nil {
				ev.Error = &api.Error{Code: api.CodeInternal, Message: "login failed"}
			}
			return nil, ev.Error
		}
		if on != nil {
			on(ev)
		}
	}
}

// Pairing lists pending pairing requests of channel ("" = all).
func (c *Client) Pairing(ctx context.Context, channel string) ([]api.PairingRequest, error) {
	var q url.Values
	if channel != "" {
		q = url.Values{"channel": {channel}}
	}
	var list []api.PairingRequest
	if err := c.callJSON(ctx, http.MethodGet, api.PathPairing, q, nil, "", &list); err != nil {
		return nil, err
	}
	return list, nil
}

// PairingDecide approves (approve=true) or denies a pairing code.
func (c *Client) PairingDecide(ctx context.Context, channel, code string, approve bool) (*api.PairingRequest, error) {
	path := api.PathPairingDeny
	if approve {
		path = api.PathPairingApprove
	}
	var r api.PairingRequest
	if err := c.sendJSON(ctx, http.MethodPost, path, nil, api.PairingDecision{Channel: channel, Code: code}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// SendOutbound queues a message to a channel without a turn.
func (c *Client) SendOutbound(ctx context.Context, req api.OutboundRequest) (*api.OutboundResult, error) {
	var r api.OutboundResult
	if err := c.sendJSON(ctx, http.MethodPost, api.PathMessageSend, nil, req, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
