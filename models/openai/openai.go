// Package openai is a model provider for the OpenAI chat completions API and
// the servers that speak it: OpenAI itself, llama-server, vLLM, OpenRouter,
// LM Studio and Ollama's /v1. It is a thin standard-library HTTP client that
// streams (SSE) and turns chunks into engine events (docs/design.md §3.6, §7, §12).
//
// Choices where the spec is silent:
//   - Usage: Input is prompt_tokens minus the cached ones and CacheRead the
//     cached ones, so Input+CacheRead+CacheWrite is the prompt size for every
//     provider alike (Anthropic reports them apart).
//   - Thinking arrives as delta.reasoning_content (llama-server, vLLM,
//     DeepSeek) or delta.reasoning (OpenRouter, Ollama); both become
//     thinking deltas. Thinking is never sent back: the API has no field.
//   - Tool calls are emitted when the stream is complete ([DONE]), just
//     before the message end: a stream that fails emits none.
//     finish_reason "stop" with tool calls (older Ollama) counts as toolUse.
//     Calls without an id get a random one; arguments sent as a JSON object
//     instead of a string (some local servers) are taken as they are.
//   - The output cap goes out as max_completion_tokens to api.openai.com
//     (where max_tokens is refused by reasoning models) and as max_tokens to
//     every other server (which do not all know the newer name).
//   - ChatRequest.CacheBoundary is not sent: these servers cache prompt
//     prefixes by themselves (OpenAI automatically, llama-server per slot).
//   - Images in tool results cannot go in a "tool" message: they follow the
//     run of tool messages in one user message, as OpenClaw does.
//   - A 200 answer with a JSON body (a server that ignores "stream") is read
//     as a complete, non-streamed completion.
//   - The default HTTP client dials in 10 s, waits at most 5 min for response
//     headers (Ollama loads a model before it answers) and has no overall
//     limit; TCP keep-alives find a dead peer mid-stream.
package openai

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/httpapi"
)

// DefaultBaseURL is where requests go when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// API names the wire protocol, as OpenClaw writes it in Message.API.
const API = "openai-completions"

// Config configures a Provider.
type Config struct {
	// ProviderID names the provider in errors and messages, e.g. "openai"
	// or "openrouter" (default "openai").
	ProviderID string
	// BaseURL is the API root up to and including /v1 (default
	// DefaultBaseURL); requests go to BaseURL + "/chat/completions".
	BaseURL string
	// APIKey is sent as a bearer token; empty sends no Authorization header
	// (local servers).
	APIKey string
	// Headers are added to every request (e.g. OpenRouter's HTTP-Referer).
	Headers map[string]string
	// HTTPClient is used when set; nil means a client with dial, TLS and
	// response-header timeouts but no overall timeout (streams are long).
	HTTPClient *http.Client
	// MaxTokens caps the output when a request has no cap; zero leaves the
	// field out and the server chooses.
	MaxTokens int
}

// Provider streams chat completions from one OpenAI-compatible endpoint. It
// is safe for concurrent use.
type Provider struct {
	cfg          Config
	url          string
	client       *http.Client
	newTokenName bool // send max_completion_tokens instead of max_tokens
}

// New returns a Provider for cfg.
func New(cfg Config) *Provider {
	if cfg.ProviderID == "" {
		cfg.ProviderID = "openai"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	client := cfg.HTTPClient
	if client == nil {
		client = httpapi.NewClient()
	}
	return &Provider{
		cfg:          cfg,
		url:          base + "/chat/completions",
		client:       client,
		newTokenName: strings.Contains(base, "://api.openai.com"),
	}
}

// ID returns the provider id used in errors and messages.
func (p *Provider) ID() string { return p.cfg.ProviderID }

// API returns the wire protocol name, "openai-completions".
func (p *Provider) API() string { return API }

// Stream sends req and emits the reply as it streams: text and thinking
// deltas, one EventToolCall per complete call, then exactly one
// EventMessageEnd, after which it returns nil. On failure it returns a
// *engine.ModelError and emits nothing more.
func (p *Provider) Stream(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error {
	body, err := p.requestBody(req)
	if err != nil {
		return p.fail(req, engine.ErrBadRequest, 0, "cannot encode the request: "+err.Error(), err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return p.fail(req, engine.ErrBadRequest, 0, "bad base URL "+p.cfg.BaseURL, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	if p.cfg.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+p.cfg.APIKey)
	}
	for k, v := range p.cfg.Headers {
		hreq.Header.Set(k, v)
	}

	resp, err := p.client.Do(hreq)
	if err != nil {
		return p.transportError(ctx, req, err)
	}
	defer resp.Body.Close()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		kind, msg := classify(resp.StatusCode, b)
		return p.fail(req, kind, resp.StatusCode, msg, nil)
	}
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		return p.readCompletion(ctx, req, resp.Body, emit)
	}
	return p.readStream(ctx, req, resp.Body, emit)
}

// fail builds the error Stream returns. The key is scrubbed from msg in case
// a server echoed it.
func (p *Provider) fail(req *engine.ChatRequest, kind engine.ErrorKind, status int, msg string, err error) *engine.ModelError {
	return &engine.ModelError{
		Kind:     kind,
		Provider: p.cfg.ProviderID,
		Model:    req.Model,
		Status:   status,
		Message:  httpapi.CleanMessage(msg, p.cfg.APIKey),
		Err:      err,
	}
}
