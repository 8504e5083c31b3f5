package localapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/config"
)

// configFile is the config file the config endpoints act on.
type configFile struct {
	mu sync.Mutex // one set at a time
	// created is the file a set created when the gateway had none.
	created string
	// pending are the keys changed since the gateway started: it reads
	// its config at start only, so Status says "restart pending" (no
	// setting applies live yet). hook adds that to Status, once.
	pending []string
	hook    sync.Once
}

func (h *handler) configRoutes() []Route {
	return []Route{
		{"GET", api.PathConfig, h.serveConfigGet},
		{"POST", api.PathConfigSet, h.serveConfigSet},
		{"POST", api.PathConfigUnset, h.serveConfigUnset},
		{"POST", api.PathConfigValidate, h.serveConfigValidate},
	}
}

func (h *handler) configPath() string {
	h.conf.mu.Lock()
	defer h.conf.mu.Unlock()
	return h.configPathLocked()
}

// configPathLocked is the file the gateway reads at its next start; ""
// while the built-in defaults apply.
func (h *handler) configPathLocked() string {
	if h.cfg.ConfigFile != "" {
		return h.cfg.ConfigFile
	}
	return h.conf.created
}

// invalidConfig is the error of a config file that does not load.
func invalidConfig(prefix string, err error) *api.Error {
	return &api.Error{Code: api.CodeInvalidConfig, Message: prefix + err.Error()}
}

// configValue loads path and returns key's value as JSON.
func configValue(path, stateDir, key string) (json.RawMessage, error) {
	c, err := config.LoadIn(path, stateDir)
	if err != nil {
		return nil, invalidConfig("the config file does not load:\n", err)
	}
	v, ok, err := c.Value(key)
	if err != nil {
		return nil, badRequest(err.Error())
	}
	if !ok {
		return nil, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("the config has no key %s (keys are dotted paths such as agents.defaults.model or gateway.port; `openclaw config get` shows them all)", key)}
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode the value of %s: %w", key, err)
	}
	return data, nil
}

func (h *handler) serveConfigGet(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("key")
	path := h.configPath()
	v, err := configValue(path, h.cfg.StateDir, key)
	if err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	api.WriteJSON(w, http.StatusOK, api.ConfigValue{Key: key, Value: v, File: path})
}

func (h *handler) serveConfigSet(w http.ResponseWriter, r *http.Request) {
	var req api.ConfigSetRequest
	if err := decodeJSON(w, r, maxSendBody, &req); err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	if req.Key == "" {
		api.WriteError(w, badRequest("missing the key to set (a dotted path such as gateway.port)"))
		return
	}
	if len(req.Value) == 0 {
		api.WriteError(w, badRequest("missing the value (JSON; null removes the key so its default applies)"))
		return
	}
	h.conf.mu.Lock()
	defer h.conf.mu.Unlock()
	path := h.configPathLocked()
	if path == "" {
		path = h.cfg.ConfigNewFile
	}
	if path == "" {
		api.WriteError(w, badRequest("this gateway runs on its built-in defaults and knows no config file to write: start it with --config FILE"))
		return
	}
	res, err := config.SetIn(path, h.cfg.StateDir, req.Key, req.Value)
	h.answerConfigChange(w, req.Key, res, err)
}

func (h *handler) serveConfigUnset(w http.ResponseWriter, r *http.Request) {
	var req api.ConfigUnsetRequest
	if err := decodeJSON(w, r, maxSendBody, &req); err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	if req.Key == "" {
		api.WriteError(w, badRequest("missing the key to remove (a dotted path such as gateway.port)"))
		return
	}
	h.conf.mu.Lock()
	defer h.conf.mu.Unlock()
	path := h.configPathLocked()
	if path == "" {
		api.WriteError(w, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("this gateway runs on its built-in defaults (no config file): %s is not set", req.Key)})
		return
	}
	res, err := config.UnsetIn(path, h.cfg.StateDir, req.Key)
	h.answerConfigChange(w, req.Key, res, err)
}

