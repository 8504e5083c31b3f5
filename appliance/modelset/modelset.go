// Package modelset is the gateway's model resolver: it turns the config's
// "provider/model" references into failover chains of provider clients
// (gateway.Models), and says which configured models cannot be used.
package modelset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"sync"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/agent"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/config"
	"github.com/openclaw-edge/edge/engine/gateway"
	"github.com/openclaw-edge/edge/engine/policy"
	"github.com/openclaw-edge/edge/engine/prompt"
	"github.com/openclaw-edge/edge/engine/tool"
	"github.com/openclaw-edge/edge/models/anthropic"
	"github.com/openclaw-edge/edge/models/catalog"
	"github.com/openclaw-edge/edge/models/failover"
	"github.com/openclaw-edge/edge/models/gemini"
	"github.com/openclaw-edge/edge/models/llamacpp"
	"github.com/openclaw-edge/edge/models/ollama"
	"github.com/openclaw-edge/edge/models/openai"
)

// Set resolves "provider/model" references from the config into failover
// chains of providers, building each provider's client once, on first use:
// local GGUF files through the runner pool, remote APIs as thin HTTP clients,
// one candidate per auth profile so auth errors rotate profiles.
type Set struct {
	cfg       *config.Config
	pool      *llamacpp.Pool
	registry  *catalog.Registry
	cooldowns failover.Store
	log       *slog.Logger
	client    *http.Client // one connection pool for every remote provider and profile

	// findRunner finds openclaw-runner (nil: llamacpp.FindRunner).
	findRunner func() (string, error)

	mu        sync.Mutex
	providers map[string]failover.Model // by provider id @ profile, or local path
}

// Config is what a Set is built from.
type Config struct {
	Config    *config.Config
	Pool      *llamacpp.Pool    // runs local models
	Registry  *catalog.Registry // the installed GGUF files
	Cooldowns failover.Store    // provider cooldowns, kept across restarts
	Log       *slog.Logger
	Client    *http.Client // one connection pool for every remote provider and profile
}

// New returns the resolver of cfg's models.
func New(c Config) *Set {
	return &Set{
		cfg: c.Config, pool: c.Pool, registry: c.Registry, log: c.Log,
		client:    c.Client,
		providers: make(map[string]failover.Model),
		cooldowns: c.Cooldowns,
	}
}

func (m *Set) runner() (string, error) {
	if m.findRunner != nil {
		return m.findRunner()
	}
	return llamacpp.FindRunner()
}

var _ gateway.Models = (*Set)(nil)

// Refs lists the models the providers of the config list and the installed
// ones, sorted, each once.
func (m *Set) Refs() []string {
	refs := []string{}
	for id, p := range m.cfg.Models.Providers {
		for _, d := range p.Models {
			refs = append(refs, id+"/"+d.ID)
		}
	}
	if m.registry != nil {
		for _, e := range m.registry.List() {
			refs = append(refs, e.Ref())
		}
	}
	slices.Sort(refs)
	return slices.Compact(refs)
}

// Resolve builds the failover chain of refs (primary first); a link that
// cannot serve fails over, unless it is the only one.
func (m *Set) Resolve(refs []string, onSwitch func(gateway.Switch)) (agent.Model, gateway.ModelInfo, func() string, error) {
	var (
		chain   []failover.Candidate
		primary gateway.ModelInfo
	)
	for i, ref := range refs {
		cands, info, err := m.candidates(ref)
		if err != nil {
			if len(refs) == 1 {
				return nil, info, nil, err
			}
			// An unusable link (a model file not installed, an api this
			// build lacks) fails over like an unreachable one.
			var me *engine.ModelError
			if !errors.As(err, &me) {
				me = &engine.ModelError{Kind: engine.ErrUnreachable, Message: err.Error()}
			}
			down := *me
			down.Kind = engine.ErrUnreachable
			cands = []failover.Candidate{{Ref: ref, Model: failingModel{&down}}}
			info = gateway.ModelInfo{Ref: ref}
		}
		if i == 0 {
			primary = info
		}
		chain = append(chain, cands...)
	}
	ac := m.cfg.Auth.Cooldowns
	c := failover.New(failover.Config{
		BillingBackoff: ac.BillingBackoff(), BillingMax: ac.BillingMax(), FailureWindow: ac.FailureWindow(),
		Store: m.cooldowns, Logger: m.log,
	}, chain, func(s failover.Switch) {
		if onSwitch != nil {
			onSwitch(gateway.Switch{From: s.From, To: s.To, Reason: string(s.Reason), Detail: s.Detail})
		}
	})
	return c, primary, c.Answered, nil
}

