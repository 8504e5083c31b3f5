package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/httpapi"
)

// apiError is the "error" object of an error body or a mid-stream error
// chunk: {"error": {"message", "type", "code", "param"}}. Some servers send
// "error" as a plain string, and code as a number (OpenRouter).
type apiError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// parseError extracts the error object from an error body, if it has one.
func parseError(body []byte) (apiError, bool) {
	var env struct {
		Error json.RawMessage `json:"error"`
		// llama-server's stream errors are the object itself.
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
		Type    string          `json:"type"`
	}
	if json.Unmarshal(body, &env) != nil {
		return apiError{}, false
	}
	if len(env.Error) > 0 && string(env.Error) != "null" {
		var e apiError
		if json.Unmarshal(env.Error, &e) == nil {
			return e, true
		}
		var s string
		if json.Unmarshal(env.Error, &s) == nil {
			return apiError{Message: s}, true
		}
	}
	if env.Message != "" {
		return apiError{Message: env.Message, Type: env.Type, Code: env.Code}, true
	}
	return apiError{}, false
}

// code returns e.Code as text, and as a number when it is one.
func (e apiError) code() (string, int) {
	var s string
	if json.Unmarshal(e.Code, &s) == nil {
		n, _ := strconv.Atoi(s)
		return s, n
	}
	var n int
	if json.Unmarshal(e.Code, &n) == nil {
		return strconv.Itoa(n), n
	}
	return "", 0
}

// classify maps an HTTP error answer to an error kind and the message to
// show. status is 0 for an error that arrived inside a 200 stream.
func classify(status int, body []byte) (engine.ErrorKind, string) {
	e, ok := parseError(body)
	msg := e.Message
	if !ok || msg == "" {
		msg = string(body)
	}
	code, num := e.code()
	if status == 0 && num >= 400 && num <= 599 {
		status = num // OpenRouter puts the upstream status in code
	}
	if strings.TrimSpace(msg) == "" {
		msg = http.StatusText(status)
	}
	text := strings.ToLower(msg + " " + e.Type + " " + code)
	return kindFor(status, text), msg
}

// kindFor is the rule table of docs/design.md §7, on the status and the lowered
// text of the error (message, type and code).
func kindFor(status int, text string) engine.ErrorKind {
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(text, w) {
				return true
			}
		}
		return false
	}
	switch {
	case status == 401 || status == 403 ||
		status == 0 && has("invalid_api_key", "authentication", "unauthorized", "permission"):
		return engine.ErrAuth
	case status == 402 ||
		(status == 0 || status >= 400 && status < 500) && has("insufficient_quota", "billing", "credit"):
		return engine.ErrBilling
	case status == 429 || status == 0 && has("rate_limit", "rate limit", "too many requests"):
		return engine.ErrRateLimit
	case has("context length", "context_length", "maximum context", "context window",
		"context size", "exceed_context", "prompt is too long", "too many tokens",
		"input is too long", "prompt too long"):
		return engine.ErrContextOverflow
	case (status == 413 || status == 400 || status == 0) && has("image") &&
		has("too large", "too big", "exceeds", "maximum", "size"):
		return engine.ErrImageTooLarge
	case status >= 400 && status < 500:
		return engine.ErrBadRequest
	case status == 0 && has("invalid_request"):
		return engine.ErrBadRequest
	}
	return engine.ErrUnreachable // 5xx, 529 overloaded, and unknown stream errors
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
