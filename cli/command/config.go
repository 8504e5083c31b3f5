package command

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/titanous/json5"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/config"
)

// configCmd is `openclaw config`: get, set and validate run on the
// gateway, on its own config file; `config validate FILE` checks a local
// file without a gateway.
func (a *app) configCmd() *cobra.Command {
	c := group("config", "Read, change and check the gateway's config file",
		a.configGetCmd(), a.configSetCmd(), a.configValidateCmd())
	c.Long = `Read, change and check the gateway's config file (JSON5 with OpenClaw's keys).
get, set and validate run in the gateway, on its machine and its file, so
they work the same from a paired laptop. Keys are dotted paths:
agents.defaults.model, gateway.port, models.providers.ollama.baseUrl; a
number indexes a list (agents.list.0.id).

config validate FILE checks a file here, without a gateway.`
	c.Example = `  openclaw config get agents.defaults.model
  openclaw config set gateway.port 18790
  openclaw config set agents.defaults.model '{primary: "ollama/llama3.2", fallbacks: ["local/qwen3-1.7b"]}'
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
its next start). Without KEY, the whole config. A string prints as it is,
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
			v, err := a.client().ConfigGet(cmd.Context(), key)
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

The gateway checks the whole resulting config first and writes nothing if
it is not valid: every problem is printed with its key. The file is
rewritten as JSON (comments are not kept; the previous file stays as
FILE.bak), atomically, mode 0600. The gateway reads its config at start:
restart it to apply the change.

--json prints {"ok", "file", "key", "value", "created", "backup",
"restartNeeded"}.`,
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
			res, err := a.client().ConfigSet(cmd.Context(), api.ConfigSetRequest{Key: args[0], Value: value})
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
			if string(res.Value) == "null" || string(value) == "null" {
				verb = "removed (the default applies)"
			}
			fmt.Fprintf(a.stdout, "%s %s in %s: %s", api.EscapeControl(res.Key), verb, api.EscapeControl(res.File), shown.String())
			if res.Backup != "" {
				fmt.Fprintf(a.stdout, "the previous file is kept as %s\n", api.EscapeControl(res.Backup))
			}
			if res.RestartNeeded {
				fmt.Fprintln(a.stdout, "restart the gateway to apply it (sudo systemctl restart openclaw-gateway, or stop and start openclaw-gateway run)")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func (a *app) configValidateCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate [FILE]",
		Short: "Check the gateway's config file, or FILE here",
		Long: `Check a config file (JSON5 with OpenClaw's keys) over the built-in defaults.
Without FILE the gateway checks its own file, on its machine. With FILE (or
$OPENCLAW_CONFIG naming one) the file is checked here and no gateway is
needed.

Prints "ok: FILE", or every problem on its own line ("FILE:LINE: key.path:
reason") and exits 1. Warnings ("warning: FILE:LINE: key.path: reason") do
not fail the check: OpenClaw settings this gateway ignores, a read-only
workspace. Each agent's workspace must exist or be creatable; nothing is
created.

--json prints {"ok", "file", "missing", "errors": [{"message", "file",
"line", "path", "reason"}], "warnings"}.`,
		Example: `  openclaw config validate
  openclaw config validate /etc/openclaw/openclaw.json
  openclaw config validate --json | jq -r '.errors[].message'`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			var report api.ConfigValidation
			if file, ok := localConfigFile(args); ok {
				report = validateLocal(file)
			} else {
				r, err := a.client().ConfigValidate(cmd.Context())
				if err != nil {
					return a.jsonFailure(asJSON, err)
				}
				report = *r
			}
			return a.printValidation(report, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"ok", "file", "errors", "warnings"} as JSON`)
	return cmd
}

// localConfigFile is the file `config validate` checks here: FILE, else
// $OPENCLAW_CONFIG; false: ask the gateway.
func localConfigFile(args []string) (string, bool) {
	if len(args) == 1 {
		return args[0], true
	}
	if f := os.Getenv("OPENCLAW_CONFIG"); f != "" {
		return f, true
	}
	return "", false
}

// validateLocal checks a config file on this machine.
func validateLocal(file string) api.ConfigValidation {
	report := api.ConfigValidation{File: file, Errors: []api.ConfigProblem{}}
	_, warnings, err := config.Check(file)
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
