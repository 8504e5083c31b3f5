// Package migrate is the work of `openclaw migrate openclaw [DIR]` (the
// command parses the flags and prints): bring an OpenClaw install (its
// config, workspace and sessions) into this gateway. The CLI reads the
// OpenClaw state dir where it runs (cli/openclawdir, read-only) and sends
// everything through the control API, so migrating a laptop's OpenClaw onto
// a paired box works the same as locally.
//
// The command (command.go) is linked into openclaw-migrate
// (./openclaw-migrate), not into openclaw: reading OpenClaw's store takes
// modernc.org/sqlite and klauspost/compress/zstd, whose size and package
// inits every openclaw command paid at start (`openclaw status` 22.1 ms
// against 19.5 ms without them, `openclaw --version` 17.6 against 14.5 ms).
// openclaw's `migrate` runs openclaw-migrate with its whole command line
// (cli/command's migrate.go), and openclaw-migrate is openclaw's command
// tree with this package's command built in (command.Linked), so flags,
// help, --json and exit codes are what they were.
//
// Choices made where the spec was silent:
//   - Config: the top-level sections we implement (migratedConfigKeys) are
//     sent key by key with `config set` (models.providers, channels.telegram,
//     agents.defaults.model, …: this gateway's own settings that OpenClaw's
//     file lacks are kept), in an order that lets each validate (models
//     before agents); OpenClaw-only keys inside them are accepted
//     and ignored by the gateway, and listed here as not migrated. Workspace
//     paths (agents.*.workspace, agentDir) are not carried: they name
//     OpenClaw's folders, and the files are copied into this gateway's own
//     workspace instead. "gateway" and "discovery" are not carried: this
//     gateway keeps its own listener, so both can run side by side. A
//     section whose value already reads the same (secrets compared
//     redacted) is skipped.
//   - Sessions: a key's current session is imported as that key. When the
//     key here already holds another session, it is kept and the import
//     goes to agent:<agent>:openclaw-<rest of the key>. Archived sessions
//     (reset or rotated) go to agent:<agent>:archived-<session id>, deleted
//     ones (only with --deleted) to agent:<agent>:deleted-<session id>, so
//     each stays readable and exportable without replacing anything. A key
//     we cannot take (engine.SessionKey.Valid) gets the archived form, and
//     the table says why.
//   - Idempotence: sessions are imported with ifExists=skip (a session id
//     already here with the same entries, or more, is skipped; one that
//     differs is reported and left alone); workspace files are sent whole
//     and the same bytes are a no-op; a different file here is kept unless
//     --overwrite.
//   - Security settings (securityConfigKeys: exec and tool policy, owners,
//     channel access and tokens, routing, model endpoints, auth, memory
//     paths, the agents list) are held back unless --include-security: an
//     openclaw.json is outside input, and these decide who commands the
//     box and where conversations go. A string with ${VAR} outside a
//     secret field is never carried (the gateway expands it: a secret of
//     the box's environment in a URL). Secrets cannot be compared once
//     redacted, so a key holding one that is already set is skipped unless
//     --overwrite, and the table says why.
//   - Agents: OpenClaw 2026.9 writes its roster as agents.entries (id →
//     name, workspace, agentDir, identity, model, …); it is carried as
//     agents.list, the default agent first (agents.defaults.systemAgent,
//     else "main"), with the fields this gateway reads (config.Agent's).
//     An identity (name, emoji) has no setting here and is listed as not
//     migrated (the table says to put it in IDENTITY.md), as is
//     agents.ownership.
//   - What depends on a setting not carried waits with it, saying why
//     (HeldBack), rather than being refused by the gateway: a model whose
//     provider is neither configured here nor carried by this run (held
//     back, or OpenClaw's built-in one), and the workspace files and
//     sessions of an agent the gateway does not run (its agents.list held
//     back, or set by this run and waiting for a restart). A run whose
//     only misses are such hold-backs exits 0; a failure or a conflict
//     exits 1.
//   - A dry run asks the gateway too (session ids it has, workspace files
//     with dryRun, config values), so its table says import or skip as
//     --apply would.
package migrate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/openclaw-edge/edge/cli/openclawdir"
	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/config"
)

