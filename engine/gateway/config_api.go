package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/config"
)

// configFile is the config file the config endpoints act on.
type configFile struct {
	mu sync.Mutex // one set at a time
	// created is the file a set created when the gateway had none.
	created string
}

func (g *Gateway) configRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET "+api.PathConfig, g.serveConfigGet)
	mux.HandleFunc("POST "+api.PathConfigSet, g.serveConfigSet)
	mux.HandleFunc("POST "+api.PathConfigValidate, g.serveConfigValidate)
}

func (g *Gateway) configPath() string {
	g.conf.mu.Lock()
	defer g.conf.mu.Unlock()
	return g.configPathLocked()
}

// configPathLocked is the file the gateway reads at its next start; ""
// while the built-in defaults apply.
func (g *Gateway) configPathLocked() string {
	if g.cfg.ConfigFile != "" {
		return g.cfg.ConfigFile
	}
	return g.conf.created
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

func (g *Gateway) serveConfigGet(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("key")
	path := g.configPath()
	v, err := configValue(path, g.cfg.StateDir, key)
	if err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	api.WriteJSON(w, http.StatusOK, api.ConfigValue{Key: key, Value: v, File: path})
}

func (g *Gateway) serveConfigSet(w http.ResponseWriter, r *http.Request) {
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
	g.conf.mu.Lock()
	defer g.conf.mu.Unlock()
	path := g.configPathLocked()
	if path == "" {
		path = g.cfg.ConfigNewFile
	}
	if path == "" {
		api.WriteError(w, badRequest("this gateway runs on its built-in defaults and knows no config file to write: start it with --config FILE"))
		return
	}
	res, err := config.SetIn(path, g.cfg.StateDir, req.Key, req.Value)
	if err != nil {
		var ce *config.Error
		if errors.As(err, &ce) {
			api.WriteError(w, invalidConfig(fmt.Sprintf("%s was not changed:\n", path), err))
			return
		}
		api.WriteError(w, asAPIError(g.internal("change the config", err)))
		return
	}
	if res.Created && g.cfg.ConfigFile == "" {
		g.conf.created = res.File
	}
	g.log.Info("config changed through the API; restart the gateway to apply it", "file", res.File, "key", req.Key)
	out := api.ConfigSetResult{OK: true, File: res.File, Key: req.Key, Created: res.Created, Backup: res.Backup, Reformatted: res.Reformatted, RestartNeeded: true}
	if v, err := configValue(res.File, g.cfg.StateDir, req.Key); err == nil {
		out.Value = v
	} else {
		out.Value = json.RawMessage("null") // removed: the key has no value of its own
	}
	api.WriteJSON(w, http.StatusOK, out)
}

func (g *Gateway) serveConfigValidate(w http.ResponseWriter, r *http.Request) {
	path := g.configPath()
	out := ValidateConfig(path, g.cfg.StateDir)
	out.By = "gateway"
	switch {
	case path == g.cfg.ConfigFile:
		out.How = g.cfg.ConfigHow
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
