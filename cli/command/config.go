package command

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/titanous/json5"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/config"
)

// configCmd is `openclaw config`: get, set, unset and validate run on the
// gateway, on its own config file; `config validate FILE` checks a local
// file without a gateway.
func (a *app) configCmd() *cobra.Command {
	c := group("config", "Read, change and check the gateway's config file",
		a.configGetCmd(), a.configSetCmd(), a.configUnsetCmd(), a.configValidateCmd())
	c.Long = `Read, change and check the gateway's config file (JSON5 with OpenClaw's keys).
get, set, unset and validate run in the gateway, on its machine and its
file, so they work the same from a paired laptop. Keys are dotted paths:
agents.defaults.model, gateway.port, models.providers.ollama.baseUrl; a
number indexes a list (agents.list.0.id).

config validate finds the file as the gateway does (--config, --state-dir,
$OPENCLAW_CONFIG_PATH, $OPENCLAW_CONFIG, <state dir>/openclaw.json or
.json5) and checks it here, or asks the running gateway; FILE checks that
file here. See openclaw config validate --help.`
	c.Example = `  openclaw config get agents.defaults.model
  openclaw config set gateway.port 18790
  openclaw config set agents.defaults.model '{primary: "ollama/llama3.2", fallbacks: ["local/qwen3-1.7b"]}'
  openclaw config unset gateway.port
  openclaw config validate
  openclaw config validate ./openclaw.json`
	return c
}

func (a *app) configGetCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "get [KEY]",
		Short: "Print a value of the gateway's config",
		Long: `Print the value of KEY as the gateway reads its config file now: the file
over the built-in defaults, ${VAR} expanded (what the gateway uses from
its next start). Without KEY, the whole config. The file is the one
` + "`openclaw config validate`" + ` names: read here when --config, --state-dir or
$OPENCLAW_CONFIG_PATH/$OPENCLAW_CONFIG/$OPENCLAW_STATE_DIR name it, or when
no gateway runs here; else the running gateway reads its own. A string prints as it is,
anything else as JSON. Secrets (API keys, tokens, passwords, HTTP headers)
print as "[redacted]".

--json prints {"key", "value", "file"}.`,
		Example: `  openclaw config get gateway.bind
  openclaw config get models.providers --json`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			key := ""
			if len(args) == 1 {
				key = args[0]
			}
			var v *api.ConfigValue
			var err error
			if a.validateHere(nil) {
				v, err = a.configGetHere(key)
			} else if v, err = a.client().ConfigGet(cmd.Context(), key); errors.Is(err, client.ErrGatewayDown) && a.socketGuessed() {
				v, err = a.configGetHere(key) // no gateway here: its file, read here
			}
			if err != nil {
				return a.jsonFailure(asJSON, err)
			}
			if asJSON {
				return writeJSON(a.stdout, v)
			}
			return printValue(a.stdout, v.Value)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"key", "value", "file"} as JSON`)
	return cmd
}

// printValue prints a JSON value: a string as it is, anything else as
// indented JSON.
func printValue(w io.Writer, raw json.RawMessage) error {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		_, err := fmt.Fprintln(w, api.EscapeControl(s))
		return err
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("the gateway sent a malformed value: %w", err)
	}
	return writeJSON(w, v)
}

// parseValue reads a value from the command line: JSON5 (so JSON too:
// 18790, true, null, {primary: "a/b"}, ["x"]), else the text as a string.
func parseValue(s string) (json.RawMessage, error) {
	var v any
	if err := json5.Unmarshal([]byte(s), &v); err != nil {
		v = s
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("value %q: %w", s, err)
	}
	return data, nil
}

func (a *app) configSetCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "set KEY VALUE",
		Short: "Change a value in the gateway's config file",
		Long: `Set KEY to VALUE in the gateway's config file. VALUE is JSON5 (18790, true,
null, {primary: "ollama/llama3.2"}, ["a", "b"]), else a plain string
(loopback); quote a string that looks like something else ('"true"'). null
removes the key, so its default applies.

