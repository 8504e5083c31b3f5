package config

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDefaults(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	d := c.Agents.Defaults
	checks := []struct {
		name      string
		got, want any
	}{
		{"model", d.Model, ModelRef{Primary: "local/qwen3-1.7b"}},
		{"workspace", d.Workspace, filepath.Join(DefaultStateDir(), "workspace")},
		{"userTimezone", d.UserTimezone, ""},
		{"promptMode", d.PromptMode, "full"},
		{"maxTurns", d.MaxTurns, 20},
		{"timeoutSeconds", d.TimeoutSeconds, 600},
		{"bootstrapMaxChars", d.BootstrapMaxChars, 20000},
		{"thinkingDefault", d.ThinkingDefault, "off"},
		{"compaction.reserveTokens", d.Compaction.ReserveTokens, 0},
		{"compaction.keepRecentTokens", d.Compaction.KeepRecentTokens, 0},
		{"compaction.reserveTokensFloor", d.Compaction.ReserveTokensFloor, (*int)(nil)},
		{"memoryFlush.enabled", d.Compaction.MemoryFlush.IsEnabled(), true},
		{"memoryFlush.softThresholdTokens", d.Compaction.MemoryFlush.SoftThresholdTokens, 0},
		{"agents.list", c.Agents.List, []Agent{{ID: "main", Default: true}}},
		{"providers", len(c.Models.Providers), 0},
		{"session.dmScope", c.Session.DMScope, ""},
		{"session.mainKey", c.Session.MainKey, "main"},
		{"session.reset.mode", c.Session.Reset.Mode, "daily"},
		{"session.reset.atHour", c.Session.Reset.Hour(), 4},
		{"session.queueMode", c.Session.QueueMode, "sequential"},
		{"tools.profile", c.Tools.Profile, "coding"},
		{"tools.exec.ask", c.Tools.Exec.Ask, "on-miss"},
		{"tools.exec.security", c.Tools.Exec.Security, "allowlist"},
		{"tools.exec.safeBins", c.Tools.Exec.SafeBins, strings.Fields("ls cat head tail wc echo pwd date whoami uname grep sort uniq cut tr true false")},
		{"tools.exec.timeoutSeconds", c.Tools.Exec.TimeoutSeconds, 120},
		{"tools.exec.approvalTimeoutSeconds", c.Tools.Exec.ApprovalTimeoutSeconds, 120},
		{"bindings", len(c.Bindings), 0},
		{"gateway.logLevel", c.Gateway.LogLevel, "info"},
		{"defaultAgent", c.DefaultAgentID(), "main"},
		{"auth.profiles", len(c.Auth.Profiles), 0},
		{"auth.order", len(c.Auth.Order), 0},
		{"auth.cooldowns", c.Auth.Cooldowns, AuthCooldowns{BillingBackoffHours: 24, BillingMaxHours: 168, FailureWindowHours: 1}},
		{"auth.cooldowns.billingBackoff", c.Auth.Cooldowns.BillingBackoff(), 24 * time.Hour},
		{"auth.cooldowns.billingMax", c.Auth.Cooldowns.BillingMax(), 168 * time.Hour},
		{"auth.cooldowns.failureWindow", c.Auth.Cooldowns.FailureWindow(), time.Hour},
		{"authProfiles", c.AuthProfiles("openai"), []AuthProfile(nil)},
		{"models.local.threads", c.Models.Local.Threads, 0},
		{"models.local.contextSize", c.Models.Local.ContextSize, 4096},
		{"models.local.batchSize", c.Models.Local.BatchSize, 512},
		{"models.local.mmap", *c.Models.Local.MMap, true},
		{"models.local.mlock", c.Models.Local.MLock, false},
		{"models.local.keepAlive", c.Models.Local.KeepAlive, "10m"},
		{"models.local.cacheBudgetMB", c.Models.Local.CacheBudgetMB, 512},
		{"models.local.diskCacheMB", c.Models.Local.DiskCacheMB, 512},
		{"models.local.modelsDir", c.Models.Local.ModelsDir, ""},
	}
	for _, tc := range checks {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s = %#v, want %#v", tc.name, tc.got, tc.want)
		}
	}
	for _, ch := range []struct {
		name  string
		limit int
		mode  string
	}{{"cli", 20000, "length"}, {"webchat", 20000, "length"}, {"whatsapp", 4000, "length"}} {
		if l, m := c.ChunkLimit(ch.name); l != ch.limit || m != ch.mode {
			t.Errorf("ChunkLimit(%q) = %d, %q; want %d, %q", ch.name, l, m, ch.limit, ch.mode)
		}
	}
	a, ok := c.Agent("main")
	if !ok {
		t.Fatal(`Agent("main") not found`)
	}
	if home, err := os.UserHomeDir(); err == nil && a.Workspace != filepath.Join(home, ".openclaw-edge", "workspace") {
		t.Errorf("main workspace = %q", a.Workspace)
	}
	if !a.Default || a.Name != "main" || a.MaxTurns != 20 || a.PromptMode != "full" || a.Model.Primary != "local/qwen3-1.7b" {
		t.Errorf("resolved main = %+v", a)
	}

	// The default model is a local one, valid with no provider configured.
	p, md, err := c.ModelDef("local/qwen3-1.7b")
	if err != nil || p.API != APILocal || !reflect.DeepEqual(md, ModelDef{ID: "qwen3-1.7b", ContextWindow: DefaultLocalContextWindow}) {
		t.Errorf("ModelDef(local/qwen3-1.7b) = %+v, %+v, %v", p, md, err)
	}
	r := c.LocalRunner()
	if r.Threads < 1 || r.Threads > 4 || r.ContextSize != 4096 || r.BatchSize != 512 || !r.MMap || r.MLock ||
		r.KeepAlive != 10*time.Minute || r.CacheBudget != 512<<20 || r.ModelsDir != "" {
		t.Errorf("LocalRunner = %+v", r)
	}
}

