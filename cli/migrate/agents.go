package migrate

// OpenClaw's agents, and what waits on a setting that is not carried:
// agents.entries (the roster OpenClaw 2026.9 writes) becomes agents.list;
// a model naming a provider that is not configured here, and the files and
// sessions of an agent this gateway does not run, are held back with the
// reason instead of failing at the gateway.

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/openclaw-edge/edge/cli/openclawdir"
	"github.com/openclaw-edge/edge/engine/config"
)

// agentFields are the keys of an agents.list entry this gateway reads
// (config.Agent's): an OpenClaw entry's are carried as they are. id and
// default are set here, and a workspace names OpenClaw's folder.
var agentFields = sync.OnceValue(func() map[string]bool {
	out := map[string]bool{}
	t := reflect.TypeFor[config.Agent]()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			out[name] = true
		}
	}
	for _, k := range []string{"id", "default", "workspace"} {
		delete(out, k)
	}
	return out
})

// folderReason says why workspace and agentDir are not carried.
const folderReason = "names OpenClaw's folder; the files are copied into this gateway's workspace"

// agentsSection prepares the agents section to be carried: OpenClaw
// 2026.9's agents.entries (agent id → agent) becomes agents.list, the form
// this gateway reads, and OpenClaw's folders are taken out. Each part left
// behind is listed with its reason.
func (m *migration) agentsSection(agents map[string]any, src string) map[string]any {
	out := maps.Clone(agents)
	if v, ok := out["ownership"]; ok {
		delete(out, "ownership")
		m.add(Item{Kind: "config", Name: "agents.ownership", Source: src, Action: ActNotMigrated, Value: v,
			Reason: "OpenClaw's marker of a roster of several agents; agents.list is this gateway's roster"})
	}
	if v, ok := out["entries"]; ok {
		delete(out, "entries")
		entries, isObj := v.(map[string]any)
		switch {
		case !isObj:
			m.add(Item{Kind: "config", Name: "agents.entries", Source: src, Action: ActNotMigrated,
				Reason: "not an object (OpenClaw's agents.entries maps agent ids to agents)"})
		default:
			if _, ok := out["list"]; ok {
				m.add(Item{Kind: "config", Name: "agents.list", Source: src, Action: ActNotMigrated,
					Reason: "OpenClaw reads agents.entries when both are set; the entries are carried as agents.list"})
			}
			out["list"] = m.entriesList(entries, out["defaults"], src)
			return m.stripWorkspaces(out, src, false)
		}
	}
	return m.stripWorkspaces(out, src, true)
}

// entriesList turns agents.entries into agents.list entries, the default
// agent first (and marked so when there are several); m.listed learns the
// ids.
func (m *migration) entriesList(entries map[string]any, defaults any, src string) []any {
	def := defaultEntry(entries, defaults)
	keys := sortedKeys(entries)
	if i := slices.Index(keys, def); i > 0 {
		keys = append(append([]string{def}, keys[:i]...), keys[i+1:]...)
	}
	var list []any
	for _, key := range keys {
		p := "agents.entries." + key
		e, ok := entries[key].(map[string]any)
		if !ok {
			m.add(Item{Kind: "config", Name: p, Source: src, Action: ActNotMigrated, Reason: "not an object"})
			continue
		}
		// OpenClaw normalizes the ids it reads the same way.
		id := strings.ToLower(strings.TrimSpace(key))
		a := map[string]any{"id": id}
		for _, k := range sortedKeys(e) {
			it := Item{Kind: "config", Name: p + "." + k, Source: src, Action: ActNotMigrated}
			switch {
			case k == "workspace" || k == "agentDir":
				it.Reason = folderReason
			case k == "identity":
				it.Value = e[k]
				it.Reason = "OpenClaw Edge has no identity setting: put the name and emoji in the agent's IDENTITY.md (copied with its workspace) for the agent to know them"
			case k == "default":
				continue // a legacy marker: defaultEntry has read it
			case agentFields()[k]:
				a[k] = e[k]
				continue
			default:
				it.Reason = "not supported by OpenClaw Edge"
			}
			m.add(it)
		}
		list = append(list, a)
		m.listed[id] = true
	}
	if len(list) > 1 && strings.ToLower(strings.TrimSpace(def)) == list[0].(map[string]any)["id"] {
		list[0].(map[string]any)["default"] = true
	}
	return list
}