The whole resulting config is checked first and nothing is written if it
is not valid: every problem is printed with its key. The file is the one
` + "`openclaw config validate`" + ` names (changed here or by the running gateway,
as for config get; created as <state dir>/openclaw.json when there is
none). It is edited in place: only that value changes (or a "key: value"
line is added to the object it belongs in), its comments and layout stay;
a file that cannot be edited so is refused with the line to edit by hand.
The write is atomic, mode 0600; before the first change the file is
copied to FILE.bak, which later changes keep. The gateway reads its config
at start: restart it to apply the change (` + "`openclaw status`" + ` says
"restart pending" until then) — except gateway.logLevel, which applies at
once ("applied").

--json prints {"ok", "file", "key", "value", "created", "backup",
"unchanged", "restartNeeded", "restartHow", "applied"}.`,
		Example: `  openclaw config set gateway.bind lan
  openclaw config set gateway.port 18790
  openclaw config set agents.defaults.model '"ollama/llama3.2"'
  openclaw config set agents.defaults.maxTurns null`,
		Args: usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			value, err := parseValue(args[1])
			if err != nil {
				return a.jsonFailure(asJSON, &usageError{err})
			}
			req := api.ConfigSetRequest{Key: args[0], Value: value}
			res, err := a.configChange(func(fallback bool) (*api.ConfigSetResult, error) { return a.configSetHere(req, fallback) },
				func() (*api.ConfigSetResult, error) { return a.client().ConfigSet(cmd.Context(), req) })
			if err != nil {
				return a.jsonFailure(asJSON, err)
			}
			if asJSON {
				return writeJSON(a.stdout, res)
			}
			var shown strings.Builder
			if err := printValue(&shown, res.Value); err != nil {
				return err
			}
			verb := "set"
			switch {
			case res.Unchanged && string(value) == "null":
				verb = "not set (the default applies)"
			case res.Unchanged:
				verb = "already set"
			case string(value) == "null":
				verb = "removed (the default applies)"
			}
			fmt.Fprintf(a.stdout, "%s %s in %s: %s", api.EscapeControl(res.Key), verb, api.EscapeControl(res.File), shown.String())
			a.printChangeNotes(res)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func (a *app) configUnsetCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "unset KEY",
		Short: "Remove a key from the gateway's config file (its default applies)",
		Long: `Remove KEY from the gateway's config file, so its default applies: its
"key: value" and comma are cut out, the rest of the file (comments
included) stays as it is. A key the file does not set is an error, as is
a result that is not valid (nothing is written then). The file, the
backup and the restart are as for config set; a list item cannot be
removed: set the list without it.