// localModel is what the wiring asks of a local model beyond streaming:
// its own token count, its trained window and how /think reaches it
// (models/llamacpp.Provider).
type localModel interface {
	CountTokens(ctx context.Context, req *engine.ChatRequest) (int, error)
	CachedTokens(ctx context.Context, req *engine.ChatRequest) (cached, total int, loaded bool, err error)
	TrainedContext() int
	ThinkingMechanism() string
}

// failingModel is a chain link that cannot serve.
type failingModel struct{ err error }

func (f failingModel) Stream(context.Context, *engine.ChatRequest, func(engine.Event)) error {
	return f.err
}

// candidates returns the chain links of one ref: one per auth profile.
func (m *Set) candidates(ref string) ([]failover.Candidate, gateway.ModelInfo, error) {
	pid, mid, err := config.SplitModel(ref)
	if err != nil {
		return nil, gateway.ModelInfo{Ref: ref}, &engine.ModelError{Kind: engine.ErrNoModel, Message: err.Error()}
	}
	prov, def, err := m.cfg.ModelDef(ref)
	if err != nil {
		return nil, gateway.ModelInfo{Ref: ref}, &engine.ModelError{Kind: engine.ErrNoModel, Provider: pid, Model: mid, Message: err.Error()}
	}
	info := gateway.ModelInfo{
		Ref: pid + "/" + def.ID, Provider: pid, ID: def.ID, API: prov.API,
		ContextWindow: def.ContextWindow, MaxTokens: def.MaxTokens, Local: prov.API == config.APILocal,
	}
	if info.Local {
		// Without the runner no local model can answer: say so first,
		// pointing to Ollama or a remote provider, rather than advise
		// pulling a file that could not run either (the pure build).
		if _, err := m.runner(); err != nil {
			return nil, info, &engine.ModelError{Kind: engine.ErrNoModel, Provider: pid, Model: mid,
				Message: fmt.Sprintf("%s is a local model, but %s; %s", info.Ref, UserText(err), api.NoRunnerHint)}
		}
		path := def.Path
		if path == "" {
			if path, err = m.registry.Path(mid); err != nil {
				return nil, info, &engine.ModelError{Kind: engine.ErrNoModel, Provider: pid, Model: mid, Message: err.Error()}
			}
		}
		lr := m.cfg.LocalRunner()
		m.mu.Lock()
		p, ok := m.providers[path]
		if !ok {
			// The model card's sampling parameters (the catalog entry of
			// this very file); the config has no sampling keys yet, so
			// nothing overrides them.
			var s llamacpp.Sampling
			if m.registry != nil {
				if cm, ok := m.registry.ModelOf(mid, path); ok {
					s = llamacpp.SamplingFromParams(cm.Params)
				}
			}
			p = m.pool.ModelWith(pid, mid, path, s)
			m.providers[path] = p
		}
		m.mu.Unlock()
		// The window is the smallest of what the config, the catalog, the
		// runner's KV cache and the file itself allow (prompt.EffectiveWindow);
		// each limit names what a user would change.
		info.Limits = []prompt.Limit{
			{Tokens: def.ContextWindow, Knob: "the contextWindow of " + info.Ref},
			{Tokens: lr.ContextSize, Knob: "models.local.contextSize"},
		}
		if lm, ok := p.(localModel); ok {
			info.Limits = append(info.Limits, prompt.Limit{Tokens: lm.TrainedContext(), Knob: "the GGUF's trained context (" + filepath.Base(path) + ")"})
			info.Count = lm.CountTokens
			info.Cached = lm.CachedTokens
			info.Thinking = lm.ThinkingMechanism()
		}
		if w, ok := prompt.EffectiveWindow(info.Limits...); ok {
			info.ContextWindow = w.Tokens
		}
		return []failover.Candidate{{Ref: info.Ref, Provider: pid, Model: failover.FilterTools(p, m.providerTools(pid, def.ID)), ModelID: def.ID}}, info, nil
	}
	profiles := m.cfg.AuthProfiles(pid)
	if len(profiles) == 0 {
		profiles = []config.AuthProfile{{APIKey: prov.APIKey}}
	}
	var cands []failover.Candidate
	for _, ap := range profiles {
		p, err := m.provider(pid, ap.ID, prov, ap.APIKey)
		if err != nil {
			return nil, info, err
		}
		cands = append(cands, failover.Candidate{Ref: info.Ref, Provider: pid, Profile: ap.ID, Model: failover.FilterTools(p, m.providerTools(pid, def.ID)), ModelID: def.ID})
	}
	return cands, info, nil
}

