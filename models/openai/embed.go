package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/openclaw-edge/edge/engine"
)

// DefaultEmbeddingModel is OpenClaw's default for memory search.
const DefaultEmbeddingModel = "text-embedding-3-small"

// maxEmbeddingReply bounds the JSON read back (a batch of 32 × 3072 floats
// is about 2 MB).
const maxEmbeddingReply = 32 << 20

// Embed returns one vector per text from BaseURL + "/embeddings" (OpenAI
// and the compatible servers: vLLM, llama-server, OpenRouter…). Vectors
// are returned in the order of texts whatever order the server lists them.
func (p *Provider) Embed(ctx context.Context, model string, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return [][]float32{}, nil
	}
	req := &engine.ChatRequest{Model: model}
	body, _ := json.Marshal(map[string]any{"model": model, "input": texts, "encoding_format": "float"})
	url := strings.TrimSuffix(p.url, "/chat/completions") + "/embeddings"
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, p.fail(req, engine.ErrBadRequest, 0, "bad base URL "+p.cfg.BaseURL, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	if p.cfg.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+p.cfg.APIKey)
	}
	for k, v := range p.cfg.Headers {
		hreq.Header.Set(k, v)
	}
	resp, err := p.client.Do(hreq)
	if err != nil {
		return nil, p.transportError(ctx, req, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxEmbeddingReply+1))
	if err != nil {
		return nil, p.readError(ctx, req, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		kind, msg := classify(resp.StatusCode, b)
		return nil, p.fail(req, kind, resp.StatusCode, msg, nil)
	}
	if len(b) > maxEmbeddingReply {
		return nil, p.fail(req, engine.ErrUnreachable, resp.StatusCode, "embedding reply larger than 32 MiB", nil)
	}
	var r struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, p.fail(req, engine.ErrUnreachable, resp.StatusCode, "malformed embedding reply: "+err.Error(), err)
	}
	out := make([][]float32, len(texts))
	for _, d := range r.Data {
		if d.Index < 0 || d.Index >= len(texts) || out[d.Index] != nil {
			return nil, p.fail(req, engine.ErrUnreachable, resp.StatusCode, fmt.Sprintf("embedding reply has a bad index %d", d.Index), nil)
		}
		out[d.Index] = d.Embedding
	}
	for i, v := range out {
		if len(v) == 0 {
			return nil, p.fail(req, engine.ErrUnreachable, resp.StatusCode, fmt.Sprintf("embedding reply lacks text %d of %d", i+1, len(texts)), nil)
		}
	}
	return out, nil
}