--json prints {"ok", "file", "key", "value", "backup", "restartNeeded",
"restartHow"}; "value" is the default that applies now.`,
		Example: `  openclaw config unset gateway.port
  openclaw config unset agents.defaults.model --json`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := api.ConfigUnsetRequest{Key: args[0]}
			res, err := a.configChange(func(fallback bool) (*api.ConfigSetResult, error) { return a.configUnsetHere(req, fallback) },
				func() (*api.ConfigSetResult, error) { return a.client().ConfigUnset(cmd.Context(), req) })
			if err != nil {
				return a.jsonFailure(asJSON, err)
			}
			if asJSON {
				return writeJSON(a.stdout, res)
			}
			var shown strings.Builder
			if err := printValue(&shown, res.Value); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%s removed from %s; it is now: %s", api.EscapeControl(res.Key), api.EscapeControl(res.File), shown.String())
			a.printChangeNotes(res)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// configChange runs a set or unset where the file is: here when the
// command names the file here, else on the gateway — or, when nothing
// answers on a socket that was only guessed, here on the gateway's file.
func (a *app) configChange(here func(fallback bool) (*api.ConfigSetResult, error), remote func() (*api.ConfigSetResult, error)) (*api.ConfigSetResult, error) {
	if a.validateHere(nil) {
		return here(false)
	}
	res, err := remote()
	if errors.Is(err, client.ErrGatewayDown) && a.socketGuessed() {
		return here(true) // no gateway here: its file, changed here
	}
	return res, err
}

// printChangeNotes prints what a set or unset left to do or to know: the
// backup, and the restart that applies it.
func (a *app) printChangeNotes(res *api.ConfigSetResult) {
	if res.Backup != "" {
		fmt.Fprintf(a.stdout, "the file as it was is kept as %s\n", api.EscapeControl(res.Backup))
	}
	if res.Applied {
		fmt.Fprintln(a.stdout, "applied now: the gateway needs no restart for it")
	}
	if res.RestartNeeded {
		how := res.RestartHow
		if how == "" {
			how = "openclaw gateway restart, or stop openclaw-gateway run and start it again"
		}
		fmt.Fprintf(a.stdout, "restart the gateway to apply it (%s)\n", api.EscapeControl(how))
	}
}

func (a *app) configValidateCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate [FILE]",
		Short: "Check the config file the gateway loads (or FILE), and say which it is",
		Long: `Check a config file (JSON5 with OpenClaw's keys) over the built-in defaults,
and say which file it is and how it was found.

Which file:
  FILE                      that file, checked here.
  --config, --state-dir     the file openclaw-gateway run would load with
                            the same flags, found here as it finds it:
                            --config, $OPENCLAW_CONFIG_PATH, $OPENCLAW_CONFIG,
                            else openclaw.json or openclaw.json5 in the state
                            dir (--state-dir, $OPENCLAW_STATE_DIR, else
                            ~/.openclaw-edge). No gateway is needed.
  --gateway NAME            the paired gateway checks its own file.
  $OPENCLAW_CONFIG_PATH, $OPENCLAW_CONFIG or $OPENCLAW_STATE_DIR set
                            found here, as with the flags.
  nothing                   the running gateway checks the file it loaded
                            (its own machine, its own flags); when no
                            gateway runs here, the file a gateway started
                            now would load, found here.

Prints "ok: FILE" and how it was found, or every problem on its own line
("FILE:LINE: key.path: reason") and exits 1. Warnings ("warning: FILE:LINE:
key.path: reason") do not fail the check: OpenClaw settings this gateway
ignores, a read-only workspace. Each agent's workspace must exist or be
creatable; nothing is created.

--json prints {"ok", "file", "missing", "how", "by", "errors": [{"message",
"file", "line", "path", "reason"}], "warnings"}; "by" is "gateway" or
"cli" (who found and checked the file).`,
		Example: `  openclaw config validate
  openclaw config validate --state-dir /var/lib/openclaw
  openclaw config validate ./openclaw.json
  openclaw config validate --json | jq -r '.errors[].message'`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if a.validateHere(args) {
				report, err := a.validateLocated(args, "")
				if err != nil {
					return err
				}
				return a.printValidation(report, asJSON)
			}
			r, err := a.client().ConfigValidate(cmd.Context())
			if errors.Is(err, client.ErrGatewayDown) && a.socketGuessed() {
				// No gateway here: check what one started now would load.
				report, lerr := a.validateLocated(nil, "no gateway is running here")
				if lerr != nil {
					return lerr
				}
				return a.printValidation(report, asJSON)
			}
			if err != nil {
				return a.jsonFailure(asJSON, err)
			}
			return a.printValidation(*r, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"ok", "file", "how", "by", "errors", "warnings"} as JSON`)
	return cmd
}

// validateHere says whether `config validate` finds and checks the file
// here rather than asking the gateway: a FILE, --config or --state-dir, or
// one of the variables that choose it (unless --gateway names a gateway).
func (a *app) validateHere(args []string) bool {
	if len(args) == 1 || a.configFile != "" || a.stateDir != "" {
		return true
	}
	if a.gateway != "" {
		return false
	}
	for _, v := range []string{"OPENCLAW_CONFIG_PATH", "OPENCLAW_CONFIG", "OPENCLAW_STATE_DIR"} {
		if os.Getenv(v) != "" {
			return true
		}
	}
	return false
}

