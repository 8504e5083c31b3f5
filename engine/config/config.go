// Package config loads, defaults and validates the gateway's one config file:
// JSON5 (comments, unquoted keys, single quotes, trailing commas) with
// OpenClaw's key names (agents.defaults, agents.list, models.providers,
// tools.exec, session.reset, bindings, channels.<name>, gateway). See
// docs/design.md §3, §5 and §7; defaults.json5, embedded here, documents every key
// with its default.
//
// Loading: koanf loads the embedded defaults and then the user's file over
// them through a small JSON5 koanf.Parser; objects merge key by key, arrays
// and scalars replace. The merged tree is then decoded by this package's own
// strict decoder rather than koanf's mapstructure path, because the user must
// see every problem at once with its key path and line
// ("openclaw.json5:12: agents.defualts: unknown key (did you mean
// "defaults"?)"), and mapstructure reports neither.
//
// Choices made where the spec was silent:
//   - A key written twice in one object is an error (JSON5 would silently
//     keep the last one, hiding a pasted block).
//   - null means "not set": the default stays. Unknown keys are errors
//     everywhere except inside channels.<name>, which keeps its extra keys
//     (Channel.Extra) for the channel packages to decode with
//     Config.DecodeChannel.
//   - ${VAR} (upper-case letters, digits, _) is expanded from the environment
//     in every string value, not only apiKey, as OpenClaw does; $${VAR} is a
//     literal ${VAR}. An unset or empty variable is an error naming it.
//   - A provider with an empty models list accepts any model id (Ollama,
//     OpenRouter: the provider's own catalog decides) and ModelDef
//     synthesizes a definition with the default context window.
//   - The provider "local" (api local: GGUF files run by the embedded
//     llama.cpp runner) exists without being configured, and accepts any
//     model id: its models are the files in the model registry
//     (models/catalog, `openclaw models import`), plus those listed under
//     models.providers.local.models with a path. Its id is reserved for api
//     local (an api left out is local). Other api-local providers must list
//     their models, each with a path.
//   - auth.order.<provider> puts those profiles first, in that order; the
//     provider's other profiles follow, by id. An auth profile's mode
//     defaults to api_key, the only mode so far.
//   - models.local.keepAlive is a Go duration ("10m"), "0" (unload after
//     each reply) or "-1" (never unload); any negative duration also means
//     never, as in Ollama. models.local.mlock is refused: the llama.cpp
//     binding does not offer it.
//   - An agent without a workspace gets agents.defaults.workspace when it is
//     the default agent, else "<defaults.workspace>-<id>" (OpenClaw's
//     workspace-<agentId>), so two agents never share memory files by
//     accident. Relative paths resolve against the config file's directory.
//   - Both binaries find the config with Locate: --config,
//     $OPENCLAW_CONFIG_PATH, $OPENCLAW_CONFIG (alias), then openclaw.json
//     or openclaw.json5 in the state dir (--state-dir, $OPENCLAW_STATE_DIR,
//     ~/.openclaw-edge — never OpenClaw's own ~/.openclaw). A state dir
//     holding both files is an error, not a silent choice.
//   - agents.defaults.workspace is empty by default, meaning
//     <state dir>/workspace, so a user install keeps everything in its one
//     directory; Load and Parse, which know no state dir, use the default
//     one.
//   - session.reset.mode: daily (at atHour, plus idle expiry when
//     idleMinutes > 0, whichever comes first), idle (idleMinutes required)
//     or none.
//   - Binding peer kinds are engine's chat types: direct, group, channel,
//     room.
//   - commands.ownerAllowFrom, and the access keys of every account of the
//     channels the gateway serves (email, imessage, whatsapp: dmPolicy,
//     groupPolicy, allowFrom, groupAllowFrom, groups and their allowFrom),
//     are checked with package engine/access/identity, the rules the
//     gateway applies at start and matches senders with, so `openclaw
//     config validate` never says ok to a file the gateway refuses. A key
//     an account inherits from its channel is reported once, at the
//     channel's. OpenClaw's other channels are ignored at start, and their
//     keys are not judged.
package config

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Config is the whole gateway configuration.
type Config struct {
	Agents   Agents             `json:"agents"`
	Models   Models             `json:"models"`
	Auth     Auth               `json:"auth"`
	Session  Session            `json:"session"`
	Tools    Tools              `json:"tools"`
	Bindings []Binding          `json:"bindings"`
	Commands Commands           `json:"commands"`
	Messages Messages           `json:"messages"`
	Channels map[string]Channel `json:"channels"`
	Gateway  Gateway            `json:"gateway"`
	// Discovery: how the gateway announces itself on the LAN.
	Discovery Discovery `json:"discovery"`
	// Memory: citations in memory_search results, the backend.
	Memory Memory `json:"memory"`
	// Cron: the scheduler (cron.go).
	Cron Cron `json:"cron"`

	src      *source  // where the values came from, for line numbers; nil if built in code
	baseDir  string   // directory relative paths resolve against; "" = working directory
	warnings []*Error // problems that do not reject the config (Warnings)

	// raw is the merged tree, ${VAR} expanded, for Value (edit.go).
	raw map[string]any
}

