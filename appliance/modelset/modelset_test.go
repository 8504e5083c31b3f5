package modelset

import (
	"errors"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/config"
	"github.com/openclaw-edge/edge/engine/gateway"
	"github.com/openclaw-edge/edge/models/catalog"
	"github.com/openclaw-edge/edge/models/failover"
)

// TestProviderTools: tools.byProvider applies to the model that answers
// ("provider/model" before "provider"), not to the agent's primary (the
// agent's side: TestAgentsLeaveProviderLayer in package main).
func TestProviderTools(t *testing.T) {
	data, err := os.ReadFile("../testdata/provider-tools.json5")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(data, "provider-tools.json5")
	if err != nil {
		t.Fatal(err)
	}
	m := &Set{cfg: cfg}
	for _, tc := range []struct {
		pid, model string
		allow      map[string]bool
	}{
		{"cloud", "big", map[string]bool{"exec": true, "write": true, "grep": false}},
		{"ollama", "small", map[string]bool{"exec": false, "write": false, "read": true, "grep": true}},
		{"ollama", "tiny", map[string]bool{"exec": false, "read": true, "grep": false}},
	} {
		allowed := m.providerTools(tc.pid, tc.model)
		for name, want := range tc.allow {
			if got := allowed(name); got != want {
				t.Errorf("%s/%s: %s allowed = %v, want %v", tc.pid, tc.model, name, got, want)
			}
		}
	}
}

// TestLocalModelWithoutRunner: in the pure build (no openclaw-runner), a
// local model that is not installed says that local models cannot run and
// points to Ollama or a remote provider, never to `openclaw models pull`.
func TestLocalModelWithoutRunner(t *testing.T) {
	cfg, err := config.Parse([]byte(`{}`), "t.json5")
	if err != nil {
		t.Fatal(err)
	}
	registry, err := catalog.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := &Set{cfg: cfg, registry: registry, providers: map[string]failover.Model{},
		findRunner: func() (string, error) {
			return "", errors.New("openclaw-runner not found next to /usr/bin/openclaw-gateway or on PATH")
		}}
	_, _, _, err = m.Resolve([]string{"local/qwen3-1.7b"}, nil)
	if err == nil {
		t.Fatal("a local model resolved without a runner")
	}
	msg := err.Error()
	if strings.Contains(msg, "models pull") || !strings.Contains(msg, "ollama") || !strings.Contains(msg, "openclaw-runner not found") {
		t.Errorf("error: %s", msg)
	}
	// With a runner the old advice stands: the model file is what is missing.
	m.findRunner = func() (string, error) { return "/usr/bin/openclaw-runner", nil }
	if _, _, _, err = m.Resolve([]string{"local/qwen3-1.7b"}, nil); err == nil || !strings.Contains(err.Error(), `openclaw models pull qwen3-1.7b`) {
		t.Errorf("with a runner: %v", err)
	}
}

// remoteOnly is a config of remote providers on loopback ports nothing
// listens on: resolving builds clients, and no test here calls them.
func remoteOnly(t *testing.T) *Set {
	t.Helper()
	cfg, err := config.Parse([]byte(`{
		models: { providers: {
			cloud: { api: 'openai-completions', baseUrl: 'http://127.0.0.1:1', apiKey: 'k',
				models: [{ id: 'big', contextWindow: 64000 }, { id: 'small' }] },
			ollama: { api: 'ollama', baseUrl: 'http://127.0.0.1:2', models: [{ id: 'qwen3:1.7b' }, { id: 'big' }] },
			open: { api: 'anthropic-messages', baseUrl: 'http://127.0.0.1:3', apiKey: 'k' },
		} },
		agents: { defaults: { model: { primary: 'cloud/big', fallbacks: ['ollama/qwen3:1.7b'] } } },
	}`), "t.json5")
	if err != nil {
		t.Fatal(err)
	}
	registry, err := catalog.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return New(Config{Config: cfg, Registry: registry, Client: &http.Client{}})
}