// socketGuessed says whether the gateway's socket was guessed (no
// --socket, $OPENCLAW_SOCKET or --gateway) and is local: when it does not
// answer, the user did not ask for that gateway in particular.
func (a *app) socketGuessed() bool {
	return a.socket == "" && os.Getenv("OPENCLAW_SOCKET") == "" && a.gateway == "" && !a.client().Remote()
}

// validateLocated checks FILE, or the file config.Locate finds from the
// CLI's --config and --state-dir and the environment, here. note, if set,
// says why it was checked here.
func (a *app) validateLocated(args []string, note string) (api.ConfigValidation, error) {
	var loc config.Location
	var err error
	if len(args) == 1 {
		// FILE by name; the default workspace still lives in the state dir.
		loc.File = args[0]
		loc.StateDir, _, err = config.LocateStateDir(config.Where{StateDir: a.stateDir})
	} else {
		loc, err = config.Locate(config.Where{Config: a.configFile, StateDir: a.stateDir})
	}
	if err != nil {
		return api.ConfigValidation{}, err
	}
	report := validateLocal(loc)
	report.By = "cli"
	if len(args) == 0 {
		report.How = loc.How()
	}
	if note != "" {
		report.How += "; checked here: " + note
	}
	return report, nil
}

// validateLocal checks a config file on this machine, with the default
// workspace under loc's state dir.
func validateLocal(loc config.Location) api.ConfigValidation {
	report := api.ConfigValidation{File: loc.File, Errors: []api.ConfigProblem{}}
	if loc.File == "" {
		report.Missing = true
	}
	_, warnings, err := loc.Check()
	for _, w := range warnings {
		report.Warnings = append(report.Warnings, problemOf(w))
	}
	if err == nil {
		report.OK = true
		return report
	}
	for _, e := range splitErrors(err) {
		p := api.ConfigProblem{Message: e.Error()}
		var ce *config.Error
		if errors.As(e, &ce) {
			p = problemOf(ce)
		}
		report.Errors = append(report.Errors, p)
	}
	return report
}

// printValidation prints a config check and fails when it found errors.
func (a *app) printValidation(report api.ConfigValidation, asJSON bool) error {
	if report.Errors == nil {
		report.Errors = []api.ConfigProblem{}
	}
	if asJSON {
		if err := writeJSON(a.stdout, report); err != nil {
			return err
		}
	} else {
		for _, w := range report.Warnings {
			fmt.Fprintln(a.stdout, "warning: "+api.EscapeControl(w.Message))
		}
		switch {
		case report.OK && report.Missing:
			fmt.Fprintln(a.stdout, "ok: the gateway has no config file; the built-in defaults apply")
		case report.OK:
			fmt.Fprintf(a.stdout, "ok: %s\n", api.EscapeControl(report.File))
		default:
			for _, p := range report.Errors {
				fmt.Fprintln(a.stdout, api.EscapeControl(p.Message))
			}
		}
		if report.How != "" {
			fmt.Fprintf(a.stdout, "file: %s\n", api.EscapeControl(oneLine(report.How)))
		}
	}
	if report.OK {
		return nil
	}
	if n := len(report.Errors); n > 1 {
		return fmt.Errorf("%s is not valid: %d problems", report.File, n)
	}
	return fmt.Errorf("%s is not valid", report.File)
}

// problemOf is a config problem as `config validate --json` reports it.
func problemOf(e *config.Error) api.ConfigProblem {
	return api.ConfigProblem{Message: e.Error(), File: e.File, Line: e.Line, Path: e.Path, Reason: e.Reason}
}

// splitErrors undoes errors.Join (config.Load joins one *config.Error per
// problem).
func splitErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, splitErrors(e)...)
		}
		return out
	}
	return []error{err}
}

