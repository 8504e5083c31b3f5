package main

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/openclaw-edge/edge/appliance/modelset"
	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/config"
	"github.com/openclaw-edge/edge/engine/gateway"
	"github.com/openclaw-edge/edge/engine/policy"
	"github.com/openclaw-edge/edge/engine/prompt"
	"github.com/openclaw-edge/edge/engine/tool"
)

// agents turns the config's agents into the gateway's, with their tool policy
// compiled (profile → global → agent; the most restrictive wins). The
// provider layer (tools.byProvider) depends on the model that answers, so
// it is applied per attempt by the failover chain (modelset.Set.providerTools);
// here it is only validated.
func agents(cfg *config.Config, reg *tool.Registry) ([]gateway.Agent, error) {
	for _, key := range slices.Sorted(maps.Keys(cfg.Tools.ByProvider)) {
		if err := policy.Validate(modelset.ProviderLayer(cfg.Tools.ByProvider[key]), reg.Known); err != nil {
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
