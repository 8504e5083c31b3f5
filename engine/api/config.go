package api

import "encoding/json"

// Config endpoints (`openclaw config get|set|unset|validate`): they act on the
// gateway's own config file, on the gateway's machine. Keys are dotted
// paths ("agents.defaults.model"; a number indexes a list:
// "agents.list.0.id").
const (
	PathConfig         = "/v1/config"          // GET ?key= → ConfigValue ("" key: the whole config)
	PathConfigSet      = "/v1/config/set"      // POST ConfigSetRequest → ConfigSetResult
	PathConfigUnset    = "/v1/config/unset"    // POST ConfigUnsetRequest → ConfigSetResult
	PathConfigValidate = "/v1/config/validate" // POST → ConfigValidation
)

// CodeInvalidConfig is the error code of a config file that does not load,
// or of a `config set|unset` whose result would not or that cannot be
// made in place, keeping the file's comments and layout (nothing was
// written). A `config unset` of a key the file does not set is
// CodeNotFound.
const CodeInvalidConfig = "invalid_config"

// ConfigValue is a key's value as the gateway reads its config file now:
// the file over the built-in defaults, ${VAR} expanded — what the gateway
// uses from its next start. Secrets (API keys, tokens, passwords, HTTP
// headers) read "[redacted]".
type ConfigValue struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
	File  string          `json:"file"` // "" when the built-in defaults apply
}

// ConfigSetRequest sets Key to Value (JSON; null removes the key so the
// default applies) in the gateway's config file.
type ConfigSetRequest struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// ConfigUnsetRequest removes Key from the gateway's config file, so its
// default applies.
type ConfigUnsetRequest struct {
	Key string `json:"key"`
}

// ConfigSetResult says what `config set` or `config unset` wrote. The file
// is edited in place: its comments and layout stay.
type ConfigSetResult struct {
	OK    bool            `json:"ok"`
	File  string          `json:"file"`
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"` // as it now reads (redacted; the default after unset, or null)
	// Created: there was no file; it was created. Backup: where the file
	// as it was was saved this time (FILE.bak, written only when there is
	// none, so it keeps the file from before the first change). Unchanged:
	// the file already said so and was not written.
	Created   bool   `json:"created,omitempty"`
	Backup    string `json:"backup,omitempty"`
	Unchanged bool   `json:"unchanged,omitempty"`
	// RestartNeeded: the change (or an earlier one of this key) applies
	// at the gateway's next start, as it reads its config at start only;
	// `openclaw status` says "restart pending" until then. RestartHow is
	// how to restart this gateway (its service manager's command, or
	// stopping and starting openclaw-gateway run); "" when not known.
	RestartNeeded bool   `json:"restartNeeded"`
	RestartHow    string `json:"restartHow,omitempty"`
	// Applied: the running gateway applied the change at once (a setting
	// that can change live, such as gateway.logLevel); no restart needed.
	Applied bool `json:"applied,omitempty"`
}

// ConfigProblem is one error or warning of a config file.
type ConfigProblem struct {
	Message string `json:"message"`
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Path    string `json:"path,omitempty"` // key path
	Reason  string `json:"reason,omitempty"`
}

// ConfigValidation is the check of a config file (`config validate
// --json`). Missing: there is no file and the built-in defaults apply.
// How says how File was found ("named by --config", "found in the state
// dir …"); By is who found and checked it: "gateway" (the running
// gateway, its own file) or "cli" (the CLI, locating it as the gateway
// does at start).
type ConfigValidation struct {
	OK       bool            `json:"ok"`
	File     string          `json:"file"`
	Missing  bool            `json:"missing,omitempty"`
	How      string          `json:"how,omitempty"`
	By       string          `json:"by,omitempty"`
	Errors   []ConfigProblem `json:"errors"`
	Warnings []ConfigProblem `json:"warnings,omitempty"`
}