// configGetHere is config get on this machine: the file config.Locate
// finds, read as the gateway would read it.
func (a *app) configGetHere(key string) (*api.ConfigValue, error) {
	loc, err := config.Locate(config.Where{Config: a.configFile, StateDir: a.stateDir})
	if err != nil {
		return nil, err
	}
	c, err := loc.Load()
	if err != nil {
		return nil, &api.Error{Code: api.CodeInvalidConfig, Message: "the config file does not load:\n" + err.Error()}
	}
	v, ok, err := c.Value(key)
	if err != nil {
		return nil, &usageError{err}
	}
	if !ok {
		return nil, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("the config has no key %s (keys are dotted paths such as agents.defaults.model or gateway.port; `openclaw config get` shows them all)", key)}
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode the value of %s: %w", key, err)
	}
	return &api.ConfigValue{Key: key, Value: data, File: loc.File}, nil
}

// configSetHere is config set on this machine: the located file, or a new
// <state dir>/openclaw.json, as the gateway would create it. down: no
// gateway runs here (it reads the change when it starts).
func (a *app) configSetHere(req api.ConfigSetRequest, down bool) (*api.ConfigSetResult, error) {
	loc, err := config.Locate(config.Where{Config: a.configFile, StateDir: a.stateDir})
	if err != nil {
		return nil, err
	}
	path := loc.File
	if path == "" {
		if err := os.MkdirAll(loc.StateDir, 0o700); err != nil {
			return nil, fmt.Errorf("create the state dir for the config file: %w", err)
		}
		path = filepath.Join(loc.StateDir, config.FileName)
	}
	res, err := config.SetIn(path, loc.StateDir, req.Key, req.Value)
	return a.configChangedHere(loc, path, req.Key, res, err, down)
}

// configUnsetHere is config unset on this machine, on the located file.
func (a *app) configUnsetHere(req api.ConfigUnsetRequest, down bool) (*api.ConfigSetResult, error) {
	loc, err := config.Locate(config.Where{Config: a.configFile, StateDir: a.stateDir})
	if err != nil {
		return nil, err
	}
	if loc.File == "" {
		return nil, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("there is no config file (%s): %s is not set", oneLine(loc.How()), req.Key)}
	}
	res, err := config.UnsetIn(loc.File, loc.StateDir, req.Key)
	return a.configChangedHere(loc, loc.File, req.Key, res, err, down)
}

// configChangedHere is the result of a set or unset of key in path made
// here, as the gateway answers it. Whether a gateway that runs on the file
// must restart is not known here, unless none runs (down).
func (a *app) configChangedHere(loc config.Location, path, key string, res *config.SetResult, err error, down bool) (*api.ConfigSetResult, error) {
	if err != nil {
		var ce *config.Error
		var ns *config.NotSetError
		switch {
		case errors.As(err, &ns):
			return nil, &api.Error{Code: api.CodeNotFound, Message: err.Error()}
		case errors.As(err, &ce):
			return nil, &api.Error{Code: api.CodeInvalidConfig, Message: fmt.Sprintf("%s was not changed:\n%v", path, err)}
		}
		return nil, err
	}
	out := &api.ConfigSetResult{OK: true, File: res.File, Key: key, Created: res.Created, Backup: res.Backup, Unchanged: res.Unchanged,
		RestartNeeded: !res.Unchanged && !down}
	out.Value = json.RawMessage("null") // removed: the key has no value of its own
	if v, err := a.configGetHereFile(loc, res.File, key); err == nil {
		out.Value = v
	}
	return out, nil
}

// configGetHereFile is the value of key in file after a set.
func (a *app) configGetHereFile(loc config.Location, file, key string) (json.RawMessage, error) {
	c, err := config.LoadIn(file, loc.StateDir)
	if err != nil {
		return nil, err
	}
	v, ok, err := c.Value(key)
	if err != nil || !ok {
		return nil, fmt.Errorf("no value")
	}
	return json.Marshal(v)
}