// Source is what migrate reads from an OpenClaw state dir;
// *openclawdir.Dir implements it, tests a fake.
type Source interface {
	Path() string
	Close() error
	Config() (*openclawdir.Config, error)
	Agents() ([]openclawdir.Agent, error)
	WorkspaceFiles(agentID string) ([]openclawdir.File, error)
	Sessions(agentID string, opt openclawdir.SessionOptions) ([]openclawdir.Session, error)
}

// Gateway is what migrate asks of the gateway; *client.Client
// implements it.
type Gateway interface {
	Sessions(ctx context.Context, agentID string) ([]api.SessionInfo, error)
	ConfigGet(ctx context.Context, key string) (*api.ConfigValue, error)
	ConfigSet(ctx context.Context, req api.ConfigSetRequest) (*api.ConfigSetResult, error)
	ImportWith(ctx context.Context, opt client.ImportOptions, r io.Reader) (*api.ImportResult, error)
	PutWorkspaceFile(ctx context.Context, agentID, rel string, r io.Reader, overwrite, dryRun bool) (*api.WorkspaceFileResult, error)
}

// refused records the gateway's refusal of an item: a conflict (something
// different is there) or a failure.
func (it *Item) refused(err error) {
	var ae *api.Error
	if errors.As(err, &ae) && ae.Code == api.CodeConflict {
		it.Action, it.Reason = ActConflict, reason(ae.Message)
		return
	}
	it.Action, it.Reason = ActFailed, reason(err.Error())
}

// Migration actions, as the table and --json show them.
const (
	ActImport      = "import"       // dry run: would be imported / written / set
	ActImported    = "imported"     // --apply did it
	ActSkip        = "skip"         // already there
	ActNotMigrated = "not migrated" // we do not take it; Reason says why
	ActConflict    = "conflict"     // something different is there; left alone
	ActFailed      = "failed"       // the gateway refused it; Reason says why
)

// Item is one row of the migration table.
type Item struct {
	Kind      string `json:"kind"` // config, workspace, session
	Agent     string `json:"agent,omitempty"`
	Name      string `json:"name"` // config key, file path, session key
	Source    string `json:"source"`
	Entries   int    `json:"entries,omitempty"`
	Size      int64  `json:"size,omitempty"`
	Action    string `json:"action"`
	Reason    string `json:"reason,omitempty"`
	SessionID string `json:"sessionId,omitempty"`
	// Value is a config key's value as carried, secrets redacted, so a
	// dry run shows what would be set.
	Value any `json:"value,omitempty"`
	// HeldBack: not migrated on purpose, until the user acts (a security
	// setting, a ${VAR} reference, or what depends on one); Reason says
	// what to do. Not a failure: the exit status stays 0.
	HeldBack bool `json:"heldBack,omitempty"`
}

// Report is the --json output of migrate.
type Report struct {
	OK      bool           `json:"ok"`
	Dir     string         `json:"dir"`
	Applied bool           `json:"applied"`
	Items   []Item         `json:"items"`
	Counts  map[string]int `json:"counts"` // items by action
	// RestartNeeded: config was changed; the gateway reads it at start.
	RestartNeeded bool `json:"restartNeeded,omitempty"`
}

// migratedConfigKeys are the top-level config sections carried over, in
// the order they are set.
var migratedConfigKeys = []string{"models", "auth", "agents", "session", "tools", "memory", "commands", "messages", "bindings", "channels"}

// configNotCarried says why a top-level section we know is not carried.
var configNotCarried = map[string]string{
	"gateway":   "this gateway keeps its own listener settings (both can run side by side)",
	"discovery": "this gateway keeps its own discovery settings",
}

// Options are the flags of migrate that decide what it does.
type Options struct {
	Apply, Deleted, Overwrite bool
	Security                  bool // --include-security
}

