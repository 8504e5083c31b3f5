package command

import (
	"encoding/json"
	"net/http"

	"github.com/openclaw-edge/edge/engine/api"
)

// The fake gateway's config: gateway.bind and gateway.port; setting
// session.reset.mode is refused as the real gateway refuses an invalid
// config. Unset removes gateway.port (its default applies) and says
// not_found for a key it does not have.
const fakeConfigFile = "/var/lib/openclaw/openclaw.json"

var fakeConfigValues = map[string]string{
	"":                             `{"gateway":{"bind":"loopback","port":18789},"models":{"providers":{"acme":{"apiKey":"[redacted]"}}}}`,
	"gateway.bind":                 `"loopback"`,
	"gateway.port":                 `18789`,
	"models.providers.acme.apiKey": `"[redacted]"`,
}

func init() {
	fakeRoutes["GET "+api.PathConfig] = func(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
		key := r.URL.Query().Get("key")
		v, ok := fakeConfigValues[key]
		if !ok {
			fakeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: "the config has no key " + key})
			return
		}
		fakeJSON(w, 200, api.ConfigValue{Key: key, Value: json.RawMessage(v), File: fakeConfigFile})
	}
	fakeRoutes["POST "+api.PathConfigSet] = func(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
		var req api.ConfigSetRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			fakeJSON(w, 400, api.Error{Code: api.CodeBadRequest, Message: err.Error()})
			return
		}
		if req.Key == "session.reset.mode" {
			fakeJSON(w, 422, api.Error{Code: api.CodeInvalidConfig, Message: fakeConfigFile + " was not changed:\n" + fakeConfigFile + ": session.reset.mode: must be one of daily, idle, none"})
			return
		}
		fakeJSON(w, 200, api.ConfigSetResult{OK: true, File: fakeConfigFile, Key: req.Key, Value: req.Value, Backup: fakeConfigFile + ".bak", RestartNeeded: true})
	}
	fakeRoutes["POST "+api.PathConfigUnset] = func(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
		var req api.ConfigUnsetRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			fakeJSON(w, 400, api.Error{Code: api.CodeBadRequest, Message: err.Error()})
			return
		}
		if _, ok := fakeConfigValues[req.Key]; !ok || req.Key == "" {
			fakeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: fakeConfigFile + " does not set " + req.Key + ": nothing to remove"})
			return
		}
		fakeJSON(w, 200, api.ConfigSetResult{OK: true, File: fakeConfigFile, Key: req.Key, Value: json.RawMessage(fakeConfigValues[req.Key]),
			RestartNeeded: true, RestartHow: "stop openclaw-gateway run and start it again"})
	}
	fakeRoutes["POST "+api.PathConfigValidate] = func(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
		fakeJSON(w, 200, api.ConfigValidation{OK: true, File: fakeConfigFile, Errors: []api.ConfigProblem{}})
	}
}
