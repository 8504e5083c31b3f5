package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
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

// ModelDef looks up ref in models.providers. A provider that lists no models
// (and is not local) accepts any model id: the definition returned then has
// only the id and the default context window.
func (c *Config) ModelDef(ref string) (Provider, ModelDef, error) {
	prov, model, err := SplitModel(ref)
	if err != nil {
		return Provider{}, ModelDef{}, err
	}
	p, ok := c.Models.Providers[prov]
	if !ok {
		return Provider{}, ModelDef{}, fmt.Errorf("model %s: provider %q is not configured in models.providers", ref, prov)
	}
	for _, md := range p.Models {
		if md.ID == model {
			return p, md, nil
		}
	}
	if len(p.Models) == 0 && p.API != APILocal {
		return p, ModelDef{ID: model, ContextWindow: defaultContextWindow(p.API)}, nil
	}
	return Provider{}, ModelDef{}, fmt.Errorf("model %s: %q is not defined in models.providers.%s.models", ref, model, prov)
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