// Run migrates src into gw (a dry run unless opt.Apply), saying on
// progress what --apply is doing, and reports every item.
func Run(ctx context.Context, src Source, gw Gateway, opt Options, progress io.Writer) (*Report, error) {
	return newMigration(ctx, src, gw, opt, progress).run()
}

// securityConfigKeys are the config keys (and everything under them) that
// decide who may command the box, what runs on it and where conversations
// and secrets go: exec and tool policy, owner lists, channel access and
// tokens, routing, model endpoints, auth profiles, memory's paths and
// embedding endpoints. A hostile or stale openclaw.json must not change
// them behind the user's back, so they are held back until the user has
// read them and passes --include-security.
var securityConfigKeys = []string{"tools", "commands", "channels", "bindings", "models.providers", "auth", "agents.defaults.memorySearch", "agents.list"}

// securityKey reports whether key is, or lies under, a security key.
func securityKey(key string) bool {
	for _, k := range securityConfigKeys {
		if key == k || strings.HasPrefix(key, k+".") || strings.HasPrefix(k, key+".") {
			return true
		}
	}
	return false
}

// envReference returns the path of the first string in v, outside a secret
// field, that holds a ${VAR} reference: the gateway expands those in every
// string, so "https://host/${ANTHROPIC_API_KEY}" as a base URL would send
// a secret of the box's environment away.
func envReference(path string, v any) string {
	switch x := v.(type) {
	case string:
		if strings.Contains(x, "${") {
			return path
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			if config.IsSecretKey(k) {
				continue
			}
			if p := envReference(path+"."+k, x[k]); p != "" {
				return p
			}
		}
	case []any:
		for i, e := range x {
			if p := envReference(fmt.Sprintf("%s.%d", path, i), e); p != "" {
				return p
			}
		}
	}
	return ""
}

// migration is one run of migrate.
type migration struct {
	ctx      context.Context
	src      Source
	gw       Gateway
	opt      Options
	progress io.Writer
	items    []Item
	restart  bool
	// ids are the session ids the gateway holds (every agent), keys its
	// session keys with their current session id.
	ids  map[string]bool
	keys map[string]string // key → session id

	// What others depend on (agents.go): OpenClaw's providers and whether
	// each is carried, whether the gateway has a provider, the agent ids
	// OpenClaw's config lists and what became of agents.list.
	providers  map[string]string // provider → why it is not carried ("": it is)
	here       map[string]bool
	listed     map[string]bool
	agentsList Item
}

func newMigration(ctx context.Context, src Source, gw Gateway, opt Options, progress io.Writer) *migration {
	return &migration{ctx: ctx, src: src, gw: gw, opt: opt, progress: progress,
		providers: map[string]string{}, here: map[string]bool{}, listed: map[string]bool{}}
}

func (m *migration) add(it Item) { m.items = append(m.items, it) }

func (m *migration) run() (*Report, error) {
	if err := m.config(); err != nil {
		return nil, err
	}
	agents, err := m.src.Agents()
	if err != nil {
		return nil, fmt.Errorf("list agents: %w", err)
	}
	if err := m.loadSessions(); err != nil {
		return nil, err
	}
	// An agent the gateway does not run would refuse each file and
	// session: they wait for it, saying why.
	wait := make([]string, len(agents))
	for i, ag := range agents {
		if wait[i], err = m.waitReason(ag); err != nil {
			return nil, err
		}
	}
	for i, ag := range agents {
		if err := m.workspace(ag, wait[i]); err != nil {
			return nil, err
		}
	}
	for i, ag := range agents {
		if err := m.sessions(ag, wait[i]); err != nil {
			return nil, err
		}
	}
	rep := &Report{OK: true, Dir: m.src.Path(), Applied: m.opt.Apply, Items: m.items, Counts: map[string]int{}, RestartNeeded: m.restart}
	if rep.Items == nil {
		rep.Items = []Item{}
	}
	for _, it := range m.items {
		rep.Counts[it.Action]++
		if it.Action == ActFailed || it.Action == ActConflict {
			rep.OK = false
		}
	}
	return rep, nil
}

