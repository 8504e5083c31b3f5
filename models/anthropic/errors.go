package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/httpapi"
)

// errorBody is an error answer or an error stream event:
// {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}.
type errorBody struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// classify maps an HTTP error answer to an error kind and the message to
// show. status is 0 for an error event inside a 200 stream.
func classify(status int, body []byte) (engine.ErrorKind, string) {
	var e errorBody
	msg := string(body)
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
	}
	if strings.TrimSpace(msg) == "" {
		msg = http.StatusText(status)
	}
	typ := e.Error.Type
	if status == 0 {
		status = typeStatus[typ]
	}
	return kindFor(status, strings.ToLower(msg+" "+typ)), msg
}

// typeStatus gives the status of each documented error type, to classify
// error events that arrive mid-stream.
var typeStatus = map[string]int{
	"invalid_request_error": 400,
	"authentication_error":  401,
	"billing_error":         402,
	"permission_error":      403,
	"not_found_error":       404,
	"request_too_large":     413,
	"rate_limit_error":      429,
	"api_error":             500,
	"overloaded_error":      529,
}

// kindFor is the rule table of docs/design.md §7, on the status and the lowered
// text of the error (message and type).
func kindFor(status int, text string) engine.ErrorKind {
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(text, w) {
				return true
			}
		}
		return false
	}
	clientErr := status == 0 || status >= 400 && status < 500
	switch {
	case status == 401 || status == 403:
		return engine.ErrAuth
	case status == 402 || clientErr && has("insufficient_quota", "billing", "credit balance", "credit"):
		return engine.ErrBilling
	case status == 429:
		return engine.ErrRateLimit
	case clientErr && has("prompt is too long", "context length", "context window", "maximum context",
		"too many tokens", "context_length", "input is too long"):
		return engine.ErrContextOverflow
	case (status == 400 || status == 413 || status == 0) && has("image") &&
		has("too large", "too big", "exceeds", "maximum", "size"):
		return engine.ErrImageTooLarge
	case status >= 400 && status < 500:
		return engine.ErrBadRequest
	}
	return engine.ErrUnreachable // 5xx, 529 overloaded, unknown stream errors
}

// transportError classifies a failed request (no HTTP answer).
func (p *Provider) transportError(ctx context.Context, req *engine.ChatRequest, err error) error {
	kind, msg := httpapi.NetKind(ctx, err)
	return p.fail(req, kind, 0, msg, err)
}

// readError classifies a failure while reading the stream body.
func (p *Provider) readError(ctx context.Context, req *engine.ChatRequest, err error) error {
	if ctx.Err() == nil && (errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)) {
		return p.fail(req, engine.ErrUnreachable, 0, "stream ended early", err)
	}
	kind, msg := httpapi.NetKind(ctx, err)
	return p.fail(req, kind, 0, msg, err)
}