// TestResolve: a chain resolves to its primary's facts; a link that cannot
// serve fails over (the chain still resolves) unless it is the only link,
// which is a no_model error naming the ref and what to fix.
func TestResolve(t *testing.T) {
	m := remoteOnly(t)
	for _, tc := range []struct {
		name    string
		refs    []string
		primary gateway.ModelInfo // Ref, Provider, ID, API, ContextWindow compared
		err     string            // substring of the error; "" resolves
	}{
		{"fallback chain", []string{"cloud/big", "ollama/qwen3:1.7b"},
			gateway.ModelInfo{Ref: "cloud/big", Provider: "cloud", ID: "big", API: config.APIOpenAICompletions, ContextWindow: 64000}, ""},
		{"provider without a model list takes any id", []string{"open/claude-x"},
			gateway.ModelInfo{Ref: "open/claude-x", Provider: "open", ID: "claude-x", API: config.APIAnthropicMessages}, ""},
		{"unknown fallback fails over", []string{"ollama/big", "nope/x"},
			gateway.ModelInfo{Ref: "ollama/big", Provider: "ollama", ID: "big", API: config.APIOllama}, ""},
		{"unknown primary in a chain fails over", []string{"nope/x", "cloud/small"},
			gateway.ModelInfo{Ref: "nope/x"}, ""},
		{"unknown provider", []string{"nope/x"}, gateway.ModelInfo{Ref: "nope/x"}, `provider "nope" is not configured in models.providers`},
		{"model not in the provider's list", []string{"cloud/huge"}, gateway.ModelInfo{Ref: "cloud/huge"}, `"huge" is not defined in models.providers.cloud.models`},
		{"not a ref", []string{"big"}, gateway.ModelInfo{Ref: "big"}, `want "provider/model"`},
		{"white space in the id", []string{"cloud/big model"}, gateway.ModelInfo{Ref: "cloud/big model"}, "white space"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model, info, answered, err := m.Resolve(tc.refs, nil)
			if tc.err != "" {
				var me *engine.ModelError
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.As(err, &me) || me.Kind != engine.ErrNoModel {
					t.Fatalf("err = %v, want a no_model error containing %q", err, tc.err)
				}
				if model != nil || info.Ref != tc.primary.Ref {
					t.Errorf("failed resolve returned model %v, info %+v", model, info)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if model == nil || answered == nil {
				t.Fatal("resolved without a model or its answered func")
			}
			type facts struct{ ref, provider, id, api string }
			got := facts{info.Ref, info.Provider, info.ID, info.API}
			want := facts{tc.primary.Ref, tc.primary.Provider, tc.primary.ID, tc.primary.API}
			if got != want {
				t.Errorf("primary = %+v, want %+v", got, want)
			}
			if tc.primary.ContextWindow != 0 && info.ContextWindow != tc.primary.ContextWindow {
				t.Errorf("context window = %d, want %d", info.ContextWindow, tc.primary.ContextWindow)
			}
			if info.Local {
				t.Error("a remote model resolved as local")
			}
		})
	}
}

// TestResolveBuildsClientsOnce: a provider's client is built on first use
// and shared by every chain after (one per provider and auth profile).
func TestResolveBuildsClientsOnce(t *testing.T) {
	m := remoteOnly(t)
	for range 3 {
		if _, _, _, err := m.Resolve([]string{"cloud/big", "cloud/small", "ollama/big"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := slices.Sorted(maps.Keys(m.providers)); !slices.Equal(got, []string{"cloud@", "ollama@"}) {
		t.Errorf("clients built: %q, want one per provider", got)
	}
}

// TestRefs: every model the providers list, sorted, each once; a provider
// without a list adds none (its ids are open-ended).
func TestRefs(t *testing.T) {
	want := []string{"cloud/big", "cloud/small", "ollama/big", "ollama/qwen3:1.7b"}
	if got := remoteOnly(t).Refs(); !slices.Equal(got, want) {
		t.Errorf("Refs() = %q, want %q", got, want)
	}
}

// TestMissingModels: status names each unusable ref once, with the first
// agent that uses it, without calling any provider.
func TestMissingModels(t *testing.T) {
	m := remoteOnly(t)
	got := m.MissingModels([]gateway.Agent{
		{ID: "main", Model: "cloud/big", Fallbacks: []string{"nope/x", "cloud/huge"}},
		{ID: "work", Model: "nope/x", Fallbacks: []string{"ollama/big"}},
		{ID: "idle"},
	})
	want := []api.ModelProblem{
		{Model: "nope/x", Agent: "main", Problem: `model nope/x: provider "nope" is not configured in models.providers`},
		{Model: "cloud/huge", Agent: "main", Problem: `model cloud/huge: "huge" is not defined in models.providers.cloud.models`},
	}
	if !slices.Equal(got, want) {
		t.Errorf("MissingModels = %+v\nwant %+v", got, want)
	}
}
