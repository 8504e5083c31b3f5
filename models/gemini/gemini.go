// Package gemini is a model provider for Google's Gemini API
// (generativelanguage.googleapis.com): streamGenerateContent over SSE with
// function calling, thinking and images. It is a thin standard-library HTTP
// client that turns response chunks into engine events (docs/design.md §3.6, §7).
//
// Choices where the spec is silent:
//   - Tool schemas: Gemini takes an OpenAPI subset and refuses unknown
//     keywords, so schemas are rewritten (schema.go): $ref inlined, type
//     arrays become type + nullable, const becomes enum, oneOf anyOf; only
//     the keywords Gemini knows are kept (no additionalProperties, $schema,
//     default, examples, pattern — the last two are accepted by the API but
//     a default of the wrong type or a regex it cannot compile fails the
//     whole request). Enums of non-strings move into the description.
//     Required names without a property are dropped; an array without items
//     gets string items; a schema with no type at all ("any value") becomes
//     a string; a tool without properties is sent without parameters
//     (Gemini refuses an empty OBJECT). A nested object without properties
//     stays a bare OBJECT: whether Gemini takes that is not documented.
//   - Tool calls: Gemini sends each call whole and without an id; ids are
//     "call_<responseId>_<n>", stable within a reply and unique across
//     replies (other providers in a failover chain want unique ids). Ids
//     are not sent back: Gemini pairs responses with calls by name and
//     order. Calls are emitted when the stream ends, just before the
//     message end, so a stream that fails emits none.
//   - Tool results go in one user-role content of functionResponse parts
//     (consecutive results merged), response {"content": text}, or
//     {"error": text} when the result is an error; their images follow as
//     inlineData parts in the same content. Consecutive contents of one
//     role are merged so roles alternate.
//   - Thinking: "off" sends thinkingBudget 0 (nothing for *-pro models,
//     which cannot stop thinking); low/medium/high send budgets of 1024,
//     8192 and 24576 tokens with includeThoughts. gemini-3 models take
//     thinkingLevel instead (off and low "low", medium and high "high").
//     No level sends no thinkingConfig. A 400 that blames the thinking
//     config (a model that cannot think) repeats the call once without it.
//   - Thought signatures: a part's thoughtSignature is emitted as the
//     Signature of a thinking delta (before the part's own text), so the
//     agent keeps it on the thinking block; it goes back on the part that
//     follows that block, but only for messages written by this API.
//     gemini-3 refuses a function call turn without a signature: when none
//     is known, the documented placeholder "skip_thought_signature_validator"
//     is sent. Thought text itself is never sent back.
//   - Usage: Input is promptTokenCount (+ toolUsePromptTokenCount) minus
//     cachedContentTokenCount, CacheRead the cached part; Output is
//     candidatesTokenCount + thoughtsTokenCount (thoughts are billed as
//     output). ChatRequest.CacheBoundary is not sent: Gemini caches
//     prompt prefixes implicitly.
//   - finishReason STOP is stop (toolUse with calls), MAX_TOKENS length,
//     every other reason (SAFETY, RECITATION, MALFORMED_FUNCTION_CALL…)
//     and a prompt blocked by promptFeedback end with stop reason error.
//   - Errors: 429 RESOURCE_EXHAUSTED is rate_limit, unless the quota that
//     ran out is a daily one or has limit 0 (no free tier for the model) or
//     prepaid credit ran out: those are billing, since retrying within
//     minutes will not help. A 400 "API key not valid" is auth; a 404
//     naming a model is no_model, any other 404 (a wrong base URL)
//     unreachable; a payload over the size limit is image_too_large when
//     the request holds images, else context_overflow.
//   - The default HTTP client dials in 10 s, waits at most 5 min for
//     response headers and has no overall limit.
package gemini

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/httpapi"
)

// DefaultBaseURL is where requests go when Config.BaseURL is empty.
const DefaultBaseURL = "https://generativelanguage.googleapis.com/v1beta"