func TestLoadEmptyPathAndEmptyFiles(t *testing.T) {
	want := Default()
	for name, data := range map[string]string{
		"empty":       "",
		"blank":       " \n\t\n",
		"comments":    "// nothing yet\n/* still nothing */\n",
		"emptyObject": "{}",
	} {
		c, err := Parse([]byte(data), name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(publicView(c), publicView(want)) {
			t.Errorf("%s: differs from the defaults", name)
		}
	}
	c, err := Load("")
	if err != nil || !reflect.DeepEqual(publicView(c), publicView(want)) {
		t.Errorf(`Load("") = %v, %v; want the defaults`, c, err)
	}
}

// publicView drops the unexported source bookkeeping for comparisons.
func publicView(c *Config) Config {
	v := *c
	v.src, v.baseDir, v.warnings = nil, "", nil
	return v
}

func TestLoadFull(t *testing.T) {
	t.Setenv("TEST_ANTHROPIC_KEY", "sk-ant-test")
	c, _, err := load("testdata/full.json5", "", false) // its /srv paths need not exist here
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := filepath.Abs("testdata")
	d := c.Agents.Defaults
	hour := 0
	f := false
	checks := []struct {
		name      string
		got, want any
	}{
		{"model", d.Model, ModelRef{Primary: "local/qwen3-1.7b", Fallbacks: []string{"ollama/llama3.2:3b", "anthropic/claude-sonnet-4-5"}}},
		{"workspace", d.Workspace, "/srv/openclaw/workspace"},
		{"userTimezone", d.UserTimezone, "Europe/Madrid"},
		{"maxTurns", d.MaxTurns, 12},
		{"timeoutSeconds", d.TimeoutSeconds, 300},
		{"contextTokens", d.ContextTokens, 32768},
		{"bootstrapMaxChars", d.BootstrapMaxChars, 15000},
		{"thinkingDefault", d.ThinkingDefault, "low"},
		{"maxTokens", d.MaxTokens, 4096},
		{"compaction", d.Compaction, Compaction{ReserveTokens: 8192, KeepRecentTokens: 10000, ReserveTokensFloor: new(int),
			MemoryFlush: MemoryFlush{Enabled: &f, SoftThresholdTokens: 2000}}},
		{"agents", c.Agents.List, []Agent{
			{ID: "main", Name: "Home", Default: true, Skills: []string{"weather"}},
			{ID: "work", Model: &ModelRef{Primary: "openrouter/meta-llama/llama-3.3-70b-instruct"}, Workspace: "work-ws",
				Tools: &ToolPolicy{Profile: "messaging", Deny: []string{"exec"}}, Skills: []string{}},
		}},
		{"local", c.Models.Providers["local"], Provider{API: "local", Models: []ModelDef{
			{ID: "qwen3-1.7b", Name: "Qwen3 1.7B", Path: "/var/lib/openclaw/models/qwen3-1.7b-q4_k_m.gguf", ContextWindow: 32768, Reasoning: true},
			{ID: "gemma-2b", Path: "models/gemma.gguf", ContextWindow: 8192},
		}}},
		{"anthropic", c.Models.Providers["anthropic"], Provider{API: "anthropic-messages", APIKey: "sk-ant-test",
			Headers: map[string]string{"anthropic-beta": "prompt-caching-2024-07-31"},
			Models:  []ModelDef{{ID: "claude-sonnet-4-5", ContextWindow: 200000, MaxTokens: 8192, Input: []string{"text", "image"}}}}},
		{"openrouter", c.Models.Providers["openrouter"], Provider{API: "openai-completions", BaseURL: "https://openrouter.ai/api/v1",
			APIKey: "sk-${NOT_EXPANDED}", Models: []ModelDef{}}},
		{"session", c.Session, Session{DMScope: "per-channel-peer", MainKey: "home",
			Reset: SessionReset{Mode: "daily", AtHour: &hour, IdleMinutes: 240}, QueueMode: "sequential"}},
		{"tools", c.Tools, Tools{
			ToolPolicy: ToolPolicy{Profile: "full", Allow: []string{"group:fs", "exec"}, Deny: []string{"sessions_spawn"}},
			ByProvider: map[string]ToolPolicy{"ollama": {Profile: "minimal"}, "ollama/llama3.2:3b": {Allow: []string{"read"}}},
			Exec:       Exec{Ask: "always", Security: "full", SafeBins: []string{"ls", "git"}, TimeoutSeconds: 60, ApprovalTimeoutSeconds: 300},
		}},
		{"bindings", c.Bindings, []Binding{
			{AgentID: "main", Match: BindingMatch{Channel: "whatsapp", AccountID: "default"}},
			{AgentID: "work", Match: BindingMatch{Channel: "email"}},
			{AgentID: "work", Match: BindingMatch{Channel: "whatsapp", Peer: &Peer{Kind: "group", ID: "120363@g.us"}}},
		}},
		{"whatsapp", c.Channels["whatsapp"], Channel{TextChunkLimit: 3000, ChunkMode: "newline", Extra: map[string]any{
			"dmPolicy":  "pairing",
			"allowFrom": []any{"+34600000000"},
			"groups":    map[string]any{"120363@g.us": map[string]any{"requireMention": true}},
		}}},
		{"email", c.Channels["email"].Extra, map[string]any{"password": "sk-ant-test"}},
		{"cli kept", c.Channels["cli"].TextChunkLimit, 20000},
		{"gateway", c.Gateway, Gateway{Socket: "/run/openclaw/gateway.sock", LogLevel: "debug", Bind: "loopback", Port: 18789}},
		{"models.local", c.Models.Local, LocalModels{Threads: 2, ContextSize: 8192, BatchSize: 256, MMap: &f,
			KeepAlive: "-1", CacheBudgetMB: 1024, DiskCacheMB: 512, ModelsDir: "models", FlashAttention: "off"}},
		{"localRunner", c.LocalRunner(), LocalRunner{Threads: 2, ContextSize: 8192, BatchSize: 256, MMap: false,
			KeepAlive: KeepForever, CacheBudget: 1 << 30, DiskCache: 512 << 20, ModelsDir: filepath.Join(dir, "models"), FlashAttention: "off"}},
		{"auth.profiles", c.Auth.Profiles, map[string]AuthProfile{
			"anthropic:work":  {Provider: "anthropic", Mode: "api_key", APIKey: "sk-ant-test"},
			"anthropic:home":  {Provider: "anthropic", APIKey: "sk-ant-home"},
			"anthropic:spare": {Provider: "anthropic", APIKey: "sk-ant-spare"},
			"openrouter:main": {Provider: "openrouter", APIKey: "sk-or"},
		}},
		{"authProfiles(anthropic)", c.AuthProfiles("anthropic"), []AuthProfile{
			{ID: "anthropic:work", Provider: "anthropic", Mode: "api_key", APIKey: "sk-ant-test"},
			{ID: "anthropic:home", Provider: "anthropic", Mode: "api_key", APIKey: "sk-ant-home"},
			{ID: "anthropic:spare", Provider: "anthropic", Mode: "api_key", APIKey: "sk-ant-spare"},
		}},
		{"authProfiles(openrouter)", c.AuthProfiles("openrouter"), []AuthProfile{{ID: "openrouter:main", Provider: "openrouter", Mode: "api_key", APIKey: "sk-or"}}},
		{"authProfiles(ollama)", c.AuthProfiles("ollama"), []AuthProfile(nil)},
		{"auth.order", c.Auth.Order, map[string][]string{"anthropic": {"anthropic:work", "anthropic:home"}}},
		{"auth.cooldowns", c.Auth.Cooldowns, AuthCooldowns{BillingBackoffHours: 12, BillingMaxHours: 96, FailureWindowHours: 2}},
	}
	for _, tc := range checks {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s =\n  %#v\nwant\n  %#v", tc.name, tc.got, tc.want)
		}
	}

	work, ok := c.Agent("work")
	if !ok {
		t.Fatal("no agent work")
	}
	if work.Workspace != filepath.Join(dir, "work-ws") {
		t.Errorf("work workspace = %q, want it relative to the config's directory", work.Workspace)
	}
	if work.Name != "work" || work.Default || work.Model.Primary != "openrouter/meta-llama/llama-3.3-70b-instruct" ||
		work.Tools.Profile != "messaging" || work.Skills == nil || work.MaxTurns != 12 {
		t.Errorf("resolved work = %+v", work)
	}
	main, _ := c.Agent("main")
	if main.Workspace != "/srv/openclaw/workspace" || main.Model.Primary != "local/qwen3-1.7b" || main.Name != "Home" {
		t.Errorf("resolved main = %+v", main)
	}
	if l, m := c.ChunkLimit("whatsapp"); l != 3000 || m != "newline" {
		t.Errorf("ChunkLimit(whatsapp) = %d, %q", l, m)
	}

	type whatsapp struct {
		DMPolicy  string   `json:"dmPolicy"`
		AllowFrom []string `json:"allowFrom"`
		Groups    map[string]struct {
			RequireMention bool `json:"requireMention"`
		} `json:"groups"`
	}
	var w whatsapp
	if err := c.DecodeChannel("whatsapp", &w); err != nil {
		t.Fatal(err)
	}
	if w.DMPolicy != "pairing" || !slices.Equal(w.AllowFrom, []string{"+34600000000"}) || !w.Groups["120363@g.us"].RequireMention {
		t.Errorf("DecodeChannel = %+v", w)
	}
	var strict struct {
		DMPolicy int `json:"dmPolicy"`
	}
	err = c.DecodeChannel("whatsapp", &strict)
	want := `testdata/full.json5:107: channels.whatsapp.dmPolicy: expected a number, got string` + "\n" +
		`testdata/full.json5:108: channels.whatsapp.allowFrom: unknown key (known keys: dmPolicy)` + "\n" +
		`testdata/full.json5:109: channels.whatsapp.groups: unknown key (known keys: dmPolicy)`
	if err == nil || err.Error() != want {
		t.Errorf("strict DecodeChannel error:\n%v\nwant\n%s", err, want)
	}
}

