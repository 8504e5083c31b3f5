package main

import (
	"os"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine/config"
	"github.com/openclaw-edge/edge/engine/tool"
	"github.com/openclaw-edge/edge/engine/tool/fs"
)

// TestAgentsLeaveProviderLayer: the agent's own policy leaves the provider
// layer (tools.byProvider) to the failover chain (modelset's
// TestProviderTools), but an invalid layer is refused.
func TestAgentsLeaveProviderLayer(t *testing.T) {
	data, err := os.ReadFile("testdata/provider-tools.json5")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(data, "provider-tools.json5")
	if err != nil {
		t.Fatal(err)
	}
	ags, err := agents(cfg, tool.NewRegistry(fs.Tools(fs.Config{})...))
	if err != nil {
		t.Fatal(err)
	}
	if !ags[0].Allowed("grep") || !ags[0].Allowed("exec") {
		t.Error("the agent's own policy applied the primary's provider layer")
	}
	cfg.Tools.ByProvider["ollama"] = config.ToolPolicy{Deny: []string{"group:nope"}}
	if _, err := agents(cfg, tool.NewRegistry()); err == nil {
		t.Error("an invalid byProvider layer was accepted")
	}
}

// memorySearch.enabled false takes the memory tools away from that agent
// (and with them the prompt's memory section); other agents keep them. An
// agent's own block overrides the defaults field by field.
func TestMemoryToolsPerAgent(t *testing.T) {
	cfg, err := config.Parse([]byte(`{
		agents: {
			defaults: { memorySearch: { enabled: false, query: { maxResults: 3 } } },
			list: [{ id: 'main', default: true }, { id: 'work', memorySearch: { enabled: true } }],
		},
	}`), "t.json5")
	if err != nil {
		t.Fatal(err)
	}
	ags, err := agents(cfg, tool.NewRegistry(fs.Tools(fs.Config{})...))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range ags {
		want := a.ID == "work"
		for _, name := range []string{"memory_search", "memory_get"} {
			if got := a.Allowed(name); got != want {
				t.Errorf("%s: %s allowed = %v, want %v", a.ID, name, got, want)
			}
		}
		if !a.Allowed("read") {
			t.Errorf("%s: read not allowed", a.ID)
		}
	}
	ra, _ := cfg.Agent("work")
	if !ra.MemorySearch.IsEnabled() || ra.MemorySearch.Query.MaxResults != 3 {
		t.Errorf("work's memorySearch %+v: want enabled, maxResults inherited", ra.MemorySearch)
	}
	// Bad values are refused with the key's path.
	_, err = config.Parse([]byte(`{agents: {defaults: {memorySearch: {provider: 'cohere', query: {minScore: 2, hybrid: {fusion: 'max'}}}}}, memory: {citations: 'sometimes'}}`), "bad.json5")
	for _, want := range []string{"memorySearch.provider", "memorySearch.query.minScore", "memorySearch.query.hybrid.fusion", "memory.citations"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}
