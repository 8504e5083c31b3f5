package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/httpapi"
)

// apiError is Google's error object: {"error": {"code", "message",
// "status", "details": [...]}}.
type apiError struct {
	Code    int               `json:"code"`
	Message string            `json:"message"`
	Status  string            `json:"status"`
	Details []json.RawMessage `json:"details"`
}

// detail holds the fields of the google.rpc detail types we look at:
// ErrorInfo (reason), QuotaFailure (violations) and RetryInfo.
type detail struct {
	Reason     string `json:"reason"`
	Violations []struct {
		QuotaMetric string `json:"quotaMetric"`
		QuotaID     string `json:"quotaId"`
	} `json:"violations"`
}

// parseError extracts the error object from a body: an object, or (for
// streamGenerateContent without alt=sse) an array holding one.
func parseError(body []byte) (apiError, bool) {
	t := bytes.TrimSpace(body)
	if len(t) > 0 && t[0] == '[' {
		var list []json.RawMessage
		if json.Unmarshal(t, &list) != nil || len(list) == 0 {
			return apiError{}, false
		}
		t = list[0]
	}
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(t, &env) != nil || len(env.Error) == 0 || string(env.Error) == "null" {
		return apiError{}, false
	}
	var e apiError
	if json.Unmarshal(env.Error, &e) == nil {
		return e, true
	}
	var s string
	if json.Unmarshal(env.Error, &s) == nil {
		return apiError{Message: s}, true
	}
	return apiError{}, false
}

// classify maps an error answer to an error kind and the message to show.
// status is 0 for an error that arrived inside a 200 stream; images says
// whether the request held any (a payload over the limit is then theirs).
func classify(status int, body []byte, images bool) (engine.ErrorKind, string) {
	e, ok := parseError(body)
	msg := e.Message
	if !ok || msg == "" {
		msg = string(body)
	}
	if status == 0 && e.Code >= 400 && e.Code <= 599 {
		status = e.Code
	}
	if strings.TrimSpace(msg) == "" {
		msg = http.StatusText(status)
	}
	var extra []string
	for _, raw := range e.Details {
		var d detail
		if json.Unmarshal(raw, &d) != nil {
			continue
		}
		extra = append(extra, d.Reason)
		for _, v := range d.Violations {
			extra = append(extra, v.QuotaID, v.QuotaMetric)
		}
	}
	text := strings.ToLower(msg + " " + e.Status + " " + strings.Join(extra, " "))
	return kindFor(status, e.Status, text, images), msg
}

// kindFor is the rule table of docs/design.md §7 for Gemini's errors, on the
// HTTP status, the gRPC status name and the lowered text of the error
// (message, status, detail reasons and quota ids).
func kindFor(status int, grpc, text string, images bool) engine.ErrorKind {
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(text, w) {
				return true
			}
		}
		return false
	}
	exhausted := status == 429 || grpc == "RESOURCE_EXHAUSTED"
	switch {
	case status == 401 || status == 403 || grpc == "UNAUTHENTICATED" || grpc == "PERMISSION_DENIED" ||
		has("api key not valid", "api_key_invalid", "api key expired", "api_key_expired"):
		return engine.ErrAuth
	case status == 402 ||
		has("enable billing", "billing account", "billing to your project", "prepayment", "credits are depleted",
			"credit balance", "free tier is not available") ||
		exhausted && has("perday", "per day", "limit: 0"):
		// Every 429 text says "check your plan and billing details": only
		// a daily quota, a model without free tier (limit 0) or prepaid
		// credit gone is billing; per-minute limits are rate limits.
		return engine.ErrBilling
	case exhausted:
		return engine.ErrRateLimit
	case has("input token count", "exceeds the maximum number of tokens", "context length",
		"context window", "too many tokens", "prompt is too long"):
		return engine.ErrContextOverflow
	case status == 413 || has("payload size exceeds", "request payload size"):
		if images {
			return engine.ErrImageTooLarge
		}
		return engine.ErrContextOverflow
	case has("image") && has("too large", "too big", "exceeds"):
		return engine.ErrImageTooLarge
	case (status == 404 || grpc == "NOT_FOUND") && has("model"):
		return engine.ErrNoModel
	case status == 404:
		return engine.ErrUnreachable // no Gemini API at this base URL
	case status >= 400 && status < 500:
		return engine.ErrBadRequest
	case status == 0 && grpc == "INVALID_ARGUMENT":
		return engine.ErrBadRequest
	}
	return engine.ErrUnreachable // 5xx (INTERNAL, UNAVAILABLE, overloaded) and unknown stream errors
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