func TestExampleParses(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-openai")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant")
	c, err := Load("testdata/example.json5")
	if err != nil {
		t.Fatal(err)
	}
	if c.DefaultAgentID() != "main" || len(c.Agents.Defaults.Model.Fallbacks) != 2 || c.Models.Providers["openai"].APIKey != "sk-openai" {
		t.Errorf("example parsed to %+v", c)
	}
	if _, md, err := c.ModelDef("ollama/llama3.2:3b"); err != nil || md.ContextWindow != DefaultContextWindow {
		t.Errorf("ModelDef(ollama/llama3.2:3b) = %+v, %v", md, err)
	}
}

// TestBadConfigs: one bad config per row and the exact text the user sees.
func TestBadConfigs(t *testing.T) {
	for _, tc := range []struct {
		name, config, want string
	}{
		{"syntax", "{\n  agents: {\n    defaults: { maxTurns: 3 }\n  }}\n}\n",
			`bad.json5:5: invalid character '}' after top-level value (column 1)`},
		{"syntaxMissingComma", "{\n  session: { dmScope: 'main' mainKey: 'x' },\n}",
			`bad.json5:2: invalid character 'm' after object key:value pair (column 30)`},
		{"unterminated", "{\n  agents: {\n",
			`bad.json5:3: unexpected end of JSON input (column 1)`},
		{"topLevelArray", "[1, 2]",
			`bad.json5: the config must be an object ({…}), got array`},
		{"tooDeep", strings.Repeat("[", 100),
			`bad.json5:1: nested deeper than 64 levels`},
		{"unknownTopLevel", "{ frobnicate: { backend: 'qmd' } }",
			`bad.json5:1: frobnicate: unknown key (known keys: agents, auth, bindings, channels, commands, cron, discovery, gateway, memory, messages, models, session, tools)`},
		{"typo", "{\n  agents: {\n    defualts: { maxTurns: 3 },\n  },\n}",
			`bad.json5:3: agents.defualts: unknown key (did you mean "defaults"?)`},
		{"typoDeep", "{ tools: { exec: { safebins: ['ls'] } } }",
			`bad.json5:1: tools.exec.safebins: unknown key (did you mean "safeBins"?)`},
		{"unknownInAgent", "{ agents: { list: [{ id: 'main', quux: {} }] } }",
			`bad.json5:1: agents.list[0].quux: unknown key (known keys: default, heartbeat, id, memorySearch, model, name, skills, tools, workspace)`},
		{"wrongTypeNumber", "{ agents: { defaults: { maxTurns: 'ten' } } }",
			`bad.json5:1: agents.defaults.maxTurns: expected a number, got string`},
		{"wrongTypeString", "{\n  gateway: {\n    logLevel: 3,\n  },\n}",
			`bad.json5:3: gateway.logLevel: expected a string, got number`},
		{"wrongTypeBool", "{ agents: { defaults: { skipBootstrap: 'yes' } } }",
			`bad.json5:1: agents.defaults.skipBootstrap: expected a boolean (true or false), got string`},
		{"wrongTypeArray", "{ tools: { allow: 'read' } }",
			`bad.json5:1: tools.allow: expected an array, got string`},
		{"wrongTypeObject", "{ session: 'main' }",
			`bad.json5:1: session: expected an object, got string`},
		{"nullInArray", "{ tools: { deny: [null] } }",
			`bad.json5:1: tools.deny[0]: expected a string, got null`},
		{"notInteger", "{ agents: { defaults: { maxTokens: 1.5 } } }",
			`bad.json5:1: agents.defaults.maxTokens: expected an integer, got 1.5`},
		{"negative", "{ agents: { defaults: { compaction: { reserveTokens: -1 } } } }",
			`bad.json5:1: agents.defaults.compaction.reserveTokens: must not be negative, got -1`},
		{"zeroTurns", "{ agents: { defaults: { maxTurns: 0 } } }",
			`bad.json5:1: agents.defaults.maxTurns: must be at least 1, got 0`},
		{"deepSubagents", "{ agents: { defaults: { subagents: { maxSpawnDepth: 9 } } } }",
			`bad.json5:1: agents.defaults.subagents.maxSpawnDepth: must be between 1 and 5 (0: the default, 1), got 9`},
		{"subagentsTypo", "{ agents: { defaults: { subagents: { maxConcurent: 1 } } } }",
			`bad.json5:1: agents.defaults.subagents.maxConcurent: unknown key (did you mean "maxConcurrent"?)`},
		{"badEnum", "{ agents: { defaults: { promptMode: 'short' } } }",
			`bad.json5:1: agents.defaults.promptMode: "short" is not one of full, minimal, none`},
		{"badThinking", "{ agents: { defaults: { thinkingDefault: 'max' } } }",
			`bad.json5:1: agents.defaults.thinkingDefault: "max" is not one of off, low, medium, high`},
		{"badExecAsk", "{ tools: { exec: { ask: 'sometimes' } } }",
			`bad.json5:1: tools.exec.ask: "sometimes" is not one of off, on-miss, always`},
		{"badExecSecurity", "{ tools: { exec: { security: 'loose' } } }",
			`bad.json5:1: tools.exec.security: "loose" is not one of deny, allowlist, full`},
		{"retiredExecAsk", "{ tools: { exec: { ask: 'elevated' } } }",
			`bad.json5:1: tools.exec.ask: "elevated" is no longer a mode; use off, on-miss or always (the owner, never the model, now runs a command outside the sandbox by answering /approve <id> elevated)`},
		{"retiredExecSecurity", "{ tools: { exec: { security: 'sandbox' } } }",
			`bad.json5:1: tools.exec.security: "sandbox" is no longer a mode; use deny, allowlist or full (every exec child now runs in the sandbox, whatever the mode)`},
		{"badProfile", "{ tools: { profile: 'everything' } }",
			`bad.json5:1: tools.profile: "everything" is not one of minimal, coding, messaging, full`},
		{"badDMScope", "{ session: { dmScope: 'per-channel' } }",
			`bad.json5:1: session.dmScope: "per-channel" is not one of main, per-peer, per-channel-peer, per-account-channel-peer`},
		{"badChunkMode", "{ channels: { whatsapp: { chunkMode: 'words' } } }",
			`bad.json5:1: channels.whatsapp.chunkMode: "words" is not one of length, newline`},
		{"badLogLevel", "{ gateway: { logLevel: 'trace' } }",
			`bad.json5:1: gateway.logLevel: "trace" is not one of debug, info, warn, error`},
		{"refNotProviderModel", "{ agents: { defaults: { model: 'gpt-4o' } } }",
			`bad.json5:1: agents.defaults.model.primary: "gpt-4o" is not a model ref: want "provider/model"`},
		{"refUnconfiguredProvider", "{\n  agents: {\n    defaults: {\n      model: { primary: 'openai/gpt-4o' },\n    },\n  },\n}",
			`bad.json5:4: agents.defaults.model.primary: provider "openai" is not configured in models.providers`},
		{"refUndefinedModel", "{\n  models: { providers: { openai: { api: 'openai-completions', models: [{ id: 'gpt-4o' }, { id: 'gpt-4o-mini' }] } } },\n  agents: { list: [{ id: 'main' }, { id: 'work', model: { primary: 'openai/gpt-4o', fallbacks: ['openai/gpt-5'] } }] },\n}",
			`bad.json5:3: agents.list[1].model.fallbacks[0]: model "gpt-5" is not defined in models.providers.openai.models (known: gpt-4o, gpt-4o-mini)`},
		{"fallbacksWithoutPrimary", "{ models: { providers: { o: { api: 'ollama' } } }, agents: { defaults: { model: { fallbacks: ['o/x'] } } } }",
			`bad.json5:1: agents.defaults.model.primary: required when fallbacks are set`},
		{"refWrongType", "{ agents: { defaults: { model: ['a/b'] } } }",
			`bad.json5:1: agents.defaults.model: expected a "provider/model" string or {primary, fallbacks}, got array`},
		{"refUnknownKey", "{ agents: { defaults: { model: { primary: 'a/b', fallback: [] } } } }",
			`bad.json5:1: agents.defaults.model.fallback: unknown key (did you mean "fallbacks"?)` + "\n" +
				`bad.json5:1: agents.defaults.model.primary: provider "a" is not configured in models.providers`},
		{"duplicateAgent", "{\n  agents: { list: [\n    { id: 'main' },\n    { id: 'main' },\n  ] },\n}",
			`bad.json5:4: agents.list[1].id: duplicate agent id "main" (first at agents.list[0])`},
		{"invalidAgentID", "{ agents: { list: [{ id: 'Main Agent' }] } }",
			`bad.json5:1: agents.list[0].id: invalid agent id "Main Agent": use lowercase letters, digits, - and _ (at most 64)`},
		{"missingAgentID", "{ agents: { list: [{ name: 'Home' }] } }",
			`bad.json5:1: agents.list[0].id: required`},
		{"twoDefaults", "{\n  agents: { list: [\n    { id: 'a', default: true },\n    { id: 'b', default: true },\n  ] },\n}",
			`bad.json5:4: agents.list[1].default: more than one default agent (agents.list[0] is already the default)`},
		{"bindingUnknownAgent", "{\n  agents: { list: [{ id: 'main' }, { id: 'home' }] },\n  bindings: [\n    { agentId: 'work', match: { channel: 'email' } },\n  ],\n}",
			`bad.json5:4: bindings[0].agentId: unknown agent "work" (agents: main, home)`},
		{"bindingNoChannel", "{ bindings: [{ agentId: 'main', match: { accountId: 'default' } }] }",
			`bad.json5:1: bindings[0].match.channel: required`},
		{"bindingBadPeer", "{ bindings: [{ agentId: 'main', match: { channel: 'whatsapp', peer: { kind: 'dm' } } }] }",
			`bad.json5:1: bindings[0].match.peer.kind: "dm" is not one of direct, group, channel, room` + "\n" +
				`bad.json5:1: bindings[0].match.peer.id: required`},
		{"atHourRange", "{ session: { reset: { atHour: 24 } } }",
			`bad.json5:1: session.reset.atHour: must be between 0 and 23, got 24`},
		{"idleWithoutMinutes", "{ session: { reset: { mode: 'idle' } } }",
			`bad.json5:1: session.reset.idleMinutes: required when mode is "idle"`},
		{"mainKeyColon", "{ session: { mainKey: 'a:b' } }",
			`bad.json5:1: session.mainKey: "a:b" must not contain ':' or white space`},
		{"providerWithoutAPI", "{\n  models: {\n    providers: {\n      openai: { apiKey: 'sk' },\n    },\n  },\n}",
			`bad.json5:4: models.providers.openai.api: required: one of openai-completions, anthropic-messages, ollama, gemini, local`},
		{"providerBadAPI", "{ models: { providers: { openai: { api: 'openai-responses' } } } }",
			`bad.json5:1: models.providers.openai.api: "openai-responses" is not one of openai-completions, anthropic-messages, ollama, gemini, local`},
		{"providerBadName", "{ models: { providers: { 'Open AI': { api: 'ollama' } } } }",
			`bad.json5:1: models.providers["Open AI"]: invalid provider name "Open AI": use lowercase letters, digits, ., - and _`},
		{"providerBadURL", "{ models: { providers: { o: { api: 'ollama', baseUrl: 'localhost:11434' } } } }",
			`bad.json5:1: models.providers.o.baseUrl: "localhost:11434" is not an http(s) URL`},
		{"localWithoutPath", "{\n  models: { providers: { local: {\n    api: 'local',\n    models: [\n      { id: 'qwen3' },\n    ],\n  } } },\n}",
			`bad.json5:5: models.providers.local.models[0].path: required for api "local" (the GGUF model file)`},
		{"localNoModelsRef", "{ models: { providers: { gguf: { api: 'local' } } }, agents: { defaults: { model: 'gguf/qwen3' } } }",
			`bad.json5:1: agents.defaults.model.primary: provider "gguf" lists no models (api local needs each model with its path)`},
		{"localReserved", "{ models: { providers: { local: { api: 'ollama' } } } }",
			`bad.json5:1: models.providers.local.api: "ollama": the provider id "local" is reserved for models run on this box (api "local"); give this provider another id`},
		{"localWithoutPathImplicitAPI", "{ models: { providers: { local: { models: [{ id: 'x' }] } } } }",
			`bad.json5:1: models.providers.local.models[0].path: required for api "local" (the GGUF model file)`},
		{"localThreads", "{ models: { local: { threads: 1000 } } }",
			`bad.json5:1: models.local.threads: must be at most 256, got 1000`},
		{"localThreadsNegative", "{ models: { local: { threads: -1 } } }",
			`bad.json5:1: models.local.threads: must not be negative, got -1`},
		{"localContextSmall", "{ models: { local: { contextSize: 100, batchSize: 50 } } }",
			`bad.json5:1: models.local.contextSize: must be at least 256, got 100`},
		{"localContextLarge", "{ models: { local: { contextSize: 2000000 } } }",
			`bad.json5:1: models.local.contextSize: must be at most 1048576, got 2000000`},
		{"localBatchZero", "{ models: { local: { batchSize: 0 } } }",
			`bad.json5:1: models.local.batchSize: must be at least 1, got 0`},
		{"localBatchOverContext", "{ models: { local: { contextSize: 2048, batchSize: 4096 } } }",
			`bad.json5:1: models.local.batchSize: must not exceed contextSize (2048), got 4096`},
		{"localMlock", "{\n  models: {\n    local: { mlock: true },\n  },\n}",
			`bad.json5:3: models.local.mlock: not supported: the embedded llama.cpp binding cannot lock the model in memory; leave it false`},
		{"localMmapType", "{ models: { local: { mmap: 'yes' } } }",
			`bad.json5:1: models.local.mmap: expected a boolean (true or false), got string`},
		{"localKeepAlive", "{ models: { local: { keepAlive: '10 minutes' } } }",
			`bad.json5:1: models.local.keepAlive: "10 minutes" is not a keep-alive: want a duration like "10m" or "1h", "0" (unload at once) or "-1" (never)`},
		{"localKeepAliveNumber", "{ models: { local: { keepAlive: 600 } } }",
			`bad.json5:1: models.local.keepAlive: expected a string, got number`},
		{"localFlashAttention", "{ models: { local: { flashAttention: 'yes' } } }",
			`bad.json5:1: models.local.flashAttention: must be "auto", "on" or "off", got "yes"`},
		{"localCacheBudget", "{ models: { local: { cacheBudgetMB: -5 } } }",
			`bad.json5:1: models.local.cacheBudgetMB: must not be negative, got -5`},
		{"localUnknownKey", "{ models: { local: { numCtx: 8192 } } }",
			`bad.json5:1: models.local.numCtx: unknown key (known keys: batchSize, cacheBudgetMB, contextSize, diskCacheMB, flashAttention, keepAlive, mlock, mmap, modelsDir, threads)`},
		{"authProfileNoProvider", "{ auth: { profiles: { p: { apiKey: 'k' } } } }",
			`bad.json5:1: auth.profiles.p.provider: required: the id of a provider in models.providers`},
		{"authProfileUnknownProvider", "{\n  auth: { profiles: {\n    'openai:work': { provider: 'openai', apiKey: 'k' },\n  } },\n}",
			`bad.json5:3: auth.profiles["openai:work"].provider: provider "openai" is not configured in models.providers`},
		{"authProfileLocal", "{ auth: { profiles: { l: { provider: 'local', apiKey: 'k' } } } }",
			`bad.json5:1: auth.profiles.l.provider: provider "local" runs models on this box (api local) and takes no API key`},
		{"authProfileMode", "{ models: { providers: { o: { api: 'ollama' } } }, auth: { profiles: { p: { provider: 'o', mode: 'oauth' } } } }",
			`bad.json5:1: auth.profiles.p.mode: "oauth" is not supported (only "api_key")`},
		{"authProfileNoKey", "{ models: { providers: { o: { api: 'ollama' } } }, auth: { profiles: { p: { provider: 'o', mode: 'api_key' } } } }",
			`bad.json5:1: auth.profiles.p.apiKey: required (e.g. "${OPENAI_API_KEY}")`},
		{"authProfileBadID", "{ models: { providers: { o: { api: 'ollama' } } }, auth: { profiles: { 'my key': { provider: 'o', apiKey: 'k' } } } }",
			`bad.json5:1: auth.profiles["my key"]: invalid profile id "my key": no white space or control characters, at most 128 bytes`},
		{"authProfileUnknownKey", "{ auth: { profiles: { p: { provider: 'o', key: 'k' } } } }",
			`bad.json5:1: auth.profiles.p.key: unknown key (known keys: apiKey, mode, provider)` + "\n" +
				`bad.json5:1: auth.profiles.p.provider: provider "o" is not configured in models.providers` + "\n" +
				`bad.json5:1: auth.profiles.p.apiKey: required (e.g. "${OPENAI_API_KEY}")`},
		{"authProfileEnvUnset", "{ models: { providers: { o: { api: 'ollama' } } }, auth: { profiles: { p: { provider: 'o', apiKey: '${CONFIG_TEST_UNSET_KEY}' } } } }",
			`bad.json5:1: auth.profiles.p.apiKey: environment variable CONFIG_TEST_UNSET_KEY is not set`},
		{"authOrderUnknownProvider", "{ auth: { order: { openai: [] } } }",
			`bad.json5:1: auth.order.openai: provider "openai" is not configured in models.providers`},
		{"authOrderUnknownProfile", "{\n  models: { providers: { o: { api: 'ollama' } } },\n  auth: {\n    profiles: { a: { provider: 'o', apiKey: 'k' } },\n    order: { o: ['a', 'b'] },\n  },\n}",
			`bad.json5:5: auth.order.o[1]: unknown auth profile "b" (profiles of o: a)`},
		{"authOrderNoProfiles", "{ models: { providers: { o: { api: 'ollama' } } }, auth: { order: { o: ['x'] } } }",
			`bad.json5:1: auth.order.o[0]: unknown auth profile "x" (profiles of o: none)`},
		{"authOrderWrongProvider", "{ models: { providers: { o: { api: 'ollama' }, p: { api: 'ollama' } } }, auth: { profiles: { a: { provider: 'p', apiKey: 'k' } }, order: { o: ['a'] } } }",
			`bad.json5:1: auth.order.o[0]: auth profile "a" belongs to provider "p", not "o"`},
		{"authOrderDuplicate", "{ models: { providers: { o: { api: 'ollama' } } }, auth: { profiles: { a: { provider: 'o', apiKey: 'k' } }, order: { o: ['a', 'a'] } } }",
			`bad.json5:1: auth.order.o[1]: duplicate profile "a" (first at auth.order.o[0])`},
		{"authOrderType", "{ auth: { order: { o: 'a' } } }",
			`bad.json5:1: auth.order.o: expected an array, got string`},
		{"authCooldownZero", "{ auth: { cooldowns: { billingBackoffHours: 0, failureWindowHours: 0 } } }",
			`bad.json5:1: auth.cooldowns.billingBackoffHours: must be at least 1, got 0` + "\n" +
				`bad.json5:1: auth.cooldowns.failureWindowHours: must be at least 1, got 0`},
		{"authCooldownMaxBelowBackoff", "{ auth: { cooldowns: { billingBackoffHours: 48, billingMaxHours: 24 } } }",
			`bad.json5:1: auth.cooldowns.billingMaxHours: must be at least billingBackoffHours (48), got 24`},
		{"authCooldownFraction", "{ auth: { cooldowns: { failureWindowHours: 0.5 } } }",
			`bad.json5:1: auth.cooldowns.failureWindowHours: expected an integer, got 0.5`},
		{"authCooldownUnknownKey", "{ auth: { cooldowns: { billingBackofHours: 24 } } }",
			`bad.json5:1: auth.cooldowns.billingBackofHours: unknown key (did you mean "billingBackoffHours"?)`},
		{"duplicateModel", "{ models: { providers: { o: { api: 'ollama', models: [{ id: 'a' }, { id: 'a' }] } } } }",
			`bad.json5:1: models.providers.o.models[1].id: duplicate model id "a" (first at models.providers.o.models[0])`},
		{"badModelInput", "{ models: { providers: { o: { api: 'ollama', models: [{ id: 'a', input: ['audio'] }] } } } }",
			`bad.json5:1: models.providers.o.models[0].input[0]: "audio" is not one of text, image`},
		{"envUnset", "{\n  models: { providers: { openai: {\n    api: 'openai-completions',\n    apiKey: '${CONFIG_TEST_UNSET_KEY}',\n  } } },\n}",
			`bad.json5:4: models.providers.openai.apiKey: environment variable CONFIG_TEST_UNSET_KEY is not set`},
		{"envEmpty", "{ gateway: { socket: '${CONFIG_TEST_EMPTY}/gw.sock' } }",
			`bad.json5:1: gateway.socket: environment variable CONFIG_TEST_EMPTY is empty`},
		{"badTimezone", "{ agents: { defaults: { userTimezone: 'Europe/Madird' } } }",
			`bad.json5:1: agents.defaults.userTimezone: unknown time zone "Europe/Madird" (want an IANA name like Europe/Madrid)`},
		{"badSafeBin", "{ tools: { exec: { safeBins: ['rm -rf'] } } }",
			`bad.json5:1: tools.exec.safeBins[0]: "rm -rf" is not a command name`},
		{"duplicateKey", "{\n  agents: { defaults: { maxTurns: 5 } },\n  tools: {},\n  agents: { list: [] },\n}",
			`bad.json5:4: agents: duplicate key (first at line 2)`},
		{"several", "{\n  agents: { defualts: {} },\n  tools: { exec: { ask: 'never' } },\n  session: { reset: { atHour: -1 } },\n  extra: true,\n}",
			`bad.json5:2: agents.defualts: unknown key (did you mean "defaults"?)` + "\n" +
				`bad.json5:3: tools.exec.ask: "never" is not one of off, on-miss, always` + "\n" +
				`bad.json5:4: session.reset.atHour: must not be negative, got -1` + "\n" +
				`bad.json5:5: extra: unknown key (known keys: agents, auth, bindings, channels, commands, cron, discovery, gateway, memory, messages, models, session, tools)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CONFIG_TEST_EMPTY", "")
			c, err := Parse([]byte(tc.config), "bad.json5")
			if err == nil {
				t.Fatalf("no error; want\n%s", tc.want)
			}
			if c != nil {
				t.Errorf("config returned with an error")
			}
			if err.Error() != tc.want {
				t.Errorf("error:\n%s\nwant:\n%s", err, tc.want)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Errorf("error is not an *Error: %T", err)
			}
		})
	}
}

func TestNullKeepsDefault(t *testing.T) {
	c, err := Parse([]byte(`{ agents: { defaults: { maxTurns: null, model: null } }, tools: { exec: null } }`), "null.json5")
	if err != nil {
		t.Fatal(err)
	}
	if c.Agents.Defaults.MaxTurns != 20 || c.Tools.Exec.Ask != "on-miss" {
		t.Errorf("null replaced a default: maxTurns %d, ask %q", c.Agents.Defaults.MaxTurns, c.Tools.Exec.Ask)
	}
}

func TestMergeOverDefaults(t *testing.T) {
	// Objects merge key by key; arrays replace.
	c, err := Parse([]byte(`{
		agents: { defaults: { compaction: { reserveTokens: 1000 } }, list: [{ id: 'solo' }] },
		tools: { exec: { safeBins: ['ls'] } },
		channels: { cli: { chunkMode: 'newline' } },
	}`), "merge.json5")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Agents.Defaults.Compaction; got.ReserveTokens != 1000 || got.KeepRecentTokens != 0 || !got.MemoryFlush.IsEnabled() {
		t.Errorf("compaction = %+v", got)
	}
	if !slices.Equal(c.Tools.Exec.SafeBins, []string{"ls"}) || c.Tools.Exec.Ask != "on-miss" {
		t.Errorf("exec = %+v", c.Tools.Exec)
	}
	if c.DefaultAgentID() != "solo" {
		t.Errorf("default agent = %q, want the first listed", c.DefaultAgentID())
	}
	if _, ok := c.Agent("main"); ok {
		t.Error(`Agent("main") exists although the list replaced it`)
	}
	if l, m := c.ChunkLimit("cli"); l != 20000 || m != "newline" {
		t.Errorf("cli chunking = %d, %q", l, m)
	}

	c, err = Parse([]byte(`{ agents: { list: [] }, bindings: [{ agentId: 'main', match: { channel: 'cli' } }] }`), "empty-list.json5")
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := c.Agent("main"); !ok || !a.Default || c.DefaultAgentID() != "main" {
		t.Errorf("with no agents listed, main should exist implicitly: %+v %v", a, ok)
	}
}

func TestEnvExpansion(t *testing.T) {
	t.Setenv("CFG_KEY", "sk-123")
	t.Setenv("CFG_HOST", "10.0.0.2")
	lookup := os.LookupEnv
	for _, tc := range []struct {
		in, want string
		problems []string
	}{
		{"plain", "plain", nil},
		{"${CFG_KEY}", "sk-123", nil},
		{"http://${CFG_HOST}:11434/${CFG_KEY}", "http://10.0.0.2:11434/sk-123", nil},
		{"$${CFG_KEY}", "${CFG_KEY}", nil},
		{"${lower}", "${lower}", nil},
		{"${1BAD}", "${1BAD}", nil},
		{"${CFG_KEY", "${CFG_KEY", nil},
		{"$CFG_KEY", "$CFG_KEY", nil},
		{"${CFG_NOPE_A}-${CFG_NOPE_B}", "-", []string{
			"environment variable CFG_NOPE_A is not set", "environment variable CFG_NOPE_B is not set"}},
	} {
		got, problems := expandString(tc.in, lookup)
		if got != tc.want || !slices.Equal(problems, tc.problems) {
			t.Errorf("expandString(%q) = %q, %q; want %q, %q", tc.in, got, problems, tc.want, tc.problems)
		}
	}

	c, err := Parse([]byte(`{ models: { providers: { o: {
		api: 'openai-completions', baseUrl: 'http://${CFG_HOST}/v1', apiKey: '${CFG_KEY}',
		headers: { 'X-Key': 'k ${CFG_KEY}' } } } } }`), "env.json5")
	if err != nil {
		t.Fatal(err)
	}
	p := c.Models.Providers["o"]
	if p.APIKey != "sk-123" || p.BaseURL != "http://10.0.0.2/v1" || p.Headers["X-Key"] != "k sk-123" {
		t.Errorf("expanded provider = %+v", p)
	}
}

func TestModelRefForms(t *testing.T) {
	providers := `models: { providers: { a: { api: 'ollama' }, b: { api: 'ollama' } } }`
	for _, tc := range []struct {
		model string
		want  ModelRef
	}{
		{`'a/x'`, ModelRef{Primary: "a/x"}},
		{`{ primary: 'a/x' }`, ModelRef{Primary: "a/x"}},
		{`{ primary: 'a/x', fallbacks: ['b/y', 'a/z/w'] }`, ModelRef{Primary: "a/x", Fallbacks: []string{"b/y", "a/z/w"}}},
		{`''`, ModelRef{}},
	} {
		c, err := Parse([]byte(`{ `+providers+`, agents: { defaults: { model: `+tc.model+` } } }`), "ref.json5")
		if err != nil {
			t.Errorf("%s: %v", tc.model, err)
			continue
		}
		if !reflect.DeepEqual(c.Agents.Defaults.Model, tc.want) {
			t.Errorf("%s: got %#v, want %#v", tc.model, c.Agents.Defaults.Model, tc.want)
		}
	}

	// The same two forms through encoding/json, and back.
	for in, want := range map[string]ModelRef{
		`"a/x"`:                                 {Primary: "a/x"},
		`{"primary":"a/x","fallbacks":["b/y"]}`: {Primary: "a/x", Fallbacks: []string{"b/y"}},
	} {
		var m ModelRef
		if err := json.Unmarshal([]byte(in), &m); err != nil || !reflect.DeepEqual(m, want) {
			t.Errorf("Unmarshal(%s) = %#v, %v", in, m, err)
		}
		out, err := json.Marshal(m)
		if err != nil || string(out) != in {
			t.Errorf("Marshal(%#v) = %s, %v; want %s", m, out, err, in)
		}
	}
	var m ModelRef
	if err := json.Unmarshal([]byte(`42`), &m); err == nil {
		t.Error("Unmarshal(42) succeeded")
	}
	if got := (ModelRef{Primary: "a/x", Fallbacks: []string{"b/y"}}).Chain(); !slices.Equal(got, []string{"a/x", "b/y"}) {
		t.Errorf("Chain = %q", got)
	}
}

func TestSplitModel(t *testing.T) {
	for _, tc := range []struct {
		ref, provider, model, err string
	}{
		{"anthropic/claude-x", "anthropic", "claude-x", ""},
		{"openrouter/meta-llama/llama-3.3-70b", "openrouter", "meta-llama/llama-3.3-70b", ""},
		{"ollama/llama3.2:3b", "ollama", "llama3.2:3b", ""},
		{"gpt-4o", "", "", `"gpt-4o" is not a model ref: want "provider/model"`},
		{"/x", "", "", `"/x" is not a model ref: want "provider/model"`},
		{"a/", "", "", `"a/" is not a model ref: want "provider/model"`},
		{"", "", "", `"" is not a model ref: want "provider/model"`},
		{"Open AI/x", "", "", `model ref "Open AI/x": invalid provider name "Open AI"`},
		{"a/x y", "", "", `model ref "a/x y": model id contains white space`},
	} {
		p, m, err := SplitModel(tc.ref)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if p != tc.provider || m != tc.model || gotErr != tc.err {
			t.Errorf("SplitModel(%q) = %q, %q, %q; want %q, %q, %q", tc.ref, p, m, gotErr, tc.provider, tc.model, tc.err)
		}
	}
}

func TestModelDef(t *testing.T) {
	t.Setenv("TEST_ANTHROPIC_KEY", "k")
	c, _, err := load("testdata/full.json5", "", false) // its /srv paths need not exist here
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := filepath.Abs("testdata")
	for _, tc := range []struct {
		ref, api string
		def      ModelDef
		err      string
	}{
		{"anthropic/claude-sonnet-4-5", "anthropic-messages", ModelDef{ID: "claude-sonnet-4-5", ContextWindow: 200000, MaxTokens: 8192, Input: []string{"text", "image"}}, ""},
		{"local/gemma-2b", "local", ModelDef{ID: "gemma-2b", Path: filepath.Join(dir, "models/gemma.gguf"), ContextWindow: 8192}, ""},
		{"openrouter/meta-llama/llama-3.3-70b-instruct", "openai-completions", ModelDef{ID: "meta-llama/llama-3.3-70b-instruct", ContextWindow: 128000}, ""},
		{"local/nope", "local", ModelDef{ID: "nope", ContextWindow: 8192}, ""}, // the model registry may know it
		{"gemini/flash", "", ModelDef{}, `model gemini/flash: provider "gemini" is not configured in models.providers`},
		{"flash", "", ModelDef{}, `"flash" is not a model ref: want "provider/model"`},
	} {
		p, md, err := c.ModelDef(tc.ref)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if p.API != tc.api || !reflect.DeepEqual(md, tc.def) || gotErr != tc.err {
			t.Errorf("ModelDef(%q) = %q, %#v, %q; want %q, %#v, %q", tc.ref, p.API, md, gotErr, tc.api, tc.def, tc.err)
		}
	}
}

func TestAgentWorkspaces(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home directory")
	}
	c, err := Parse([]byte(`{ agents: { list: [{ id: 'a' }, { id: 'b', default: true }, { id: 'c', workspace: '~/c-ws' }] } }`), "ws.json5")
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{
		"a": filepath.Join(home, ".openclaw-edge", "workspace-a"),
		"b": filepath.Join(home, ".openclaw-edge", "workspace"),
		"c": filepath.Join(home, "c-ws"),
	} {
		a, ok := c.Agent(id)
		if !ok || a.Workspace != want {
			t.Errorf("Agent(%q).Workspace = %q, %v; want %q", id, a.Workspace, ok, want)
		}
	}
	if c.DefaultAgentID() != "b" {
		t.Errorf("DefaultAgentID = %q", c.DefaultAgentID())
	}
	if _, ok := c.Agent("zzz"); ok {
		t.Error("unknown agent resolved")
	}
}

func TestExpandHome(t *testing.T) {
	t.Setenv("HOME", "/home/claw")
	for in, want := range map[string]string{
		"~":         "/home/claw",
		"~/ws":      "/home/claw/ws",
		"~other/ws": "~other/ws",
		"/abs/~":    "/abs/~",
		"rel":       "rel",
		"":          "",
	} {
		if got := ExpandHome(in); got != want {
			t.Errorf("ExpandHome(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "missing.json5"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
	path := filepath.Join(t.TempDir(), "big.json5")
	if err := os.WriteFile(path, make([]byte, maxFileSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized file: %v", err)
	}
}

func TestValidateInCode(t *testing.T) {
	c := Default()
	c.Agents.List = append(c.Agents.List, Agent{ID: "main", Default: true})
	c.Bindings = []Binding{{AgentID: "ghost", Match: BindingMatch{Channel: "cli"}}}
	want := `defaults.json5: agents.list[1].id: duplicate agent id "main" (first at agents.list[0])` + "\n" +
		`defaults.json5: agents.list[1].default: more than one default agent (agents.list[0] is already the default)` + "\n" +
		`defaults.json5: bindings[0].agentId: unknown agent "ghost" (agents: main, main)`
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Errorf("Validate:\n%v\nwant:\n%s", err, want)
	}
	if err := (&Config{}).Validate(); err == nil {
		t.Error("the zero Config validated")
	}
}

func TestErrorFormat(t *testing.T) {
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{File: "a.json5", Line: 3, Path: "x.y", Reason: "bad"}, "a.json5:3: x.y: bad"},
		{Error{File: "a.json5", Path: "x.y", Reason: "bad"}, "a.json5: x.y: bad"},
		{Error{File: "a.json5", Line: 2, Reason: "bad"}, "a.json5:2: bad"},
		{Error{Line: 2, Path: "x", Reason: "bad"}, "line 2: x: bad"},
		{Error{Path: "x", Reason: "bad"}, "x: bad"},
		{Error{Reason: "bad"}, "bad"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.e, got, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"testdata/full.json5", "testdata/example.json5", "defaults.json5"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"", "{}", "[]", "null", "{a:", "{'x':'\\u12", "/*", "{agents:{list:[{id:'a',model:{primary:'x/y'}}]}}",
		"{channels:{x:{y:[1,{z:null}]}}}", "{models:{providers:{p:{api:'local',models:[{id:'m'}]}}}}",
		"{gateway:{socket:'${A}$${B}'}}", "{session:{reset:{atHour:1e400}}}", "{a:0x10,b:+Infinity,c:.5}",
		"{models:{local:{keepAlive:'-1',mlock:true,contextSize:300,batchSize:400}}}",
		"{models:{providers:{o:{api:'ollama'}}},auth:{profiles:{a:{provider:'o',apiKey:'k'}},order:{o:['a','b']},cooldowns:{billingMaxHours:1}}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "fuzz.json5")
		if err != nil {
			if c != nil {
				t.Fatal("config returned with an error")
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error is not an *Error: %T %v", err, err)
			}
			return
		}
		if verr := c.Validate(); verr != nil {
			t.Fatalf("Parse accepted a config that Validate rejects: %v", verr)
		}
		for _, a := range c.Agents.List {
			if _, ok := c.Agent(a.ID); !ok {
				t.Fatalf("listed agent %q does not resolve", a.ID)
			}
		}
		if _, ok := c.Agent(c.DefaultAgentID()); !ok {
			t.Fatal("default agent does not resolve")
		}
	})
}

func TestDecodeChannelAccounts(t *testing.T) {
	type acct struct {
		DMPolicy       string   `json:"dmPolicy"`
		AllowFrom      []string `json:"allowFrom"`
		Address        string   `json:"address"`
		TextChunkLimit int      `json:"textChunkLimit"`
	}
	c, err := Parse([]byte(`{ channels: {
		email: { dmPolicy: 'open', textChunkLimit: 900, accounts: {
			home: { address: 'a@x.test' },
			work: { address: 'b@y.test', dmPolicy: 'allowlist', allowFrom: ['boss@y.test'], textChunkLimit: 100 },
			old: { address: 'c@z.test', enabled: false } } },
		whatsapp: { allowFrom: ['+15550001111'] },
		imessage: { enabled: false, dmPolicy: 'open' },
	} }`), "t.json5")
	if err != nil {
		t.Fatal(err)
	}
	metas, vals, err := c.DecodeChannelAccounts("email", func() any { return new(acct) })
	if err != nil {
		t.Fatal(err)
	}
	if len(metas) != 2 || metas[0].ID != "home" || metas[1].ID != "work" {
		t.Fatalf("accounts %+v", metas)
	}
	home, work := vals[0].(*acct), vals[1].(*acct)
	if home.DMPolicy != "open" || home.Address != "a@x.test" || work.DMPolicy != "allowlist" || work.AllowFrom[0] != "boss@y.test" {
		t.Fatalf("home %+v work %+v", home, work)
	}
	if metas[0].ChunkLimit != 900 || metas[1].ChunkLimit != 100 {
		t.Fatalf("chunk limits %+v", metas)
	}
	metas, vals, err = c.DecodeChannelAccounts("whatsapp", func() any { return new(acct) })
	if err != nil || len(metas) != 1 || metas[0].ID != "default" || vals[0].(*acct).AllowFrom[0] != "+15550001111" || metas[0].ChunkLimit != 4000 {
		t.Fatalf("whatsapp %v %+v", err, metas)
	}
	if metas, _, err := c.DecodeChannelAccounts("imessage", func() any { return new(acct) }); err != nil || len(metas) != 0 {
		t.Fatalf("disabled channel: %v %+v", err, metas)
	}
	c, err = Parse([]byte(`{ channels: { email: { accounts: { home: { adress: 'x' } } } } }`), "t.json5")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.DecodeChannelAccounts("email", func() any { return new(acct) })
	if err == nil || !strings.Contains(err.Error(), "channels.email.accounts.home.adress: unknown key") {
		t.Fatalf("got %v", err)
	}
}