// loadSessions learns the session ids and keys the gateway has.
func (m *migration) loadSessions() error {
	list, err := m.gw.Sessions(m.ctx, "")
	if err != nil {
		return fmt.Errorf("list the gateway's sessions: %w", err)
	}
	m.ids, m.keys = map[string]bool{}, map[string]string{}
	for _, s := range list {
		m.ids[s.SessionID] = true
		m.keys[s.Key] = s.SessionID
	}
	return nil
}

// config carries openclaw.json over.
func (m *migration) config() error {
	cfg, err := m.src.Config()
	if err != nil {
		return fmt.Errorf("read openclaw.json: %w", err)
	}
	if cfg == nil {
		return nil
	}
	src := filepath.Base(cfg.File)
	var rest []string
	for k := range cfg.Raw {
		if !slices.Contains(migratedConfigKeys, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range rest {
		why := configNotCarried[k]
		if why == "" {
			why = "not supported by OpenClaw Edge"
		}
		m.add(Item{Kind: "config", Name: k, Source: src, Action: ActNotMigrated, Reason: why})
	}
	if models, ok := cfg.Raw["models"].(map[string]any); ok {
		provs, _ := models["providers"].(map[string]any)
		for p := range provs {
			m.providers[p] = ""
		}
	}
	for _, kv := range m.configPaths(cfg.Raw, src) {
		it, err := m.configItem(kv, src)
		if err != nil {
			return err
		}
		m.noteCarried(kv.key, kv.val, it)
		m.add(it)
	}
	return nil
}

// configItem carries one config key over (a dry run: says whether it
// would), and returns its row.
func (m *migration) configItem(kv configPath, src string) (Item, error) {
	it := Item{Kind: "config", Name: kv.key, Source: src}
	val, err := json.Marshal(kv.val)
	if err != nil {
		return it, fmt.Errorf("encode config %s: %w", kv.key, err)
	}
	it.Value = redactSecrets(kv.val, config.IsSecretKey(lastName(kv.key)))
	if p := envReference(kv.key, kv.val); p != "" {
		it.Action, it.Reason, it.HeldBack = ActNotMigrated, fmt.Sprintf("%s holds a ${…} environment reference outside a secret field; set it by hand", p), true
		return it, nil
	}
	if securityKey(kv.key) && !m.opt.Security {
		it.Action, it.Reason, it.HeldBack = ActNotMigrated, "security setting held back: read it in openclaw.json, then pass --include-security", true
		return it, nil
	}
	// Set without what it names, it would be refused: it waits with it.
	why, err := m.dependency(kv.key, kv.val)
	if err != nil {
		return it, err
	}
	if why != "" {
		it.Action, it.Reason, it.HeldBack = ActNotMigrated, why, true
		return it, nil
	}
	if cur, err := m.gw.ConfigGet(m.ctx, kv.key); err == nil && sameRedacted(kv.val, cur.Value) {
		switch {
		case !hasSecret(kv.key, kv.val):
			it.Action, it.Reason = ActSkip, "already set to the same value"
			return it, nil
		case !m.opt.Overwrite:
			// Two secrets read the same once redacted: say so
			// rather than claim they are equal.
			it.Action, it.Reason = ActSkip, "set here; its secrets cannot be compared (pass --overwrite to set it again)"
			return it, nil
		}
	} else if err != nil && !isNotFound(err) {
		return it, fmt.Errorf("read config %s: %w", kv.key, err)
	}
	if !m.opt.Apply {
		it.Action = ActImport
		return it, nil
	}
	if _, err := m.gw.ConfigSet(m.ctx, api.ConfigSetRequest{Key: kv.key, Value: val}); err != nil {
		if errors.Is(err, client.ErrGatewayDown) {
			return it, err
		}
		it.Action, it.Reason = ActFailed, reason(err.Error())
	} else {
		it.Action = ActImported
		m.restart = true
	}
	return it, nil
}

type configPath struct {
	key string
	val any
}

// configPaths splits the sections carried over into the keys set one by
// one: each key of a section (models.providers, channels.telegram, …) and
// of agents.defaults, so settings of this gateway that OpenClaw's file
// lacks (its workspace above all) are kept.
func (m *migration) configPaths(raw map[string]any, src string) []configPath {
	var out []configPath
	for _, k := range migratedConfigKeys {
		v, ok := raw[k]
		if !ok {
			continue
		}
		obj, isObj := v.(map[string]any)
		if !isObj {
			out = append(out, configPath{k, v})
			continue
		}
		if k == "agents" {
			obj = m.agentsSection(obj, src)
		}
		for _, sub := range sortedKeys(obj) {
			sv := obj[sub]
			if d, ok := sv.(map[string]any); ok && k == "agents" && sub == "defaults" {
				for _, dk := range sortedKeys(d) {
					out = append(out, configPath{"agents.defaults." + dk, d[dk]})
				}
				continue
			}
			out = append(out, configPath{k + "." + sub, sv})
		}
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// lastName is the last dotted name of key.
func lastName(key string) string { return key[strings.LastIndex(key, ".")+1:] }

// hasSecret reports whether v (the value of key) holds a secret field.
func hasSecret(key string, v any) bool {
	b, err := json.Marshal(redactSecrets(v, config.IsSecretKey(lastName(key))))
	return err == nil && strings.Contains(string(b), config.Redacted)
}

// sameRedacted reports whether the gateway's (redacted) value cur equals v
// once v's secrets are redacted the same way.
func sameRedacted(v any, cur json.RawMessage) bool {
	var got any
	if err := json.Unmarshal(cur, &got); err != nil {
		return false
	}
	b, err := json.Marshal(redactSecrets(v, false))
	if err != nil {
		return false
	}
	var want any
	if err := json.Unmarshal(b, &want); err != nil {
		return false
	}
	return covers(got, want)
}

// covers reports whether got holds every value of want: objects key by key
// (got may have more keys — the defaults the gateway merged in, which a set
// of want would not change), everything else equal.
func covers(got, want any) bool {
	w, ok := want.(map[string]any)
	if !ok {
		return reflect.DeepEqual(got, want)
	}
	g, ok := got.(map[string]any)
	if !ok {
		return false
	}
	for k, wv := range w {
		gv, ok := g[k]
		if !ok || !covers(gv, wv) {
			return false
		}
	}
	return true
}

// redactSecrets mirrors the gateway's redaction of config values.
func redactSecrets(v any, secret bool) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = redactSecrets(x, secret || config.IsSecretKey(k) || strings.EqualFold(k, "headers"))
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = redactSecrets(x, secret)
		}
		return out
	case nil:
		return nil
	case string:
		if secret && t != "" {
			return config.Redacted
		}
		return t
	}
	if secret {
		return config.Redacted
	}
	return v
}

func isNotFound(err error) bool {
	var ae *api.Error
	return errors.As(err, &ae) && ae.Code == api.CodeNotFound
}

// oneLine puts s on one line, showing line breaks as "↵" (as the CLI's
// tables do).
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.ReplaceAll(s, "\n", "↵")
}

