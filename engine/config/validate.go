package config

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/openclaw-edge/edge/engine"
)

// Allowed values of the enumerated keys.
var (
	promptModes     = []string{"full", "minimal", "none"}
	thinkingLevels  = []string{"off", "low", "medium", "high"}
	toolProfiles    = []string{"minimal", "coding", "messaging", "full"}
	providerAPIs    = []string{APIOpenAICompletions, APIAnthropicMessages, APIOllama, APIGemini, APILocal}
	modelInputs     = []string{"text", "image"}
	dmScopes        = []string{"main", "per-peer", "per-channel-peer", "per-account-channel-peer"}
	resetModes      = []string{"daily", "idle", "none"}
	queueModes      = []string{"sequential", "concurrent"}
	execAsks        = []string{"off", "on-miss", "always"}
	execSecurities  = []string{"deny", "allowlist", "full"}
	peerKinds       = []string{string(engine.ChatDirect), string(engine.ChatGroup), string(engine.ChatChannel), string(engine.ChatRoom)}
	chunkModes      = []string{"length", "newline"}
	logLevels       = []string{"debug", "info", "warn", "error"}
	maxAgentIDBytes = 64
)

// Validate checks the whole config and returns every problem found, joined,
// each an *Error. Load and Parse call it; call it again after changing a
// Config in code.
func (c *Config) Validate() error { return joinErrors(c.validate()) }

// validation collects problems with their lines.
type validation struct {
	src  *source
	errs []*Error
}

func (v *validation) fail(path, format string, args ...any) {
	v.errs = append(v.errs, v.src.err(path, fmt.Sprintf(format, args...)))
}

// enum checks s against allowed; "" passes when optional.
func (v *validation) enum(path, s string, allowed []string, optional bool) {
	if s == "" && optional || slices.Contains(allowed, s) {
		return
	}
	v.fail(path, "%q is not one of %s", s, strings.Join(allowed, ", "))
}

func (c *Config) validate() []*Error {
	v := &validation{src: c.src}
	c.validateAgents(v)
	c.validateModels(v)
	c.validateLocal(v)
	c.validateAuth(v)
	c.validateSession(v)
	c.validateTools(v)
	c.validateBindings(v)
	c.validateMemory(v)
	c.validateCron(v)
	for _, name := range sortedMapKeys(c.Channels) {
		p := keyPath("channels", name)
		ch := c.Channels[name]
		if name == "" {
			v.fail(p, "channel name must not be empty")
		}
		v.enum(keyPath(p, "chunkMode"), ch.ChunkMode, chunkModes, true)
	}
	v.enum("gateway.logLevel", c.Gateway.LogLevel, logLevels, false)
	if b := c.Gateway.Bind; b != "loopback" && b != "lan" && net.ParseIP(b) == nil {
		v.fail("gateway.bind", "%q: want \"loopback\", \"lan\" or an IP address of this machine", b)
	}
	if p := c.Gateway.Port; p < 1 || p > 65535 {
		v.fail("gateway.port", "%d: want a TCP port, 1 to 65535 (OpenClaw's default is 18789)", p)
	}
	c.validateAccess(v)
	for i, p := range c.Messages.GroupChat.MentionPatterns {
		if _, err := regexp.Compile(p); err != nil {
			v.fail(fmt.Sprintf("messages.groupChat.mentionPatterns[%d]", i), "%v", err)
		}
	}
	return v.errs
}

func (c *Config) validateAgents(v *validation) {
	d := c.Agents.Defaults
	const dp = "agents.defaults"
	c.validateModelRef(v, dp+".model", d.Model)
	if d.UserTimezone != "" {
		if _, err := time.LoadLocation(d.UserTimezone); err != nil {
			v.fail(dp+".userTimezone", "unknown time zone %q (want an IANA name like Europe/Madrid)", d.UserTimezone)
		}
	}
	v.enum(dp+".promptMode", d.PromptMode, promptModes, false)
	v.enum(dp+".thinkingDefault", d.ThinkingDefault, thinkingLevels, false)
	if d.MaxTurns < 1 {
		v.fail(dp+".maxTurns", "must be at least 1, got %d", d.MaxTurns)
	}
	if d.TimeoutSeconds < 1 {
		v.fail(dp+".timeoutSeconds", "must be at least 1, got %d", d.TimeoutSeconds)
	}
	c.validateModelRef(v, dp+".subagents.model", d.Subagents.Model)
	if d.Subagents.MaxConcurrent < 0 {
		v.fail(dp+".subagents.maxConcurrent", "must be 0 (the default, 2) or more, got %d", d.Subagents.MaxConcurrent)
	}
	if n := d.Subagents.MaxSpawnDepth; n < 0 || n > 5 {
		v.fail(dp+".subagents.maxSpawnDepth", "must be between 1 and 5 (0: the default, 1), got %d", n)
	}

	seen := map[string]int{}
	firstDefault := -1
	for i, a := range c.Agents.List {
		p := indexPath("agents.list", i)
		switch {
		case a.ID == "":
			v.fail(p+".id", "required")
		case !validAgentID(a.ID):
			v.fail(p+".id", "invalid agent id %q: use lowercase letters, digits, - and _ (at most %d)", a.ID, maxAgentIDBytes)
		default:
			if j, dup := seen[a.ID]; dup {
				v.fail(p+".id", "duplicate agent id %q (first at agents.list[%d])", a.ID, j)
			} else {
				seen[a.ID] = i
			}
		}
		if a.Default {
			if firstDefault >= 0 {
				v.fail(p+".default", "more than one default agent (agents.list[%d] is already the default)", firstDefault)
			} else {
				firstDefault = i
			}
		}
		if a.Model != nil {
			c.validateModelRef(v, p+".model", *a.Model)
		}
		if a.Tools != nil {
			v.enum(p+".tools.profile", a.Tools.Profile, toolProfiles, true)
		}
		for j, s := range a.Skills {
			if strings.TrimSpace(s) == "" {
				v.fail(indexPath(p+".skills", j), "must not be empty")
			}
		}
	}
}