// defaultEntry is the key of the entry OpenClaw treats as its default
// agent: agents.defaults.systemAgent.agentId, else the one entry marked
// default (a marker OpenClaw reads from older files), else "main", else
// the first by id.
func defaultEntry(entries map[string]any, defaults any) string {
	find := func(id string) string {
		for _, k := range sortedKeys(entries) {
			if strings.EqualFold(strings.TrimSpace(k), strings.TrimSpace(id)) {
				return k
			}
		}
		return ""
	}
	if d, ok := defaults.(map[string]any); ok {
		if sa, ok := d["systemAgent"].(map[string]any); ok {
			if id, ok := sa["agentId"].(string); ok && find(id) != "" {
				return find(id)
			}
		}
	}
	var marked []string
	for _, k := range sortedKeys(entries) {
		if e, ok := entries[k].(map[string]any); ok && e["default"] == true {
			marked = append(marked, k)
		}
	}
	if len(marked) == 1 {
		return marked[0]
	}
	if k := find("main"); k != "" {
		return k
	}
	if keys := sortedKeys(entries); len(keys) > 0 {
		return keys[0]
	}
	return ""
}

// stripWorkspaces removes OpenClaw's workspace paths from the agents
// section (they name OpenClaw's folders) and lists them as not migrated;
// with list, from agents.list's entries too (m.listed learns their ids).
func (m *migration) stripWorkspaces(agents map[string]any, src string, list bool) map[string]any {
	strip := func(path string, obj map[string]any) map[string]any {
		obj = maps.Clone(obj)
		for _, f := range []string{"workspace", "agentDir"} {
			if _, ok := obj[f]; ok {
				delete(obj, f)
				m.add(Item{Kind: "config", Name: path + "." + f, Source: src, Action: ActNotMigrated, Reason: folderReason})
			}
		}
		return obj
	}
	if d, ok := agents["defaults"].(map[string]any); ok {
		agents["defaults"] = strip("agents.defaults", d)
	}
	if l, ok := agents["list"].([]any); ok && list {
		nl := make([]any, len(l))
		for i, x := range l {
			nl[i] = x
			if obj, ok := x.(map[string]any); ok {
				nl[i] = strip(fmt.Sprintf("agents.list.%d", i), obj)
				if id, ok := obj["id"].(string); ok {
					m.listed[strings.ToLower(strings.TrimSpace(id))] = true
				}
			}
		}
		agents["list"] = nl
	}
	return agents
}

// modelRef is a "provider/model" reference found in a config value.
type modelRef struct{ path, provider string }

// modelRefs returns the model references in key's value that the gateway
// resolves against models.providers: agents.defaults.model, the
// subagents' and heartbeat's model, and each agents.list entry's. A
// reference without a provider (an OpenClaw alias) is left to the gateway.
func modelRefs(key string, v any) []modelRef {
	var out []modelRef
	var add func(path string, ref any)
	add = func(path string, ref any) {
		switch r := ref.(type) {
		case string:
			if prov, _, ok := strings.Cut(strings.TrimSpace(r), "/"); ok && prov != "" {
				out = append(out, modelRef{path, prov})
			}
		case map[string]any:
			add(path+".primary", r["primary"])
			if fb, ok := r["fallbacks"].([]any); ok {
				for i, f := range fb {
					add(fmt.Sprintf("%s.fallbacks.%d", path, i), f)
				}
			}
		}
	}
	sub := func(path string, obj any, k string) {
		if o, ok := obj.(map[string]any); ok {
			add(path+"."+k, o[k])
		}
	}
	switch key {
	case "agents.defaults.model":
		add(key, v)
	case "agents.defaults.subagents", "agents.defaults.heartbeat":
		sub(key, v, "model")
	case "agents.list":
		list, _ := v.([]any)
		for i, e := range list {
			p := fmt.Sprintf("agents.list.%d", i)
			sub(p, e, "model")
			if o, ok := e.(map[string]any); ok {
				sub(p+".heartbeat", o["heartbeat"], "model")
			}
		}
	}
	return out
}