// reason makes an error message a table cell: one line, escaped for the
// terminal.
func reason(s string) string { return api.EscapeControl(oneLine(s)) }

// workspace copies an agent's workspace files; with wait (why the agent
// is not here) it lists them as held back.
func (m *migration) workspace(ag openclawdir.Agent, wait string) error {
	files, err := m.src.WorkspaceFiles(ag.ID)
	if err != nil {
		return fmt.Errorf("list the workspace files of agent %s: %w", ag.ID, err)
	}
	for i, f := range files {
		it := Item{Kind: "workspace", Agent: ag.ID, Name: f.Rel, Source: filepath.Join(ag.Workspace, filepath.FromSlash(f.Rel)), Size: f.Size}
		if wait != "" {
			it.Action, it.Reason, it.HeldBack = ActNotMigrated, wait, true
			m.add(it)
			continue
		}
		if m.opt.Apply {
			fmt.Fprintf(m.progress, "migrate: workspace %s %s (%d/%d)\n", ag.ID, api.EscapeControl(f.Rel), i+1, len(files))
		}
		rc, err := f.Open()
		if err != nil {
			it.Action, it.Reason = ActFailed, reason(err.Error())
			m.add(it)
			continue
		}
		res, err := m.gw.PutWorkspaceFile(m.ctx, ag.ID, f.Rel, rc, m.opt.Overwrite, !m.opt.Apply)
		rc.Close()
		switch {
		case errors.Is(err, client.ErrGatewayDown):
			return err
		case err != nil:
			it.refused(err)
		case res.Action == api.FileUnchanged:
			it.Action, it.Reason = ActSkip, "the same file is there"
		case !m.opt.Apply:
			it.Action = ActImport
			if res.Action == api.FileReplaced {
				it.Reason = replaceReason(m.opt.Overwrite, "replaces")
			}
		default:
			it.Action = ActImported
			if res.Action == api.FileReplaced {
				it.Reason = replaceReason(m.opt.Overwrite, "replaced")
			}
		}
		m.add(it)
	}
	return nil
}

