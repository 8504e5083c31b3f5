package main

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/agent"
	"github.com/openclaw-edge/edge/engine/config"
	"github.com/openclaw-edge/edge/engine/gateway"
	"github.com/openclaw-edge/edge/engine/policy"
	"github.com/openclaw-edge/edge/engine/prompt"
	"github.com/openclaw-edge/edge/engine/tool"
	"github.com/openclaw-edge/edge/models/anthropic"
	"github.com/openclaw-edge/edge/models/openai"
)

// models resolves "provider/model" references from the config, building each
// provider's client once, on first use.
type models struct {
	cfg    *config.Config
	client *http.Client // nil: each provider's default

	mu        sync.Mutex
	providers map[string]agent.Model
}

var _ gateway.Models = (*models)(nil)

func newModels(cfg *config.Config) *models {
	return &models{cfg: cfg, providers: make(map[string]agent.Model)}
}

func (m *models) Refs() []string {
	var refs []string
	for id, p := range m.cfg.Models.Providers {
		for _, d := range p.Models {
			refs = append(refs, id+"/"+d.ID)
		}
	}
	slices.Sort(refs)
	return refs
}

func (m *models) Resolve(ref string) (agent.Model, gateway.ModelInfo, error) {
	pid, mid, err := config.SplitModel(ref)
	if err != nil {
		return nil, gateway.ModelInfo{}, &engine.ModelError{Kind: engine.ErrNoModel, Message: err.Error()}
	}
	prov, def, err := m.cfg.ModelDef(ref)
	if err != nil {
		return nil, gateway.ModelInfo{}, &engine.ModelError{Kind: engine.ErrNoModel, Provider: pid, Model: mid, Message: err.Error()}
	}
	info := gateway.ModelInfo{
		Ref: pid + "/" + def.ID, Provider: pid, ID: def.ID, API: prov.API,
		ContextWindow: def.ContextWindow, MaxTokens: def.MaxTokens, Local: prov.API == config.APILocal,
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.providers[pid]; ok {
		return p, info, nil
	}
	var p agent.Model
	switch prov.API {
	case config.APIOpenAICompletions:
		p = openai.New(openai.Config{ProviderID: pid, BaseURL: prov.BaseURL, APIKey: prov.APIKey, Headers: prov.Headers, HTTPClient: m.client})
	case config.APIOllama:
		// Until the native Ollama client lands, speak Ollama's
		// OpenAI-compatible endpoint.
		base := strings.TrimSuffix(prov.BaseURL, "/")
		if base == "" {
			base = "http://127.0.0.1:11434"
		}
		p = openai.New(openai.Config{ProviderID: pid, BaseURL: base + "/v1", APIKey: prov.APIKey, Headers: prov.Headers, HTTPClient: m.client})
	case config.APIAnthropicMessages:
		p = anthropic.New(anthropic.Config{ProviderID: pid, BaseURL: prov.BaseURL, APIKey: prov.APIKey, Headers: prov.Headers, HTTPClient: m.client})
	default:
		return nil, info, &engine.ModelError{Kind: engine.ErrNoModel, Provider: pid, Model: mid,
			Message: fmt.Sprintf("provider api %q is not available in this build of the gateway yet", prov.API)}
	}
	m.providers[pid] = p
	return p, info, nil
}

// agents turns the config's agents into the gateway's, with their tool policy
// compiled (profile → global → provider → agent; the most restrictive wins).
func agents(cfg *config.Config, reg *tool.Registry) ([]gateway.Agent, error) {
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
		out = append(out, gateway.Agent{
			ID:                ra.ID,
			Name:              ra.Name,
			Workspace:         ra.Workspace,
			Model:             ra.Model.Primary,
			Allowed:           policy.Allowed(layers, tool.ExpandGroup),
			PromptMode:        prompt.Mode(ra.PromptMode),
			MaxTurns:          ra.MaxTurns,
			Timeout:           time.Duration(ra.TimeoutSeconds) * time.Second,
			MaxTokens:         ra.MaxTokens,
			Thinking:          engine.ThinkingLevel(ra.ThinkingDefault),
			BootstrapMaxChars: ra.BootstrapMaxChars,
			SkillDirs:         []string{ra.Workspace + "/skills"},
			Location:          loc,
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
	layers := []policy.Layer{
		{Name: "profile", Profile: profile},
		{Name: "global", Allow: global.Allow, Deny: global.Deny},
	}
	if pid, _, err := config.SplitModel(ra.Model.Primary); err == nil {
		if bp, ok := cfg.Tools.ByProvider[pid]; ok {
			layers = append(layers, policy.Layer{Name: "provider", Profile: bp.Profile, Allow: bp.Allow, Deny: bp.Deny})
		}
	}
	layers = append(layers, policy.Layer{Name: "agent", Allow: ra.Tools.Allow, Deny: ra.Tools.Deny})
	return layers
}