// Warnings returns what Load found worth telling but not worth refusing:
// OpenClaw keys this gateway ignores, a read-only workspace. Ordered by line.
func (c *Config) Warnings() []*Error { return c.warnings }

// Agents holds the defaults every agent inherits and the agents themselves.
type Agents struct {
	Defaults AgentDefaults `json:"defaults"`
	List     []Agent       `json:"list"`
}

// AgentDefaults are the settings shared by all agents (agents.defaults).
type AgentDefaults struct {
	Model             ModelRef   `json:"model"`
	Workspace         string     `json:"workspace"`         // "" (the default) = <state dir>/workspace
	UserTimezone      string     `json:"userTimezone"`      // IANA name; "" = the host's local zone
	PromptMode        string     `json:"promptMode"`        // full | minimal | none
	MaxTurns          int        `json:"maxTurns"`          // tool-loop iterations per turn
	TimeoutSeconds    int        `json:"timeoutSeconds"`    // per turn
	ContextTokens     int        `json:"contextTokens"`     // 0 = the model's context window
	BootstrapMaxChars int        `json:"bootstrapMaxChars"` // per bootstrap file
	ThinkingDefault   string     `json:"thinkingDefault"`   // off | low | medium | high
	MaxTokens         int        `json:"maxTokens"`         // 0 = the model's default
	Compaction        Compaction `json:"compaction"`
	SkipBootstrap     bool       `json:"skipBootstrap"`
	// MemorySearch: the memory index and tools (memory.go).
	MemorySearch MemorySearch `json:"memorySearch"`
	// Heartbeat: the periodic check-in (cron.go).
	Heartbeat Heartbeat `json:"heartbeat"`
	// Subagents: what sessions_spawn may start (engine/tool/sessions).
	Subagents Subagents `json:"subagents"`
}

// Subagents configures sub-agents (agents.defaults.subagents), OpenClaw's
// keys; 0 or "" is the default.
type Subagents struct {
	// MaxConcurrent: sub-agents running at once (default 2: a small box
	// runs one model at a time anyway; OpenClaw's is 8).
	MaxConcurrent int `json:"maxConcurrent"`
	// MaxSpawnDepth: how deep sub-agents nest (default 1: a sub-agent
	// cannot spawn; at most 5, OpenClaw's range).
	MaxSpawnDepth int `json:"maxSpawnDepth"`
	// Model: the sub-agents' model; empty is the agent's. Only its
	// primary is used: the agent's fallbacks follow it.
	Model ModelRef `json:"model"`
}

// Compaction configures the persistent summary of old history (DESIGN §5).
type Compaction struct {
	ReserveTokens      int         `json:"reserveTokens"`
	KeepRecentTokens   int         `json:"keepRecentTokens"`
	ReserveTokensFloor *int        `json:"reserveTokensFloor"` // nil: the default; 0 disables the floor
	MemoryFlush        MemoryFlush `json:"memoryFlush"`
}

// MemoryFlush configures the silent memory-writing turn before compaction.
type MemoryFlush struct {
	Enabled             *bool `json:"enabled"` // nil = true
	SoftThresholdTokens int   `json:"softThresholdTokens"`
}

// IsEnabled reports whether the flush runs (Enabled nil means true).
func (m MemoryFlush) IsEnabled() bool { return m.Enabled == nil || *m.Enabled }

// Agent is one entry of agents.list. Empty fields inherit agents.defaults.
type Agent struct {
	ID        string      `json:"id"`
	Name      string      `json:"name"`
	Default   bool        `json:"default"`
	Model     *ModelRef   `json:"model"`
	Workspace string      `json:"workspace"`
	Tools     *ToolPolicy `json:"tools"`
	Skills    []string    `json:"skills"` // nil = all skills, [] = none
	// MemorySearch overrides agents.defaults.memorySearch field by field.
	MemorySearch *MemorySearch `json:"memorySearch"`
	// Heartbeat overrides agents.defaults.heartbeat field by field.
	Heartbeat *Heartbeat `json:"heartbeat"`
}