// sessionKey chooses the key a session is imported as, and says why when
// it is not OpenClaw's.
func (m *migration) sessionKey(agentID string, s openclawdir.Session) (string, string) {
	switch {
	case s.Deleted:
		return "agent:" + agentID + ":deleted-" + s.ID, "a deleted session"
	case s.Archived:
		return "agent:" + agentID + ":archived-" + s.ID, "an archived session"
	case s.Key == "":
		return "agent:" + agentID + ":archived-" + s.ID, "no key names this session"
	}
	if err := engine.SessionKey(s.Key).Valid(); err != nil {
		return "agent:" + agentID + ":archived-" + s.ID, "key " + api.EscapeControl(s.Key) + " cannot be used here: " + api.EscapeControl(err.Error())
	}
	if id, ok := m.keys[s.Key]; ok && id != s.ID && !m.ids[s.ID] {
		rest := strings.TrimPrefix(s.Key, "agent:")
		if _, r, ok := strings.Cut(rest, ":"); ok {
			rest = r
		}
		return "agent:" + agentID + ":openclaw-" + rest, s.Key + " holds another session here; it is kept"
	}
	return s.Key, ""
}

// sessions imports an agent's sessions; with wait (why the agent is not
// here) it lists them as held back.
func (m *migration) sessions(ag openclawdir.Agent, wait string) error {
	list, err := m.src.Sessions(ag.ID, openclawdir.SessionOptions{Deleted: m.opt.Deleted})
	if err != nil {
		return fmt.Errorf("list the sessions of agent %s: %w", ag.ID, err)
	}
	for i, s := range list {
		key, why := m.sessionKey(ag.ID, s)
		it := Item{Kind: "session", Agent: ag.ID, Name: key, Source: s.Source, SessionID: s.ID, Reason: why}
		if wait != "" {
			it.Action, it.Reason, it.HeldBack = ActNotMigrated, joinReason(wait, why), true
			m.add(it)
			continue
		}
		if m.ids[s.ID] && !m.opt.Apply {
			// Already here: --apply checks the entries; a dry run trusts the id.
			it.Action, it.Reason = ActSkip, joinReason("already imported", why)
			m.add(it)
			continue
		}
		if m.opt.Apply {
			fmt.Fprintf(m.progress, "migrate: session %s (%d/%d)\n", api.EscapeControl(key), i+1, len(list))
		}
		rc, err := s.Open()
		if err != nil {
			it.Action, it.Reason = ActFailed, reason(err.Error())
			m.add(it)
			continue
		}
		if !m.opt.Apply {
			n, err := countEntries(rc)
			rc.Close()
			it.Entries = n
			if err != nil {
				it.Action, it.Reason = ActFailed, reason(err.Error())
			} else {
				it.Action = ActImport
			}
			m.add(it)
			continue
		}
		res, err := m.gw.ImportWith(m.ctx, client.ImportOptions{Key: key, IfExists: api.ImportIfExistsSkip, UpdatedAt: s.Updated}, rc)
		rc.Close()
		switch {
		case errors.Is(err, client.ErrGatewayDown):
			return err
		case err != nil:
			it.refused(err)
		case res.Skipped:
			it.Entries = res.Entries
			it.Action = ActSkip
			it.Reason = joinReason("already imported", why)
			if res.Existing == api.ExistingExtended {
				it.Reason = joinReason("already imported; continued here since", why)
			}
		default:
			it.Entries, it.Action, it.SessionID = res.Entries, ActImported, res.SessionID
			m.ids[res.SessionID] = true
			m.keys[res.SessionKey] = res.SessionID
		}
		m.add(it)
	}
	return nil
}

