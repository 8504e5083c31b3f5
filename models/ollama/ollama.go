// Package ollama is a model provider for a local (or LAN) Ollama server,
// through Ollama's own client package github.com/ollama/ollama/api (pure
// Go; the cgo runner packages of that module are never imported here). It
// streams /api/chat with tools, thinking and images, and embeds with
// /api/embed (docs/design.md §3.6, §7).
//
// Choices where the spec is silent:
//   - Thinking: ChatRequest.Thinking "off" sends think:false; low, medium
//     and high send think:true, except to gpt-oss models, the only ones
//     Ollama lets choose a level (it refuses a level string for others).
//     No level leaves think out, so a thinking model thinks by default.
//     A model that cannot think answers 400 "does not support thinking":
//     the call is then repeated once without think rather than failing the
//     turn over a /think setting.
//   - Tools: the JSON schema is decoded into api.ToolFunctionParameters, the
//     subset Ollama's server itself binds; keywords outside it (pattern,
//     minimum, additionalProperties…) are dropped here exactly as Ollama
//     would drop them. Tool results go back as role "tool" messages with
//     tool_name and tool_call_id; their images ride on the same message
//     (Ollama takes images on any role).
//   - Tool calls are emitted when the reply is done, just before the
//     message end, so a stream that fails emits none; calls Ollama sent
//     without an id (before 0.12) get a random one. Ollama ends a tool call
//     with done_reason "stop": any call makes the stop reason toolUse.
//     Arguments that are not a JSON object (a broken call kept as text) go
//     back as {}: Ollama's wire type only holds an object.
//   - Usage: Input is prompt_eval_count and Output eval_count. Ollama
//     reports no cached count; with its own prompt cache prompt_eval_count
//     is often only the newly processed tokens.
//   - The output cap goes out as options.num_predict, over Config.Options.
//   - Ollama truncates history that overflows num_ctx by itself (its
//     default), so context_overflow errors are rare from this provider.
//   - A stream that ends without done:true is "stream ended early"
//     (unreachable): api.Client drops read errors, so the done flag is the
//     only sign of a complete reply.
//   - api.Client allocates an 8 MiB line buffer per streamed call; that is
//     its cost, paid only while a reply streams.
//   - BaseURL may end in /v1 or /api (a URL written for Ollama's
//     OpenAI-compatible endpoint): the suffix is dropped.
//   - APIKey, when set, goes out as a bearer token (Ollama behind an
//     authenticating proxy); api.Client signs requests to ollama.com with
//     the local Ollama key instead, so Ollama's cloud is better reached
//     through the openai-completions provider at https://ollama.com/v1.
//   - The default HTTP client dials in 10 s and waits at most 5 min for
//     response headers (Ollama loads a model before it answers) with no
//     overall limit.
package ollama

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/httpapi"
)

// DefaultBaseURL is where requests go when Config.BaseURL is empty.
const DefaultBaseURL = "http://127.0.0.1:11434"

// API names the wire protocol, as written in Message.API and in the
// config's models.providers.<id>.api.
const API = "ollama"

// Config configures a Provider.
type Config struct {
	// ProviderID names the provider in errors and messages (default
	// "ollama").
	ProviderID string
	// BaseURL is the server root (default DefaultBaseURL); requests go to
	// BaseURL + "/api/chat" and "/api/embed".
	BaseURL string
	// KeepAlive is how long Ollama keeps the model loaded after a request;
	// nil leaves Ollama's default (5 min), zero unloads at once and a
	// negative value keeps it loaded.
	KeepAlive *time.Duration
	// HTTPClient is used when set; nil means a client with dial and
	// response-header timeouts but no overall timeout (streams are long).
	HTTPClient *http.Client
	// Options are Ollama model options sent with every chat request
	// (num_ctx, temperature, num_thread…).
	Options map[string]any
	// APIKey, when set, is sent as a bearer token (a proxy in front of
	// Ollama); a plain local Ollama needs none.
	APIKey string
	// Headers are added to every request.
	Headers map[string]string
}

// Provider streams chats from one Ollama server. It is safe for concurrent
// use.
type Provider struct {
	cfg    Config
	base   string // normalized BaseURL, for messages
	client *api.Client
}