// providerTools is the tools.byProvider layer of a model, "provider/model"
// first, else "provider" (OpenClaw's lookup), as a predicate; nil when
// neither is configured. It is applied to each attempt of a failover chain
// by the model that is asked (failover.FilterTools), on top of the agent's
// own policy (the turn's tool set), so a fallback gets its own provider's
// tools rather than the primary's.
func (m *Set) providerTools(pid, modelID string) func(string) bool {
	bp, ok := m.cfg.Tools.ByProvider[pid+"/"+modelID]
	if !ok {
		if bp, ok = m.cfg.Tools.ByProvider[pid]; !ok {
			return nil
		}
	}
	return policy.Allowed([]policy.Layer{ProviderLayer(bp)}, tool.ExpandGroup)
}

// ProviderLayer is a tools.byProvider entry as a policy layer.
func ProviderLayer(bp config.ToolPolicy) policy.Layer {
	return policy.Layer{Name: "provider", Profile: bp.Profile, Allow: bp.Allow, Deny: bp.Deny}
}

// provider builds (once) the client of one provider and auth profile.
func (m *Set) provider(pid, profile string, prov config.Provider, key string) (failover.Model, error) {
	id := pid + "@" + profile
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.providers[id]; ok {
		return p, nil
	}
	var p failover.Model
	switch prov.API {
	case config.APIOpenAICompletions:
		p = openai.New(openai.Config{ProviderID: pid, BaseURL: prov.BaseURL, APIKey: key, Headers: prov.Headers, HTTPClient: m.client})
	case config.APIAnthropicMessages:
		p = anthropic.New(anthropic.Config{ProviderID: pid, BaseURL: prov.BaseURL, APIKey: key, Headers: prov.Headers, HTTPClient: m.client})
	case config.APIGemini:
		p = gemini.New(gemini.Config{ProviderID: pid, BaseURL: prov.BaseURL, APIKey: key, Headers: prov.Headers, HTTPClient: m.client})
	case config.APIOllama:
		op, err := ollama.New(ollama.Config{ProviderID: pid, BaseURL: prov.BaseURL, APIKey: key, Headers: prov.Headers, HTTPClient: m.client})
		if err != nil {
			return nil, &engine.ModelError{Kind: engine.ErrNoModel, Provider: pid, Message: err.Error()}
		}
		p = op
	default:
		return nil, &engine.ModelError{Kind: engine.ErrNoModel, Provider: pid,
			Message: fmt.Sprintf("provider api %q is not available in this build of the gateway", prov.API)}
	}
	m.providers[id] = p
	return p, nil
}

// UserText is the message of a model error without its kind prefix.
func UserText(err error) string {
	var me *engine.ModelError
	if errors.As(err, &me) && me.Message != "" {
		return me.Message
	}
	return err.Error()
}