func joinReason(a, b string) string {
	if b == "" {
		return a
	}
	return a + " (" + b + ")"
}

// countEntries counts the non-blank lines after the header, in bounded
// memory whatever the line lengths.
func countEntries(r io.Reader) (int, error) {
	br := bufio.NewReader(r)
	lines, content := 0, false
	for {
		frag, err := br.ReadSlice('\n')
		if len(bytes.TrimSpace(frag)) > 0 {
			content = true
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if content {
			lines++
		}
		content = false
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("read the transcript: %w", err)
		}
	}
	return max(lines-1, 0), nil
}

// Print prints the table and a summary line.
func Print(w io.Writer, rep *Report) {
	if len(rep.Items) == 0 {
		fmt.Fprintf(w, "Nothing to migrate in %s.\n", rep.Dir)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAME\tSOURCE\tSIZE\tACTION")
	for _, it := range rep.Items {
		size := ""
		switch {
		case it.Entries > 0:
			size = fmt.Sprintf("%d entries", it.Entries)
		case it.Size > 0:
			size = fmt.Sprintf("%d B", it.Size)
		}
		name := it.Name
		if it.Kind == "workspace" && it.Agent != "" {
			name = it.Agent + ":" + it.Name
		}
		act := it.Action
		if it.Reason != "" {
			act += ": " + it.Reason
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", it.Kind, api.EscapeControl(name), api.EscapeControl(it.Source), size, act)
	}
	tw.Flush()
	c := rep.Counts
	switch {
	case !rep.Applied:
		fmt.Fprintf(w, "\nDry run: %d to import, %d already here, %d not migrated. Nothing was changed; run again with --apply.\n",
			c[ActImport], c[ActSkip], c[ActNotMigrated])
	case c[ActImported] == 0:
		fmt.Fprintf(w, "\nNothing imported: everything is already here (%d skipped, %d not migrated).\n", c[ActSkip], c[ActNotMigrated])
	default:
		fmt.Fprintf(w, "\nImported %d, skipped %d (already here), %d not migrated.\n", c[ActImported], c[ActSkip], c[ActNotMigrated])
	}
	if n := c[ActFailed] + c[ActConflict]; n > 0 {
		fmt.Fprintf(w, "%d could not be migrated (see above); fix them and run again: what is done is skipped.\n", n)
	}
	held := 0
	for _, it := range rep.Items {
		if it.HeldBack {
			held++
		}
	}
	if held > 0 {
		fmt.Fprintf(w, "%d held back on purpose, each saying why and what to do (not a failure).\n", held)
	}
	if rep.RestartNeeded {
		fmt.Fprintln(w, "The config changed: restart the gateway to apply it, then run migrate again for agents it adds.")
	}
}

// replaceReason says why a different workspace file here was replaced:
// --overwrite, or the file was still our untouched first-start default.
func replaceReason(overwrite bool, verb string) string {
	if overwrite {
		return verb + " a different file (--overwrite)"
	}
	return verb + " this gateway's untouched default"
}