// ModelRef names a model chain: the primary "provider/model" and the
// fallbacks tried in order. In the file it is either a string (primary only)
// or {primary, fallbacks}.
type ModelRef struct {
	Primary   string   `json:"primary"`
	Fallbacks []string `json:"fallbacks"`
}

// IsZero reports whether no model is configured.
func (m ModelRef) IsZero() bool { return m.Primary == "" && len(m.Fallbacks) == 0 }

// Chain returns the primary followed by the fallbacks.
func (m ModelRef) Chain() []string {
	if m.IsZero() {
		return nil
	}
	return append([]string{m.Primary}, m.Fallbacks...)
}

// UnmarshalJSON accepts "provider/model" or {"primary": …, "fallbacks": […]}.
func (m *ModelRef) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*m = ModelRef{Primary: s}
		return nil
	}
	type plain ModelRef // no UnmarshalJSON: no recursion
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("model ref: want \"provider/model\" or {primary, fallbacks}: %w", err)
	}
	*m = ModelRef(p)
	return nil
}

// MarshalJSON writes the short string form when there are no fallbacks.
func (m ModelRef) MarshalJSON() ([]byte, error) {
	if len(m.Fallbacks) == 0 {
		return json.Marshal(m.Primary)
	}
	type plain ModelRef
	return json.Marshal(plain(m))
}

// Models holds the model providers (models.providers.<name>) and the
// settings of the local runner (models.local).
type Models struct {
	Providers map[string]Provider `json:"providers"`
	Local     LocalModels         `json:"local"`
}

// LocalProvider is the id of the implicit provider of local GGUF models.
const LocalProvider = "local"

// LocalModels configures the embedded llama.cpp runner (models.local).
// LocalRunner returns it resolved.
type LocalModels struct {
	Threads       int    `json:"threads"`       // 0 = physical cores less one, 1 to 4
	ContextSize   int    `json:"contextSize"`   // tokens of KV cache per loaded model
	BatchSize     int    `json:"batchSize"`     // prompt tokens per decode step
	MMap          *bool  `json:"mmap"`          // nil = true
	MLock         bool   `json:"mlock"`         // refused by this binding
	KeepAlive     string `json:"keepAlive"`     // Go duration, "0" or "-1"
	CacheBudgetMB int    `json:"cacheBudgetMB"` // KV-cache memory for kept sessions
	// DiskCacheMB is the disk kept for the sessions' KV caches across
	// runner restarts (<state dir>/kvcache); 0 keeps none.
	DiskCacheMB int    `json:"diskCacheMB"`
	ModelsDir   string `json:"modelsDir"` // "" = <state-dir>/models
	// FlashAttention is llama.cpp's flash attention: "off" (default),
	// "on", or "auto" (on where the model supports it).
	FlashAttention string `json:"flashAttention"`
}

// Auth holds API keys as named profiles (auth.profiles.<id>), the order in
// which a provider's profiles are tried (auth.order.<provider>), and the
// failover cooldowns (docs/design.md §7).
type Auth struct {
	Profiles  map[string]AuthProfile `json:"profiles"`
	Order     map[string][]string    `json:"order"`
	Cooldowns AuthCooldowns          `json:"cooldowns"`
}

// Auth profile modes.
const AuthModeAPIKey = "api_key"

// AuthProfile is one credential of a provider.
type AuthProfile struct {
	ID       string `json:"-"` // its key under auth.profiles; set by AuthProfiles
	Provider string `json:"provider"`
	Mode     string `json:"mode"`   // api_key ("" = api_key)
	APIKey   string `json:"apiKey"` // ${ENV_VAR} expanded at load
}

// AuthCooldowns configures how long failing credentials rest.
type AuthCooldowns struct {
	BillingBackoffHours int `json:"billingBackoffHours"` // first billing cooldown; doubles per strike
	BillingMaxHours     int `json:"billingMaxHours"`     // cap of the billing cooldown
	FailureWindowHours  int `json:"failureWindowHours"`  // how long failures are counted
}

