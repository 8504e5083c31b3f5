// Package anthropic is a model provider for the Anthropic Messages API. It
// is a thin standard-library HTTP client that streams (SSE) and turns
// events into engine events (docs/design.md §3.6, §7, §12).
//
// Choices where the spec is silent:
//   - Prompt caching: with a cache boundary the system prompt is split in
//     two text blocks and the stable first one carries cache_control; the
//     last block of the conversation gets one too, so earlier turns are read
//     from the cache on the next call (two of the four breakpoints allowed).
//   - Thinking: signatures arrive as thinking_delta events with Signature
//     set and are kept on the thinking block. Anthropic refuses a tool-use
//     continuation whose assistant message does not start with a signed
//     thinking block (e.g. one written by another provider), so then
//     thinking is left off for that one call rather than failing the turn.
//     Signed thinking blocks in the history are sent back; others dropped.
//   - max_tokens: request, else Config.MaxTokens, else 4096; with thinking
//     it is raised to budget + 4096 when it would not exceed the budget.
//   - Tool ids are made to match ^[a-zA-Z0-9_-]+$ (calls from other
//     providers may not), the same way in tool_use and tool_result.
//   - Consecutive messages of one role are merged (tool results and a
//     following user message go in one user message, results first).
//   - Tool calls are emitted at their content_block_stop.
//   - BaseURL may end in /v1 or not; requests go to …/v1/messages.
//   - The default HTTP client dials in 10 s, waits at most 5 min for response
//     headers and has no overall limit; TCP keep-alives find a dead peer.
package anthropic

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
const DefaultBaseURL = "https://api.anthropic.com"

// API names the wire protocol, as OpenClaw writes it in Message.API.
const API = "anthropic-messages"

// Version is the anthropic-version header sent.
const Version = "2023-06-01"

// DefaultMaxTokens caps the output when neither the request nor the config
// does; the API requires a cap.
const DefaultMaxTokens = 4096

// Config configures a Provider.
type Config struct {
	// ProviderID names the provider in errors and messages (default
	// "anthropic").
	ProviderID string
	// BaseURL is the API root (default DefaultBaseURL).
	BaseURL string
	// APIKey is sent as x-api-key; empty sends none.
	APIKey string
	// Headers are added to every request (e.g. anthropic-beta).
	Headers map[string]string
	// HTTPClient is used when set; nil means a client with dial, TLS and
	// response-header timeouts but no overall timeout (streams are long).
	HTTPClient *http.Client
	// MaxTokens caps the output when a request has no cap (default
	// DefaultMaxTokens).
	MaxTokens int
}

// Provider streams replies from the Messages API. It is safe for concurrent
// use.
type Provider struct {
	cfg    Config
	url    string
	client *http.Client
}

// New returns a Provider for cfg.
func New(cfg Config) *Provider {
	if cfg.ProviderID == "" {
		cfg.ProviderID = "anthropic"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	base = strings.TrimSuffix(base, "/v1")
	client := cfg.HTTPClient
	if client == nil {
		client = httpapi.NewClient()
	}
	return &Provider{cfg: cfg, url: base + "/v1/messages", client: client}
}

// ID returns the provider id used in errors and messages.
func (p *Provider) ID() string { return p.cfg.ProviderID }

// API returns the wire protocol name, "anthropic-messages".
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
	hreq.Header.Set("anthropic-version", Version)
	if p.cfg.APIKey != "" {
		hreq.Header.Set("x-api-key", p.cfg.APIKey)
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