func validAgentID(id string) bool {
	if id == "" || len(id) > maxAgentIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// validProviderName: lower case letters, digits, '.', '-', '_', starting
// with a letter or digit, so that "provider/model" splits unambiguously.
func validProviderName(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func (c *Config) validateModelRef(v *validation, path string, m ModelRef) {
	if m.Primary == "" {
		if len(m.Fallbacks) > 0 {
			v.fail(path+".primary", "required when fallbacks are set")
		}
	} else {
		c.checkRef(v, path+".primary", m.Primary)
	}
	for i, f := range m.Fallbacks {
		c.checkRef(v, indexPath(path+".fallbacks", i), f)
	}
}

// checkRef checks that ref is "provider/model", that the provider is
// configured (or is the implicit local one) and, when it lists its models,
// that the model is one of them. The local provider accepts any model: the
// model registry may hold it.
func (c *Config) checkRef(v *validation, path, ref string) {
	prov, model, err := SplitModel(ref)
	if err != nil {
		v.fail(path, "%v", err)
		return
	}
	p, ok := c.Provider(prov)
	if !ok {
		v.fail(path, "provider %q is not configured in models.providers", prov)
		return
	}
	if prov == LocalProvider {
		return
	}
	if len(p.Models) == 0 {
		if p.API == APILocal {
			v.fail(path, "provider %q lists no models (api local needs each model with its path)", prov)
		}
		return
	}
	ids := make([]string, len(p.Models))
	for i, md := range p.Models {
		if md.ID == model {
			return
		}
		ids[i] = md.ID
	}
	v.fail(path, "model %q is not defined in %s (known: %s)",
		model, keyPath(keyPath("models.providers", prov), "models"), strings.Join(ids, ", "))
}

func (c *Config) validateModels(v *validation) {
	for _, name := range sortedMapKeys(c.Models.Providers) {
		p := keyPath("models.providers", name)
		prov := c.Models.Providers[name]
		if !validProviderName(name) {
			v.fail(p, "invalid provider name %q: use lowercase letters, digits, ., - and _", name)
		}
		switch {
		case prov.API == "":
			v.fail(p+".api", "required: one of %s", strings.Join(providerAPIs, ", "))
		case name == LocalProvider && prov.API != APILocal:
			v.fail(p+".api", "%q: the provider id %q is reserved for models run on this box (api %q); give this provider another id",
				prov.API, LocalProvider, APILocal)
		default:
			v.enum(p+".api", prov.API, providerAPIs, false)
		}
		if prov.BaseURL != "" {
			u, err := url.Parse(prov.BaseURL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				v.fail(p+".baseUrl", "%q is not an http(s) URL", prov.BaseURL)
			}
		}
		for _, h := range sortedMapKeys(prov.Headers) {
			if h == "" || strings.ContainsAny(h, " \t\r\n:") {
				v.fail(keyPath(p+".headers", h), "invalid header name %q", h)
			}
		}
		seen := map[string]int{}
		for i, md := range prov.Models {
			mp := indexPath(p+".models", i)
			switch {
			case md.ID == "":
				v.fail(mp+".id", "required")
			case strings.ContainsAny(md.ID, " \t\r\n"):
				v.fail(mp+".id", "model id %q contains white space", md.ID)
			default:
				if j, dup := seen[md.ID]; dup {
					v.fail(mp+".id", "duplicate model id %q (first at %s)", md.ID, indexPath(p+".models", j))
				} else {
					seen[md.ID] = i
				}
			}
			if prov.API == APILocal && md.Path == "" {
				v.fail(mp+".path", "required for api %q (the GGUF model file)", APILocal)
			}
			for j, in := range md.Input {
				v.enum(indexPath(mp+".input", j), in, modelInputs, false)
			}
		}
	}
}

// Bounds of models.local.
const (
	minContextSize = 256
	maxContextSize = 1 << 20
	maxThreads     = 256
)

func (c *Config) validateLocal(v *validation) {
	l := c.Models.Local
	const p = "models.local"
	if l.Threads > maxThreads {
		v.fail(p+".threads", "must be at most %d, got %d", maxThreads, l.Threads)
	}
	switch {
	case l.ContextSize < minContextSize:
		v.fail(p+".contextSize", "must be at least %d, got %d", minContextSize, l.ContextSize)
	case l.ContextSize > maxContextSize:
		v.fail(p+".contextSize", "must be at most %d, got %d", maxContextSize, l.ContextSize)
	}
	switch {
	case l.BatchSize < 1:
		v.fail(p+".batchSize", "must be at least 1, got %d", l.BatchSize)
	case l.ContextSize >= minContextSize && l.BatchSize > l.ContextSize:
		v.fail(p+".batchSize", "must not exceed contextSize (%d), got %d", l.ContextSize, l.BatchSize)
	}
	if l.MLock {
		v.fail(p+".mlock", "not supported: the embedded llama.cpp binding cannot lock the model in memory; leave it false")
	}
	if _, err := ParseKeepAlive(l.KeepAlive); err != nil {
		v.fail(p+".keepAlive", "%v", err)
	}
	switch l.FlashAttention {
	case "auto", "on", "off":
	default:
		v.fail(p+".flashAttention", "must be \"auto\", \"on\" or \"off\", got %q", l.FlashAttention)
	}
}

// maxProfileIDBytes bounds an auth profile id.
const maxProfileIDBytes = 128

func validProfileID(id string) bool {
	if id == "" || len(id) > maxProfileIDBytes {
		return false
	}
	for _, r := range id {
		if r <= ' ' || r == 0x7f || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

func (c *Config) validateAuth(v *validation) {
	a := c.Auth
	for _, id := range sortedMapKeys(a.Profiles) {
		p := keyPath("auth.profiles", id)
		prof := a.Profiles[id]
		if !validProfileID(id) {
			v.fail(p, "invalid profile id %q: no white space or control characters, at most %d bytes", id, maxProfileIDBytes)
		}
		switch pr, ok := c.Provider(prof.Provider); {
		case prof.Provider == "":
			v.fail(p+".provider", "required: the id of a provider in models.providers")
		case !ok:
			v.fail(p+".provider", "provider %q is not configured in models.providers", prof.Provider)
		case pr.API == APILocal:
			v.fail(p+".provider", "provider %q runs models on this box (api local) and takes no API key", prof.Provider)
		}
		switch prof.Mode {
		case "", AuthModeAPIKey:
			if prof.APIKey == "" {
				v.fail(p+".apiKey", "required (e.g. \"${OPENAI_API_KEY}\")")
			}
		default:
			v.fail(p+".mode", "%q is not supported (only %q)", prof.Mode, AuthModeAPIKey)
		}
	}
	for _, prov := range sortedMapKeys(a.Order) {
		p := keyPath("auth.order", prov)
		if _, ok := c.Provider(prov); !ok {
			v.fail(p, "provider %q is not configured in models.providers", prov)
		}
		seen := map[string]int{}
		for i, id := range a.Order[prov] {
			ip := indexPath(p, i)
			prof, ok := a.Profiles[id]
			switch {
			case !ok:
				v.fail(ip, "unknown auth profile %q (profiles of %s: %s)", id, prov, strings.Join(c.profileIDs(prov), ", "))
			case prof.Provider != prov:
				v.fail(ip, "auth profile %q belongs to provider %q, not %q", id, prof.Provider, prov)
			}
			if j, dup := seen[id]; dup {
				v.fail(ip, "duplicate profile %q (first at %s)", id, indexPath(p, j))
			} else {
				seen[id] = i
			}
		}
	}
	cd := a.Cooldowns
	const cp = "auth.cooldowns"
	for _, f := range []struct {
		key string
		n   int
	}{{"billingBackoffHours", cd.BillingBackoffHours}, {"billingMaxHours", cd.BillingMaxHours}, {"failureWindowHours", cd.FailureWindowHours}} {
		if f.n < 1 {
			v.fail(cp+"."+f.key, "must be at least 1, got %d", f.n)
		}
	}
	if cd.BillingBackoffHours >= 1 && cd.BillingMaxHours >= 1 && cd.BillingMaxHours < cd.BillingBackoffHours {
		v.fail(cp+".billingMaxHours", "must be at least billingBackoffHours (%d), got %d", cd.BillingBackoffHours, cd.BillingMaxHours)
	}
}

// profileIDs lists the ids of the auth profiles of provider, sorted; "none"
// when it has none.
func (c *Config) profileIDs(provider string) []string {
	var ids []string
	for _, id := range sortedMapKeys(c.Auth.Profiles) {
		if c.Auth.Profiles[id].Provider == provider {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return []string{"none"}
	}
	return ids
}

func (c *Config) validateSession(v *validation) {
	s := c.Session
	v.enum("session.dmScope", s.DMScope, dmScopes, true)
	switch {
	case s.MainKey == "":
		v.fail("session.mainKey", "must not be empty")
	case strings.ContainsAny(s.MainKey, ": \t\r\n"):
		v.fail("session.mainKey", "%q must not contain ':' or white space", s.MainKey)
	}
	v.enum("session.reset.mode", s.Reset.Mode, resetModes, false)
	if h := s.Reset.AtHour; h != nil && (*h < 0 || *h > 23) {
		v.fail("session.reset.atHour", "must be between 0 and 23, got %d", *h)
	}
	if s.Reset.Mode == "idle" && s.Reset.IdleMinutes == 0 {
		v.fail("session.reset.idleMinutes", "required when mode is \"idle\"")
	}
	// concurrent is OpenClaw's and DESIGN's, but turns of one session still
	// run one at a time here (the session lane), so accepting it would be a
	// setting that silently does nothing.
	if s.QueueMode == "concurrent" {
		v.fail("session.queueMode", `"concurrent" is not supported yet; use "sequential" (turns of one session run one at a time; different sessions already run in parallel)`)
	} else {
		v.enum("session.queueMode", s.QueueMode, queueModes, false)
	}
}

func (c *Config) validateTools(v *validation) {
	t := c.Tools
	v.enum("tools.profile", t.Profile, toolProfiles, true)
	for _, name := range sortedMapKeys(t.ByProvider) {
		v.enum(keyPath(keyPath("tools.byProvider", name), "profile"), t.ByProvider[name].Profile, toolProfiles, true)
	}
	e := t.Exec
	// The retired values get an explanation, not just the list.
	switch {
	case e.Ask == "elevated":
		v.fail("tools.exec.ask", `"elevated" is no longer a mode; use off, on-miss or always (the owner, never the model, now runs a command outside the sandbox by answering /approve <id> elevated)`)
	default:
		v.enum("tools.exec.ask", e.Ask, execAsks, false)
	}
	switch {
	case e.Security == "sandbox":
		v.fail("tools.exec.security", `"sandbox" is no longer a mode; use deny, allowlist or full (every exec child now runs in the sandbox, whatever the mode)`)
	default:
		v.enum("tools.exec.security", e.Security, execSecurities, false)
	}
	for i, b := range e.SafeBins {
		if b == "" || strings.ContainsAny(b, " \t\r\n/") {
			v.fail(indexPath("tools.exec.safeBins", i), "%q is not a command name", b)
		}
	}
	if e.TimeoutSeconds < 1 {
		v.fail("tools.exec.timeoutSeconds", "must be at least 1, got %d", e.TimeoutSeconds)
	}
	if e.ApprovalTimeoutSeconds < 1 {
		v.fail("tools.exec.approvalTimeoutSeconds", "must be at least 1, got %d", e.ApprovalTimeoutSeconds)
	}
}

func (c *Config) validateBindings(v *validation) {
	ids := c.AgentIDs()
	for i, b := range c.Bindings {
		p := indexPath("bindings", i)
		switch {
		case b.AgentID == "":
			v.fail(p+".agentId", "required")
		case !slices.Contains(ids, b.AgentID):
			v.fail(p+".agentId", "unknown agent %q (agents: %s)", b.AgentID, strings.Join(ids, ", "))
		}
		if b.Match.Channel == "" {
			v.fail(p+".match.channel", "required")
		}
		if pe := b.Match.Peer; pe != nil {
			v.enum(p+".match.peer.kind", pe.Kind, peerKinds, false)
			if pe.ID == "" {
				v.fail(p+".match.peer.id", "required")
			}
		}
	}
}

// agentIDs lists the configured agent ids; with no list, the implicit "main".
// AgentIDs are the configured agents' ids ("main" when none are listed).
func (c *Config) AgentIDs() []string {
	if len(c.Agents.List) == 0 {
		return []string{"main"}
	}
	ids := make([]string, 0, len(c.Agents.List))
	for _, a := range c.Agents.List {
		ids = append(ids, a.ID)
	}
	return ids
}

func sortedMapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