// BillingBackoff returns BillingBackoffHours as a duration.
func (a AuthCooldowns) BillingBackoff() time.Duration {
	return time.Duration(a.BillingBackoffHours) * time.Hour
}

// BillingMax returns BillingMaxHours as a duration.
func (a AuthCooldowns) BillingMax() time.Duration {
	return time.Duration(a.BillingMaxHours) * time.Hour
}

// FailureWindow returns FailureWindowHours as a duration.
func (a AuthCooldowns) FailureWindow() time.Duration {
	return time.Duration(a.FailureWindowHours) * time.Hour
}

// Model provider APIs.
const (
	APIOpenAICompletions = "openai-completions"
	APIAnthropicMessages = "anthropic-messages"
	APIOllama            = "ollama"
	APIGemini            = "gemini"
	APILocal             = "local" // GGUF through the llama.cpp runner
)

// Provider is one model endpoint and the models it serves.
type Provider struct {
	API     string            `json:"api"`
	BaseURL string            `json:"baseUrl"`
	APIKey  string            `json:"apiKey"` // ${ENV_VAR} expanded at load
	Headers map[string]string `json:"headers"`
	Models  []ModelDef        `json:"models"`
}

// Default context windows when a model definition gives none.
const (
	DefaultContextWindow      = 128000
	DefaultLocalContextWindow = 8192
)

// ModelDef describes one model of a provider.
type ModelDef struct {
	ID            string   `json:"id"`
	Name          string   `json:"name"`
	ContextWindow int      `json:"contextWindow"` // default 128000 remote, 8192 local
	MaxTokens     int      `json:"maxTokens"`
	Path          string   `json:"path"` // GGUF file, api=local only
	Reasoning     bool     `json:"reasoning"`
	Input         []string `json:"input"` // text | image; empty = text
}

// Session configures session keys, resets and queueing (DESIGN §3.3–3.4).
type Session struct {
	// DMScope: "" (owners' DMs in the main session, everyone else's in a
	// per-channel-peer one) | main | per-peer | per-channel-peer |
	// per-account-channel-peer.
	DMScope   string       `json:"dmScope"`
	MainKey   string       `json:"mainKey"`
	Reset     SessionReset `json:"reset"`
	QueueMode string       `json:"queueMode"` // sequential ("concurrent" is refused: not supported yet)
}

// SessionReset says when a session key starts a new session by itself.
type SessionReset struct {
	Mode        string `json:"mode"`   // daily | idle | none
	AtHour      *int   `json:"atHour"` // local hour of the daily reset, 0..23; nil = 4
	IdleMinutes int    `json:"idleMinutes"`
}

// Hour returns AtHour, or 4 when unset.
func (r SessionReset) Hour() int {
	if r.AtHour == nil {
		return 4
	}
	return *r.AtHour
}

// Tools is the global tool policy (tools.profile/allow/deny), per-provider
// policies and exec approvals.
type Tools struct {
	ToolPolicy
	ByProvider map[string]ToolPolicy `json:"byProvider"`
	Exec       Exec                  `json:"exec"`
}

// ToolPolicy is one policy layer. Tool names are checked by the gateway,
// which knows the registry.
type ToolPolicy struct {
	Profile string   `json:"profile"` // minimal | coding | messaging | full
	Allow   []string `json:"allow"`
	Deny    []string `json:"deny"`
}

// Exec configures exec approvals (DESIGN §3.7).
type Exec struct {
	Ask                    string   `json:"ask"`      // off | on-miss | always
	Security               string   `json:"security"` // deny | allowlist | full
	SafeBins               []string `json:"safeBins"`
	TimeoutSeconds         int      `json:"timeoutSeconds"`
	ApprovalTimeoutSeconds int      `json:"approvalTimeoutSeconds"`
}

// Commands configures slash commands from channels (OpenClaw's commands).
type Commands struct {
	// OwnerAllowFrom lists the owners: "<channel>:<sender id>" entries
	// ("whatsapp:+15551234567", "email:ann@example.test"). Only owners run
	// privileged commands from a channel; "*" never makes an owner. The
	// local socket's user is always an owner.
	OwnerAllowFrom []string `json:"ownerAllowFrom"`
}

// Messages configures message handling (OpenClaw's messages).
type Messages struct {
	GroupChat GroupChat `json:"groupChat"`
}

// GroupChat is messages.groupChat.
type GroupChat struct {
	// MentionPatterns are regexes (RE2, case-insensitive) that count as a
	// mention of the assistant in group chats: the only mention iMessage
	// and email have.
	MentionPatterns []string `json:"mentionPatterns"`
}

