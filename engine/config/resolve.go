package config

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"
)

// DefaultAgentID returns the agent with default:true, else the first one
// listed, else "main".
func (c *Config) DefaultAgentID() string {
	for _, a := range c.Agents.List {
		if a.Default {
			return a.ID
		}
	}
	if len(c.Agents.List) > 0 {
		return c.Agents.List[0].ID
	}
	return "main"
}

// ResolvedAgent is an agent with agents.defaults applied.
type ResolvedAgent struct {
	ID, Name  string
	Workspace string   // absolute, ~ expanded
	Model     ModelRef // the agent's, else agents.defaults.model
	Tools     ToolPolicy
	// Tools is the agent layer only; the gateway stacks it on the global,
	// provider and profile layers.
	PromptMode        string
	MaxTurns          int
	TimeoutSeconds    int
	ContextTokens     int
	BootstrapMaxChars int
	MaxTokens         int
	ThinkingDefault   string
	Skills            []string // nil = all skills
	Default           bool

	UserTimezone  string
	SkipBootstrap bool
	Compaction    Compaction
	MemorySearch  MemorySearch // defaults merged with the agent's own
	Heartbeat     Heartbeat    // defaults merged with the agent's own
	// HeartbeatOwn: the agent has a heartbeat block of its own (when any
	// agent has one, only those agents beat: OpenClaw's rule).
	HeartbeatOwn bool
}

