package llamacpp

import (
	"context"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/chattemplate"
)

// CountTokens is the number of prompt tokens req costs this model: req
// rendered exactly as Stream renders it (chat template, tools — in the
// system prompt for prompt-based calling —, thinking, generation prompt)
// and tokenized by the runner with the model's own tokenizer, the way
// Stream's prompt is. It equals the Input+CacheRead that Stream reports for
// the request's first phase. It starts the runner if the model is not
// loaded, and waits behind a completion that the runner is running.
func (m *Provider) CountTokens(ctx context.Context, req *engine.ChatRequest) (int, error) {
	if err := m.setup(); err != nil {
		return 0, m.modelError(engine.ErrNoModel, "%v", err)
	}
	prompt, _, err := m.fmt.render(req)
	if err != nil {
		return 0, m.modelError(engine.ErrBadRequest, "render the chat template: %v", err)
	}
	toks, err := m.Tokenize(ctx, prompt)
	if err != nil {
		return 0, err
	}
	return len(toks), nil
}

// TrainedContext is the context window the model was trained with (the
// GGUF's <arch>.context_length), 0 when unknown. It reads only the file's
// header; the runner's window is Config.Runner.ContextLen.
func (m *Provider) TrainedContext() int {
	if m.setup() != nil {
		return 0
	}
	return m.meta.ContextLength()
}

// ThinkingMechanism is how a /think level reaches this model, decided from
// its GGUF chat template (see applyThinking): "enable_thinking",
// "thinking", "no_think" or "none" (also for a file that cannot be read).
func (m *Provider) ThinkingMechanism() string {
	if m.setup() != nil {
		return string(chattemplate.ThinkingNone)
	}
	return string(m.fmt.thinking())
}