// New returns a Provider for cfg, or an error when BaseURL is not an http(s)
// URL with a host.
func New(cfg Config) (*Provider, error) {
	if cfg.ProviderID == "" {
		cfg.ProviderID = "ollama"
	}
	raw := cfg.BaseURL
	if raw == "" {
		raw = DefaultBaseURL
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("ollama base URL %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("ollama base URL %q: want http://host:port (e.g. %s)", raw, DefaultBaseURL)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	for _, suffix := range []string{"/v1", "/api"} {
		u.Path = strings.TrimSuffix(u.Path, suffix)
	}
	u.RawQuery, u.Fragment = "", ""
	client := cfg.HTTPClient
	if client == nil {
		client = httpapi.NewClient()
	}
	if cfg.APIKey != "" || len(cfg.Headers) > 0 {
		client = withHeaders(client, cfg.APIKey, cfg.Headers)
	}
	return &Provider{cfg: cfg, base: u.String(), client: api.NewClient(u, client)}, nil
}

// ID returns the provider id used in errors and messages.
func (p *Provider) ID() string { return p.cfg.ProviderID }

// API returns the wire protocol name, "ollama".
func (p *Provider) API() string { return API }

// BaseURL returns the server root requests go to.
func (p *Provider) BaseURL() string { return p.base }

// withHeaders returns a copy of c whose transport adds the key and headers.
func withHeaders(c *http.Client, key string, headers map[string]string) *http.Client {
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	cc := *c
	cc.Transport = headerTransport{next: next, key: key, headers: maps.Clone(headers)}
	return &cc
}

type headerTransport struct {
	next    http.RoundTripper
	key     string
	headers map[string]string
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	if t.key != "" {
		r.Header.Set("Authorization", "Bearer "+t.key)
	}
	return t.next.RoundTrip(r)
}

// Stream sends req and emits the reply as it streams: text and thinking
// deltas, one EventToolCall per complete call, then exactly one
// EventMessageEnd, after which it returns nil. On failure it returns a
// *engine.ModelError and emits nothing more.
func (p *Provider) Stream(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error {
	creq, err := p.chatRequest(req)
	if err != nil {
		return p.fail(req.Model, engine.ErrBadRequest, 0, err.Error(), err)
	}
	err = p.chat(ctx, req, creq, emit)
	var me *engine.ModelError
	if errors.As(err, &me) && me.Kind == engine.ErrBadRequest && creq.Think != nil && creq.Think.Bool() &&
		strings.Contains(strings.ToLower(me.Message), "does not support thinking") {
		creq.Think = nil // a /think level on a model that cannot think
		err = p.chat(ctx, req, creq, emit)
	}
	return err
}

// errStop ends api.Client's stream loop when the caller went away.
var errStop = errors.New("ollama: stream stopped")

func (p *Provider) chat(ctx context.Context, req *engine.ChatRequest, creq *api.ChatRequest, emit func(engine.Event)) error {
	d := &decoder{emit: emit}
	err := p.client.Chat(ctx, creq, func(r api.ChatResponse) error {
		if ctx.Err() != nil {
			return errStop
		}
		d.chunk(&r)
		return nil
	})
	if err != nil {
		return p.classify(ctx, req.Model, err)
	}
	if ctx.Err() != nil {
		kind, msg := httpapi.NetKind(ctx, ctx.Err())
		return p.fail(req.Model, kind, 0, msg, ctx.Err())
	}
	if !d.done {
		return p.fail(req.Model, engine.ErrUnreachable, 0, "stream ended early", nil)
	}
	d.end()
	return nil
}

// Embed returns one embedding per text from an Ollama embedding model
// (e.g. nomic-embed-text), as Ollama computes them (normalized). No texts
// means no request.
func (p *Provider) Embed(ctx context.Context, model string, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return [][]float32{}, nil
	}
	ereq := &api.EmbedRequest{Model: model, Input: texts}
	if p.cfg.KeepAlive != nil {
		ereq.KeepAlive = &api.Duration{Duration: *p.cfg.KeepAlive}
	}
	resp, err := p.client.Embed(ctx, ereq)
	if err != nil {
		return nil, p.classify(ctx, model, err)
	}
	if len(resp.Embeddings) != len(texts) {
		return nil, p.fail(model, engine.ErrUnreachable, 0,
			fmt.Sprintf("Ollama returned %d embeddings for %d texts", len(resp.Embeddings), len(texts)), nil)
	}
	return resp.Embeddings, nil
}

// fail builds the error Stream and Embed return. The key is scrubbed from
// msg in case a proxy echoed it.
func (p *Provider) fail(model string, kind engine.ErrorKind, status int, msg string, err error) *engine.ModelError {
	return &engine.ModelError{
		Kind:     kind,
		Provider: p.cfg.ProviderID,
		Model:    model,
		Status:   status,
		Message:  httpapi.CleanMessage(msg, p.cfg.APIKey),
		Err:      err,
	}
}