// Agent returns agent id with the defaults merged in. With no agents
// listed, "main" exists implicitly.
func (c *Config) Agent(id string) (ResolvedAgent, bool) {
	var a Agent
	i := slices.IndexFunc(c.Agents.List, func(a Agent) bool { return a.ID == id })
	switch {
	case i >= 0:
		a = c.Agents.List[i]
	case len(c.Agents.List) == 0 && id == "main":
		a = Agent{ID: "main"}
	default:
		return ResolvedAgent{}, false
	}
	d := c.Agents.Defaults
	isDefault := id == c.DefaultAgentID()
	r := ResolvedAgent{
		ID:                a.ID,
		Name:              a.Name,
		Model:             d.Model,
		PromptMode:        d.PromptMode,
		MaxTurns:          d.MaxTurns,
		TimeoutSeconds:    d.TimeoutSeconds,
		ContextTokens:     d.ContextTokens,
		BootstrapMaxChars: d.BootstrapMaxChars,
		MaxTokens:         d.MaxTokens,
		ThinkingDefault:   d.ThinkingDefault,
		Skills:            a.Skills,
		Default:           isDefault,
		UserTimezone:      d.UserTimezone,
		SkipBootstrap:     d.SkipBootstrap,
		Compaction:        d.Compaction,
		MemorySearch:      mergeMemorySearch(d.MemorySearch, a.MemorySearch),
		Heartbeat:         mergeHeartbeat(d.Heartbeat, a.Heartbeat),
		HeartbeatOwn:      a.Heartbeat != nil,
	}
	if r.Name == "" {
		r.Name = a.ID
	}
	if a.Model != nil && !a.Model.IsZero() {
		r.Model = *a.Model
	}
	if a.Tools != nil {
		r.Tools = *a.Tools
	}
	ws := a.Workspace
	if ws == "" {
		ws = d.Workspace
		if !isDefault {
			ws = strings.TrimRight(ws, `/\`) + "-" + a.ID
		}
	}
	r.Workspace = c.absPath(ws)
	return r, true
}

// absPath expands ~ and makes p absolute against the config file's
// directory (or the working directory).
func (c *Config) absPath(p string) string {
	p = ExpandHome(p)
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	if c.baseDir != "" {
		return filepath.Join(c.baseDir, p)
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// ExpandHome replaces a leading "~" or "~/" with the user's home directory.
// Other paths, and all paths when the home directory is unknown, are
// returned as they are.
func ExpandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") && !strings.HasPrefix(p, `~\`) {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return p
	}
	return filepath.Join(home, p[1:])
}

// SplitModel splits "provider/model" at the first "/": the model id may
// itself contain "/" ("openrouter/meta-llama/llama-3.3-70b").
func SplitModel(ref string) (provider, model string, err error) {
	provider, model, ok := strings.Cut(ref, "/")
	switch {
	case !ok || provider == "" || model == "":
		return "", "", fmt.Errorf("%q is not a model ref: want \"provider/model\"", ref)
	case !validProviderName(provider):
		return "", "", fmt.Errorf("model ref %q: invalid provider name %q", ref, provider)
	case strings.ContainsAny(model, " \t\r\n"):
		return "", "", fmt.Errorf("model ref %q: model id contains white space", ref)
	}
	return provider, model, nil
}

// Provider returns the provider with id from models.providers. The local
// provider (api local) exists even when the file does not list it.
func (c *Config) Provider(id string) (Provider, bool) {
	p, ok := c.Models.Providers[id]
	if !ok && id == LocalProvider {
		return Provider{API: APILocal}, true
	}
	return p, ok
}

// ModelDef looks up ref in models.providers. A provider that lists no models
// (and is not api local) accepts any model id, and so does the local
// provider: the definition returned then has only the id and the default
// context window, and for local models no Path (the model registry knows
// the file).
func (c *Config) ModelDef(ref string) (Provider, ModelDef, error) {
	prov, model, err := SplitModel(ref)
	if err != nil {
		return Provider{}, ModelDef{}, err
	}
	p, ok := c.Provider(prov)
	if !ok {
		return Provider{}, ModelDef{}, fmt.Errorf("model %s: provider %q is not configured in models.providers", ref, prov)
	}
	for _, md := range p.Models {
		if md.ID == model {
			if p.API == APILocal && md.Path != "" {
				md.Path = c.absPath(md.Path)
			}
			return p, md, nil
		}
	}
	if prov == LocalProvider || len(p.Models) == 0 && p.API != APILocal {
		return p, ModelDef{ID: model, ContextWindow: defaultContextWindow(p.API)}, nil
	}
	return Provider{}, ModelDef{}, fmt.Errorf("model %s: %q is not defined in models.providers.%s.models", ref, model, prov)
}

// AuthProfiles returns the auth profiles of provider, IDs set: those named
// in auth.order.<provider> first, in that order, then the others by id. Nil
// when it has none (its models.providers apiKey applies).
func (c *Config) AuthProfiles(provider string) []AuthProfile {
	var out []AuthProfile
	add := func(id string) {
		p, ok := c.Auth.Profiles[id]
		if !ok || p.Provider != provider || slices.ContainsFunc(out, func(q AuthProfile) bool { return q.ID == id }) {
			return
		}
		p.ID = id
		if p.Mode == "" {
			p.Mode = AuthModeAPIKey
		}
		out = append(out, p)
	}
	for _, id := range c.Auth.Order[provider] {
		add(id)
	}
	for _, id := range sortedMapKeys(c.Auth.Profiles) {
		add(id)
	}
	return out
}

// KeepForever is LocalRunner.KeepAlive for a model that is never unloaded.
const KeepForever time.Duration = -1

// Defaults of models.local, applied by LocalRunner to zero values (a Config
// built in code); a loaded file gets them from defaults.json5.
const (
	DefaultLocalContextSize = 4096
	DefaultLocalBatchSize   = 512
	DefaultLocalKeepAlive   = 10 * time.Minute
	maxAutoThreads          = 4
)

// LocalRunner is models.local resolved for the llama.cpp runner.
type LocalRunner struct {
	Threads     int // ≥ 1: as configured, or the physical cores less one (1 to 4)
	ContextSize int
	BatchSize   int
	MMap        bool
	MLock       bool
	// KeepAlive is how long a model stays loaded unused: 0 unloads it after
	// each reply, KeepForever never.
	KeepAlive time.Duration
	// CacheBudget is the memory, in bytes, for the KV caches of sessions
	// that are not running; 0 keeps none.
	CacheBudget int64
	// DiskCache is the disk, in bytes, for the sessions' KV caches kept
	// across runner restarts; 0 keeps none.
	DiskCache int64
	// ModelsDir is absolute, ~ expanded; "" means <state dir>/models, which
	// the gateway knows.
	ModelsDir string
	// FlashAttention: "off" (default), "on" or "auto".
	FlashAttention string
}

// LocalRunner returns models.local with the defaults applied and keepAlive
// parsed.
func (c *Config) LocalRunner() LocalRunner {
	l := c.Models.Local
	r := LocalRunner{
		Threads:        l.Threads,
		ContextSize:    l.ContextSize,
		BatchSize:      l.BatchSize,
		MMap:           l.MMap == nil || *l.MMap,
		MLock:          l.MLock,
		CacheBudget:    int64(l.CacheBudgetMB) << 20,
		DiskCache:      int64(l.DiskCacheMB) << 20,
		FlashAttention: cmp.Or(l.FlashAttention, "off"),
	}
	if r.Threads <= 0 {
		// One core is left to the gateway and the system: llama.cpp's
		// threads spin at every barrier, and with every core taken (or two
		// runners loaded) a descheduled thread stalls the whole graph —
		// measured here: 7.7 tok/s with 2 threads on 2 busy cores, 210 with 1.
		r.Threads = max(1, min(physicalCores()-1, maxAutoThreads))
	}
	if r.ContextSize <= 0 {
		r.ContextSize = DefaultLocalContextSize
	}
	if r.BatchSize <= 0 {
		r.BatchSize = min(DefaultLocalBatchSize, r.ContextSize)
	}
	r.KeepAlive = DefaultLocalKeepAlive
	if l.KeepAlive != "" {
		if d, err := ParseKeepAlive(l.KeepAlive); err == nil {
			r.KeepAlive = d
		}
	}
	if l.ModelsDir != "" {
		r.ModelsDir = c.absPath(l.ModelsDir)
	}
	return r
}

// ParseKeepAlive parses a keep-alive: a Go duration ("10m", "1h30m"), "0"
// (unload at once) or "-1" (never unload: KeepForever). Any negative
// duration means never, as in Ollama.
func ParseKeepAlive(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "-1" {
		return KeepForever, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a keep-alive: want a duration like \"10m\" or \"1h\", \"0\" (unload at once) or \"-1\" (never)", s)
	}
	if d < 0 {
		return KeepForever, nil
	}
	return d, nil
}

// Default chunk limits (DESIGN §3.8, §8).
const (
	DefaultChunkLimit    = 4000
	DefaultCLIChunkLimit = 20000
	DefaultChunkMode     = "length"
)

// ChunkLimit returns the channel's text chunk limit and chunk mode, with the
// defaults (cli and webchat 20000, others 4000; mode "length").
func (c *Config) ChunkLimit(channel string) (int, string) {
	ch := c.Channels[channel]
	limit, mode := ch.TextChunkLimit, ch.ChunkMode
	if limit == 0 {
		limit = DefaultChunkLimit
		if channel == "cli" || channel == "webchat" {
			limit = DefaultCLIChunkLimit
		}
	}
	if mode == "" {
		mode = DefaultChunkMode
	}
	return limit, mode
}

// DecodeChannel decodes the channel-specific keys of channels.<name> (all
// but textChunkLimit and chunkMode) into v, a pointer to a struct with json
// tags, strictly: unknown keys and wrong types are errors with their key
// path and line, like Load's. A channel not in the file decodes nothing.
func (c *Config) DecodeChannel(name string, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("config: DecodeChannel(%q) needs a non-nil pointer, got %T", name, v)
	}
	extra := c.Channels[name].Extra
	if extra == nil {
		extra = map[string]any{}
	}
	d := &decoder{src: c.src}
	d.decode(keyPath("channels", name), extra, rv.Elem())
	return joinErrors(d.errs)
}

// ChannelAccount is one account of a channel decoded by
// DecodeChannelAccounts.
type ChannelAccount struct {
	ID string
	// ChunkLimit and ChunkMode: the account's, else the channel's, else
	// the defaults.
	ChunkLimit int
	ChunkMode  string
}

// DecodeChannelAccounts decodes channels.<name> into one value per account
// (OpenClaw's multi-account shape): without an accounts object the
// channel's own keys are the account "default"; with one, each
// accounts.<id> object is decoded over the channel's other keys (account
// keys win). `enabled: false` on the channel or an account leaves it out.
// newV returns a pointer to a fresh value to decode into; the values come
// back in account-id order with their ids.
func (c *Config) DecodeChannelAccounts(name string, newV func() any) ([]ChannelAccount, []any, error) {
	ch, ok := c.Channels[name]
	if !ok {
		return nil, nil, nil
	}
	d := &decoder{src: c.src}
	accs := splitAccounts(keyPath("channels", name), ch.Extra, d.fail)
	if len(d.errs) > 0 {
		return nil, nil, joinErrors(d.errs)
	}
	var metas []ChannelAccount
	var vals []any
	for _, a := range accs {
		v := newV()
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Pointer || rv.IsNil() {
			return nil, nil, fmt.Errorf("config: DecodeChannelAccounts(%q) needs pointers, got %T", name, v)
		}
		meta := ChannelAccount{ID: a.id}
		meta.ChunkLimit, meta.ChunkMode = c.ChunkLimit(name)
		if n, ok := a.own["textChunkLimit"].(float64); ok && n > 0 {
			meta.ChunkLimit = int(n)
		}
		if s, ok := a.own["chunkMode"].(string); ok && s != "" {
			meta.ChunkMode = s
		}
		d.decode(a.at, a.keys, rv.Elem())
		metas = append(metas, meta)
		vals = append(vals, v)
	}
	if len(d.errs) > 0 {
		return nil, nil, joinErrors(d.errs)
	}
	return metas, vals, nil
}

// channelAccount is one account of channels.<name> as written.
type channelAccount struct {
	id string
	// at is the account's path: channels.<name>, or
	// channels.<name>.accounts.<id> when the channel has accounts.
	at string
	// keys are the account's keys over the channel's, without enabled
	// and accounts.
	keys map[string]any
	// own are the keys of accounts.<id>; none without accounts.
	own map[string]any
	// from is, for each of keys, the path of the object it was written in.
	from map[string]string
}

// splitAccounts splits channels.<name> (at p, its keys extra) into its
// enabled accounts, in id order, the one way DecodeChannelAccounts and
// validation read OpenClaw's multi-account shape: without an accounts
// object the channel's own keys are the account "default"; with one, each
// accounts.<id> object over the channel's other keys (account keys win).
// `enabled: false` on the channel or an account leaves it out. Problems
// go to fail; an accounts key that is not an object of objects yields no
// accounts.
func splitAccounts(p string, extra map[string]any, fail func(path, reason string)) []channelAccount {
	base := map[string]any{}
	for k, v := range extra {
		base[k] = v
	}
	enabled := func(m map[string]any, at string) bool {
		v, ok := m["enabled"]
		if !ok {
			return true
		}
		delete(m, "enabled")
		b, isBool := v.(bool)
		if !isBool {
			fail(keyPath(at, "enabled"), "want true or false")
			return true
		}
		return b
	}
	if !enabled(base, p) {
		return nil
	}
	accounts := map[string]map[string]any{"default": {}}
	raw, multi := base["accounts"]
	if multi {
		delete(base, "accounts")
		m, isMap := raw.(map[string]any)
		if !isMap || len(m) == 0 {
			fail(keyPath(p, "accounts"), "want an object of accounts by id")
			return nil
		}
		accounts = map[string]map[string]any{}
		for _, id := range sortedMapKeys(m) {
			am, isMap := m[id].(map[string]any)
			if !isMap {
				fail(keyPath(keyPath(p, "accounts"), id), "want an object")
				continue
			}
			accounts[id] = am
		}
	}
	var out []channelAccount
	for _, id := range sortedMapKeys(accounts) {
		a := channelAccount{id: id, at: p, keys: map[string]any{}, from: map[string]string{}, own: accounts[id]}
		if multi {
			a.at = keyPath(keyPath(p, "accounts"), id)
		}
		for k, v := range base {
			a.keys[k], a.from[k] = v, p
		}
		for k, v := range accounts[id] {
			a.keys[k], a.from[k] = v, a.at
		}
		if !enabled(a.keys, a.at) {
			continue
		}
		delete(a.from, "enabled")
		out = append(out, a)
	}
	return out
}