// Binding routes inbound messages that match to an agent.
type Binding struct {
	AgentID string       `json:"agentId"`
	Match   BindingMatch `json:"match"`
}

// BindingMatch selects messages by channel, account and optionally peer.
// An empty AccountID matches every account of the channel.
type BindingMatch struct {
	Channel   string `json:"channel"`
	AccountID string `json:"accountId"`
	Peer      *Peer  `json:"peer"`
}

// Peer is one conversation: Kind is a chat type (direct | group | channel |
// room), ID the platform's chat id.
type Peer struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

// Channel holds the settings every channel shares; Extra keeps the
// channel-specific keys (dmPolicy, allowFrom, accounts…) as parsed, with
// ${VAR} expanded, for the channel package to decode (Config.DecodeChannel).
type Channel struct {
	TextChunkLimit int            `json:"textChunkLimit"` // 0 = the default (cli 20000, others 4000)
	ChunkMode      string         `json:"chunkMode"`      // length | newline
	Extra          map[string]any `json:"-"`
}

// Gateway configures the daemon itself.
type Gateway struct {
	Socket   string `json:"socket"`   // control API socket; "" = the gateway's default
	LogLevel string `json:"logLevel"` // debug | info | warn | error
	// Bind is OpenClaw's gateway.bind: "loopback" (127.0.0.1 and ::1
	// only), "lan" (every address of the box), or one IP address. The
	// TLS control API for paired devices listens there (docs/design.md §9).
	Bind string `json:"bind"`
	Port int    `json:"port"` // OpenClaw's gateway.port: 18789
}

// Discovery is OpenClaw's discovery block: mDNS announcement of the
// gateway's TLS API (_openclaw-gw._tcp).
type Discovery struct {
	MDNS *bool `json:"mdns"` // nil/true: announce when bound beyond loopback; false: never
}

// MDNSEnabled says whether the gateway announces itself over mDNS.
func (d Discovery) MDNSEnabled() bool { return d.MDNS == nil || *d.MDNS }

//go:embed defaults.json5
var defaultsJSON5 []byte

// Default returns the built-in configuration: one agent "main" (the
// default) on the local model local/qwen3-1.7b, no other model providers,
// tool profile "coding", exec approvals on.
func Default() *Config {
	c, err := parse(nil, "defaults.json5", os.LookupEnv, "")
	if err != nil {
		panic("config: embedded defaults are invalid: " + err.Error()) // caught by tests
	}
	return c
}

// Load reads the config file at path over the defaults and validates it,
// the agents' workspaces included (see Check). path "" gives the defaults.
// On any error the config is nil; warnings are in Config.Warnings.
func Load(path string) (*Config, error) { return LoadIn(path, "") }

// LoadIn is Load with the default workspace (agents.defaults.workspace left
// empty) under stateDir: <stateDir>/workspace. stateDir "" is the default
// state dir, ~/.openclaw-edge.
func LoadIn(path, stateDir string) (*Config, error) {
	c, _, err := load(path, stateDir, true)
	return c, err
}

// Check is Load that also returns the warnings when the config is rejected,
// for `openclaw config validate`. Besides the file's own problems it checks
// each agent's workspace on disk, creating nothing: one that does not exist
// must be creatable (its nearest existing parent a writable directory), and
// an existing read-only one is a warning.
func Check(path string) (*Config, []*Error, error) { return load(path, "", true) }

// CheckIn is Check with the default workspace under stateDir (see LoadIn).
func CheckIn(path, stateDir string) (*Config, []*Error, error) { return load(path, stateDir, true) }

// load is Load/Check; checkFS=false skips the workspace checks (tests of
// fixture files whose paths do not exist here).
func load(path, stateDir string, checkFS bool) (*Config, []*Error, error) {
	if path == "" {
		return parseChecked(nil, "built-in defaults", os.LookupEnv, "", stateDir, checkFS)
	}
	data, err := readConfigFile(path)
	if err != nil {
		return nil, nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, fmt.Errorf("load config: %w", err)
	}
	return parseChecked(data, path, os.LookupEnv, filepath.Dir(abs), stateDir, checkFS)
}

// Parse is Load from bytes; name names the source in error messages.
// Relative paths in the config resolve against the working directory.
func Parse(data []byte, name string) (*Config, error) {
	return parse(data, name, os.LookupEnv, "")
}
