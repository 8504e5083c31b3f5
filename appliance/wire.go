package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"time"

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

// models resolves "provider/model" references from the config into failover
// chains of providers, building each provider's client once, on first use:
// local GGUF files through the runner pool, remote APIs as thin HTTP clients,
// one candidate per auth profile so auth errors rotate profiles.
type models struct {
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

func (m *models) runner() (string, error) {
	if m.findRunner != nil {
		return m.findRunner()
	}
	return llamacpp.FindRunner()
}

var _ gateway.Models = (*models)(nil)

func (m *models) Refs() []string {
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

func (m *models) Resolve(refs []string, onSwitch func(gateway.Switch)) (agent.Model, gateway.ModelInfo, func() string, error) {
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
	TrainedContext() int
	ThinkingMechanism() string
}

// failingModel is a chain link that cannot serve.
type failingModel struct{ err error }

func (f failingModel) Stream(context.Context, *engine.ChatRequest, func(engine.Event)) error {
	return f.err
}

// candidates returns the chain links of one ref: one per auth profile.
func (m *models) candidates(ref string) ([]failover.Candidate, gateway.ModelInfo, error) {
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
				Message: fmt.Sprintf("%s is a local model, but %s; %s", info.Ref, userText(err), api.NoRunnerHint)}
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
func (m *models) providerTools(pid, modelID string) func(string) bool {
	bp, ok := m.cfg.Tools.ByProvider[pid+"/"+modelID]
	if !ok {
		if bp, ok = m.cfg.Tools.ByProvider[pid]; !ok {
			return nil
		}
	}
	return policy.Allowed([]policy.Layer{providerLayer(bp)}, tool.ExpandGroup)
}

func providerLayer(bp config.ToolPolicy) policy.Layer {
	return policy.Layer{Name: "provider", Profile: bp.Profile, Allow: bp.Allow, Deny: bp.Deny}
}

// provider builds (once) the client of one provider and auth profile.
func (m *models) provider(pid, profile string, prov config.Provider, key string) (failover.Model, error) {
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

// agents turns the config's agents into the gateway's, with their tool policy
// compiled (profile → global → agent; the most restrictive wins). The
// provider layer (tools.byProvider) depends on the model that answers, so
// it is applied per attempt by the failover chain (models.providerTools);
// here it is only validated.
func agents(cfg *config.Config, reg *tool.Registry) ([]gateway.Agent, error) {
	for _, key := range slices.Sorted(maps.Keys(cfg.Tools.ByProvider)) {
		if err := policy.Validate(providerLayer(cfg.Tools.ByProvider[key]), reg.Known); err != nil {
			return nil, fmt.Errorf("tools.byProvider.%s: %w", key, err)
		}
	}
	ids := []string{cfg.DefaultAgentID()}
	for _, a := range cfg.Agents.List {
		if !slices.Contains(ids, a.ID) {
			ids = append(ids, a.ID)
		}
	}
	var loc *time.Location
	if tz := cfg.Agents.Defaults.UserTimezone; tz != "" {
		l, err := time.LoadLocation(tz)
		if err != nil {
			return nil, fmt.Errorf("agents.defaults.userTimezone: %w", err)
		}
		loc = l
	}
	var out []gateway.Agent
	for _, id := range ids {
		ra, ok := cfg.Agent(id)
		if !ok {
			return nil, fmt.Errorf("agent %q is not configured", id)
		}
		layers := toolLayers(cfg, ra)
		for _, l := range layers {
			if err := policy.Validate(l, reg.Known); err != nil {
				return nil, fmt.Errorf("agent %s: %w", id, err)
			}
		}
		allowed := policy.Allowed(layers, tool.ExpandGroup)
		if !ra.MemorySearch.IsEnabled() {
			// memorySearch.enabled false: the memory tools are not offered
			// (and the prompt's memory section goes with them).
			inner := allowed
			allowed = func(name string) bool {
				return name != "memory_search" && name != "memory_get" && inner(name)
			}
		}
		out = append(out, gateway.Agent{
			ID:                ra.ID,
			Name:              ra.Name,
			Workspace:         ra.Workspace,
			Model:             ra.Model.Primary,
			Fallbacks:         ra.Model.Fallbacks,
			Allowed:           allowed,
			PromptMode:        prompt.Mode(ra.PromptMode),
			MaxTurns:          ra.MaxTurns,
			Timeout:           time.Duration(ra.TimeoutSeconds) * time.Second,
			MaxTokens:         ra.MaxTokens,
			Thinking:          engine.ThinkingLevel(ra.ThinkingDefault),
			BootstrapMaxChars: ra.BootstrapMaxChars,
			SkillDirs:         []string{ra.Workspace + "/skills"},
			Location:          loc,
			ContextTokens:     ra.ContextTokens,
			Compaction: gateway.Compaction{
				ReserveTokens:       ra.Compaction.ReserveTokens,
				KeepRecentTokens:    ra.Compaction.KeepRecentTokens,
				ReserveTokensFloor:  ra.Compaction.ReserveTokensFloor,
				SoftThresholdTokens: ra.Compaction.MemoryFlush.SoftThresholdTokens,
				FlushEnabled:        ra.Compaction.MemoryFlush.IsEnabled(),
			},
		})
	}
	return out, nil
}

func toolLayers(cfg *config.Config, ra config.ResolvedAgent) []policy.Layer {
	global := cfg.Tools.ToolPolicy
	profile := global.Profile
	if ra.Tools.Profile != "" {
		profile = ra.Tools.Profile
	}
	return []policy.Layer{
		{Name: "profile", Profile: profile},
		{Name: "global", Allow: global.Allow, Deny: global.Deny},
		{Name: "agent", Allow: ra.Tools.Allow, Deny: ra.Tools.Deny},
	}
}