// dependency returns why key's value must wait: a model it names whose
// provider is not configured here and is not carried by this run (held
// back, refused, or OpenClaw's built-in one, which this gateway needs in
// models.providers). "" when nothing is missing.
func (m *migration) dependency(key string, v any) (string, error) {
	for _, r := range modelRefs(key, v) {
		if r.provider == config.LocalProvider {
			continue
		}
		why, inSource := m.providers[r.provider]
		if inSource && why == "" {
			continue
		}
		here, err := m.providerHere(r.provider)
		if err != nil {
			return "", err
		}
		if here {
			continue
		}
		if !inSource {
			return fmt.Sprintf("depends on provider %q, configured neither here nor in models.providers (OpenClaw's built-in one, named by %s): add models.providers.%s here, then run again",
				r.provider, r.path, r.provider), nil
		}
		return fmt.Sprintf("depends on held-back provider %q, not configured here (named by %s; models.providers %s)", r.provider, r.path, why), nil
	}
	return "", nil
}

// providerHere reports whether the gateway's config has the provider.
func (m *migration) providerHere(name string) (bool, error) {
	if here, ok := m.here[name]; ok {
		return here, nil
	}
	_, err := m.gw.ConfigGet(m.ctx, "models.providers."+name)
	switch {
	case err == nil:
		m.here[name] = true
	case isNotFound(err):
		m.here[name] = false
	default:
		return false, fmt.Errorf("read config models.providers.%s: %w", name, err)
	}
	return m.here[name], nil
}

// noteCarried records what became of the items others depend on: the
// providers of models.providers and the agents of agents.list.
func (m *migration) noteCarried(key string, v any, it Item) {
	switch key {
	case "models.providers":
		why := ""
		switch {
		case it.Action == ActFailed || it.Action == ActConflict:
			why = "could not be set"
		case it.Action == ActNotMigrated && securityKey(key) && !m.opt.Security:
			why = "is a security setting held back: pass --include-security"
		case it.Action == ActNotMigrated:
			why = "is not migrated: " + it.Reason
		}
		provs, _ := v.(map[string]any)
		for p := range provs {
			m.providers[p] = why
		}
	case "agents.list":
		m.agentsList = it
	}
}

// runs reports whether the gateway runs the agent: it lists the sessions
// of the agents it runs, and answers not found for any other.
func (m *migration) runs(agentID string) (bool, error) {
	_, err := m.gw.Sessions(m.ctx, agentID)
	switch {
	case err == nil:
		return true, nil
	case isNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("ask the gateway for agent %s: %w", agentID, err)
}

// waitReason says why an OpenClaw agent's files and sessions wait: the
// gateway does not run it (yet). "" when it does.
func (m *migration) waitReason(ag openclawdir.Agent) (string, error) {
	if ok, err := m.runs(ag.ID); ok || err != nil {
		return "", err
	}
	return m.notRunning(ag.ID), nil
}

// notRunning says why the gateway does not run the agent id, and what to
// do.
func (m *migration) notRunning(id string) string {
	l := m.agentsList
	switch {
	case !m.listed[id]:
		return fmt.Sprintf("agent %s is not configured here (OpenClaw has its folder, not a config entry): add it to agents.list, restart the gateway, then run migrate again", id)
	case l.Action == ActImport:
		return fmt.Sprintf("agent %s comes with agents.list, which --apply sets: restart the gateway after it, then run migrate again", id)
	case l.Action == ActImported || l.Action == ActSkip:
		return fmt.Sprintf("agent %s is in agents.list but not running yet: restart the gateway, then run migrate again", id)
	case l.Action == ActNotMigrated && !m.opt.Security:
		return fmt.Sprintf("agent %s is not configured here: it comes with agents.list, a security setting held back (pass --include-security, restart the gateway, then run migrate again)", id)
	case l.Action == ActNotMigrated:
		return fmt.Sprintf("agent %s is not configured here: agents.list is not migrated (%s)", id, l.Reason)
	default:
		return fmt.Sprintf("agent %s is not configured here: agents.list could not be set", id)
	}
}
