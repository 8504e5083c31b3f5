package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/ollama/ollama/api"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/httpapi"
)

// classify turns an error from api.Client into a *engine.ModelError.
// api.Client reports an HTTP error answer as api.StatusError (or
// api.AuthorizationError for 401), an {"error": …} line inside a 200 stream
// as a plain error holding its text, and a failed request as the
// http.Client's error.
func (p *Provider) classify(ctx context.Context, model string, err error) *engine.ModelError {
	if ctx.Err() != nil {
		kind, msg := httpapi.NetKind(ctx, err)
		return p.fail(model, kind, 0, msg, err)
	}
	var se api.StatusError
	if errors.As(err, &se) {
		kind, msg := p.kindFor(se.StatusCode, se.ErrorMessage, model)
		return p.fail(model, kind, se.StatusCode, msg, err)
	}
	var ae api.AuthorizationError
	if errors.As(err, &ae) {
		msg := "Ollama refused the request: unauthorized"
		if ae.SigninURL != "" {
			msg += " (sign in at " + ae.SigninURL + ")"
		}
		return p.fail(model, engine.ErrAuth, ae.StatusCode, msg, err)
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syn) || errors.As(err, &typ) {
		return p.fail(model, engine.ErrUnreachable, 0, "malformed stream chunk: "+err.Error(), err)
	}
	var ne net.Error
	if errors.As(err, &ne) {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return p.fail(model, engine.ErrUnreachable, 0,
				fmt.Sprintf("Ollama is not running at %s (start it with `ollama serve`)", p.base), err)
		}
		kind, msg := httpapi.NetKind(ctx, err)
		return p.fail(model, kind, 0, msg, err)
	}
	// An error line in a 200 stream: only its text is left.
	kind, msg := p.kindFor(0, err.Error(), model)
	return p.fail(model, kind, 0, msg, err)
}

// kindFor maps an Ollama error (status 0: inside a 200 stream) to a kind
// and the message to show, per docs/design.md §7.
func (p *Provider) kindFor(status int, msg, model string) (engine.ErrorKind, string) {
	msg = strings.TrimSpace(msg)
	if msg == "" {
		msg = http.StatusText(status)
	}
	text := strings.ToLower(msg)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(text, w) {
				return true
			}
		}
		return false
	}
	switch {
	case status == 401 || status == 403 || status == 0 && has("unauthorized", "forbidden"):
		return engine.ErrAuth, msg
	case status == 402 || has("subscription", "billing", "credit"):
		return engine.ErrBilling, msg
	case status == 429 || has("rate limit", "too many requests"):
		return engine.ErrRateLimit, msg
	case status == 404 && has("model") || (status == 0 || status == 400) && has("not found, try pulling"):
		return engine.ErrNoModel, fmt.Sprintf("model %q is not in Ollama at %s: run `ollama pull %s`", model, p.base, model)
	case status == 404:
		return engine.ErrUnreachable, fmt.Sprintf("no Ollama API at %s (%s)", p.base, msg)
	case has("context length", "context window", "context size", "exceeds the context", "context limit"):
		return engine.ErrContextOverflow, msg
	case status == 499:
		return engine.ErrAborted, msg
	case status >= 400 && status < 500:
		return engine.ErrBadRequest, msg
	}
	return engine.ErrUnreachable, msg // 5xx, out of memory, runner crashed, unknown
}