// API names the wire protocol, as written in Message.API and in the
// config's models.providers.<id>.api.
const API = "gemini"

// Config configures a Provider.
type Config struct {
	// ProviderID names the provider in errors and messages (default
	// "gemini").
	ProviderID string
	// BaseURL is the API root including the version (default
	// DefaultBaseURL); requests go to BaseURL +
	// "/models/<model>:streamGenerateContent?alt=sse".
	BaseURL string
	// APIKey is sent as x-goog-api-key.
	APIKey string
	// Headers are added to every request.
	Headers map[string]string
	// HTTPClient is used when set; nil means a client with dial, TLS and
	// response-header timeouts but no overall timeout (streams are long).
	HTTPClient *http.Client
	// MaxTokens caps the output when a request has no cap; zero leaves
	// maxOutputTokens out and Gemini chooses.
	MaxTokens int
}

// Provider streams replies from the Gemini API. It is safe for concurrent
// use.
type Provider struct {
	cfg    Config
	base   string
	client *http.Client
}

// New returns a Provider for cfg.
func New(cfg Config) *Provider {
	if cfg.ProviderID == "" {
		cfg.ProviderID = "gemini"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	client := cfg.HTTPClient
	if client == nil {
		client = httpapi.NewClient()
	}
	return &Provider{cfg: cfg, base: strings.TrimRight(cfg.BaseURL, "/"), client: client}
}

// ID returns the provider id used in errors and messages.
func (p *Provider) ID() string { return p.cfg.ProviderID }

// API returns the wire protocol name, "gemini".
func (p *Provider) API() string { return API }

// streamURL is where a streamed request for model goes.
func (p *Provider) streamURL(model string) string {
	model = strings.TrimPrefix(model, "models/")
	return p.base + "/models/" + url.PathEscape(model) + ":streamGenerateContent?alt=sse"
}

// Stream sends req and emits the reply as it streams: text and thinking
// deltas, one EventToolCall per complete call, then exactly one
// EventMessageEnd, after which it returns nil. On failure it returns a
// *engine.ModelError and emits nothing more.
func (p *Provider) Stream(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error {
	greq, err := p.request(req)
	if err != nil {
		return p.fail(req, engine.ErrBadRequest, 0, err.Error(), err)
	}
	err = p.stream(ctx, req, greq, emit)
	var me *engine.ModelError
	if greq.GenerationConfig != nil && greq.GenerationConfig.ThinkingConfig != nil &&
		errors.As(err, &me) && me.Kind == engine.ErrBadRequest && blamesThinking(me.Message) {
		greq.GenerationConfig.ThinkingConfig = nil // a model that cannot think (or not that way)
		if greq.GenerationConfig.MaxOutputTokens == 0 {
			greq.GenerationConfig = nil
		}
		err = p.stream(ctx, req, greq, emit)
	}
	return err
}

func (p *Provider) stream(ctx context.Context, req *engine.ChatRequest, greq *generateRequest, emit func(engine.Event)) error {
	body, err := marshal(greq)
	if err != nil {
		return p.fail(req, engine.ErrBadRequest, 0, "cannot encode the request: "+err.Error(), err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, p.streamURL(req.Model), bytes.NewReader(body))
	if err != nil {
		return p.fail(req, engine.ErrBadRequest, 0, "bad base URL "+p.cfg.BaseURL, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	if p.cfg.APIKey != "" {
		hreq.Header.Set("x-goog-api-key", p.cfg.APIKey)
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
		kind, msg := classify(resp.StatusCode, b, hasImages(req))
		return p.fail(req, kind, resp.StatusCode, msg, nil)
	}
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		return p.readJSON(ctx, req, resp.Body, emit)
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

func hasImages(req *engine.ChatRequest) bool {
	for _, m := range req.Messages {
		for _, b := range m.Content {
			if b.Type == engine.BlockImage {
				return true
			}
		}
	}
	return false
}