// answerConfigChange answers a set or unset of key (h.conf.mu held) and
// notes the key as pending a restart.
func (h *handler) answerConfigChange(w http.ResponseWriter, key string, res *config.SetResult, err error) {
	if err != nil {
		var ce *config.Error
		var ns *config.NotSetError
		switch {
		case errors.As(err, &ns):
			api.WriteError(w, &api.Error{Code: api.CodeNotFound, Message: err.Error()})
		case errors.As(err, &ce):
			api.WriteError(w, invalidConfig(fmt.Sprintf("%s was not changed:\n", h.configPathOr(res)), err))
		default:
			api.WriteError(w, asAPIError(h.gw.Internal("change the config", err)))
		}
		return
	}
	if res.Created && h.cfg.ConfigFile == "" {
		h.conf.created = res.File
	}
	applied := false
	if !res.Unchanged {
		if applied = h.applyLive(res.File, key); applied {
			h.log.Info("config changed through the API and applied", "file", res.File, "key", key)
		} else {
			h.log.Info("config changed through the API; restart the gateway to apply it", "file", res.File, "key", key)
			h.notePending(key)
		}
	}
	out := api.ConfigSetResult{OK: true, File: res.File, Key: key, Created: res.Created, Backup: res.Backup, Unchanged: res.Unchanged,
		RestartNeeded: slices.Contains(h.conf.pending, key), RestartHow: restartHow(), Applied: applied}
	if v, err := configValue(res.File, h.cfg.StateDir, key); err == nil {
		out.Value = v
	} else {
		out.Value = json.RawMessage("null") // removed: the key has no value of its own
	}
	api.WriteJSON(w, http.StatusOK, out)
}

// applyLive has the wiring apply key from the file as it now reads, when
// key is a setting the running gateway can change (Config.ApplyLive).
func (h *handler) applyLive(file, key string) bool {
	if h.cfg.ApplyLive == nil || slices.Contains(h.conf.pending, key) {
		return false
	}
	c, err := config.LoadIn(file, h.cfg.StateDir)
	if err != nil {
		h.log.Warn("config changed but cannot be read back to apply it", "file", file, "err", err)
		return false
	}
	return h.cfg.ApplyLive(key, c)
}

// configPathOr is the file a change was refused on (h.conf.mu held).
func (h *handler) configPathOr(res *config.SetResult) string {
	if res != nil {
		return res.File
	}
	if p := h.configPathLocked(); p != "" {
		return p
	}
	return h.cfg.ConfigNewFile
}

// notePending records key as changed since the start (h.conf.mu held) and
// has Status report the keys from then on.
func (h *handler) notePending(key string) {
	if !slices.Contains(h.conf.pending, key) {
		h.conf.pending = append(h.conf.pending, key)
	}
	h.conf.hook.Do(func() {
		h.gw.OnStatus(func(st *api.Status) {
			h.conf.mu.Lock()
			defer h.conf.mu.Unlock()
			st.RestartPending = slices.Clone(h.conf.pending)
			st.RestartHow = restartHow()
		})
	})
}

// restartHow says how to restart this gateway: through the service
// manager that started it (systemd puts $INVOCATION_ID in a service's
// environment; launchd puts the job's label in $XPC_SERVICE_NAME — the
// label of `openclaw gateway install`'s agent), else by hand.
func restartHow() string {
	switch {
	case os.Getenv("INVOCATION_ID") != "":
		return "sudo openclaw gateway restart"
	case os.Getenv("XPC_SERVICE_NAME") == "ai.openclaw-edge.gateway":
		return "openclaw gateway restart"
	}
	return "stop openclaw-gateway run and start it again"
}

func (h *handler) serveConfigValidate(w http.ResponseWriter, r *http.Request) {
	path := h.configPath()
	out := ValidateConfig(path, h.cfg.StateDir)
	out.By = "gateway"
	switch {
	case path == h.cfg.ConfigFile:
		out.How = h.cfg.ConfigHow
	default:
		out.How = "created by openclaw config set"
	}
	api.WriteJSON(w, http.StatusOK, out)
}

// ValidateConfig checks the config file at path as the gateway would load
// it ("": the built-in defaults, which are always valid), with the default
// workspace under stateDir.
func ValidateConfig(path, stateDir string) api.ConfigValidation {
	out := api.ConfigValidation{File: path, Errors: []api.ConfigProblem{}}
	if path == "" {
		out.OK, out.Missing = true, true
		return out
	}
	_, warnings, err := config.CheckIn(path, stateDir)
	for _, w := range warnings {
		out.Warnings = append(out.Warnings, configProblem(w))
	}
	if err == nil {
		out.OK = true
		return out
	}
	for _, e := range unjoin(err) {
		var ce *config.Error
		if errors.As(e, &ce) {
			out.Errors = append(out.Errors, configProblem(ce))
		} else {
			out.Errors = append(out.Errors, api.ConfigProblem{Message: e.Error(), File: path})
		}
	}
	return out
}

func configProblem(e *config.Error) api.ConfigProblem {
	return api.ConfigProblem{Message: e.Error(), File: e.File, Line: e.Line, Path: e.Path, Reason: e.Reason}
}

// unjoin undoes errors.Join (config.Load joins one *config.Error per
// problem).
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unjoin(e)...)
		}
		return out
	}
	return []error{err}
}
