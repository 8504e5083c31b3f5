package command

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/engine/config"
)

// defaultConfigFile is $OPENCLAW_CONFIG, else ~/.openclaw/openclaw.json.
func defaultConfigFile() string {
	if f := os.Getenv("OPENCLAW_CONFIG"); f != "" {
		return f
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = ""
	}
	return filepath.Join(home, ".openclaw", "openclaw.json")
}

// configProblem is one error or warning of `config validate --json`.
type configProblem struct {
	Message string `json:"message"`
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Path    string `json:"path,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

func (a *app) configValidateCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate [FILE]",
		Short: "Check a config file without starting the gateway",
		Long: `Load FILE (JSON5 with OpenClaw's keys) over the built-in defaults and
check it, locally: the gateway need not run. Prints "ok: FILE", or every
problem on its own line ("FILE:LINE: key.path: reason") and exits 1.
Warnings ("warning: FILE:LINE: key.path: reason") do not fail the check:
OpenClaw settings this gateway ignores, a read-only workspace. Each agent's
workspace must exist or be creatable; nothing is created.

FILE defaults to $OPENCLAW_CONFIG, else ~/.openclaw/openclaw.json; when that
default file does not exist, the built-in defaults apply and that is ok.`,
		Example: `  openclaw config validate
  openclaw config validate /etc/openclaw/openclaw.json
  openclaw config validate --json | jq -r '.errors[].message'`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			file, explicit := defaultConfigFile(), os.Getenv("OPENCLAW_CONFIG") != ""
			if len(args) == 1 {
				file, explicit = args[0], true
			}
			report := struct {
				File     string          `json:"file"`
				OK       bool            `json:"ok"`
				Missing  bool            `json:"missing,omitempty"` // no file: the defaults apply
				Errors   []configProblem `json:"errors,omitempty"`
				Warnings []configProblem `json:"warnings,omitempty"`
			}{File: file}

			if _, err := os.Stat(file); !explicit && errors.Is(err, fs.ErrNotExist) {
				report.OK, report.Missing = true, true
				if asJSON {
					return writeJSON(a.stdout, report)
				}
				fmt.Fprintf(a.stdout, "ok: no config file at %s; the built-in defaults apply\n", file)
				return nil
			}
			_, warnings, err := config.Check(file)
			for _, w := range warnings {
				report.Warnings = append(report.Warnings, problemOf(w))
				if !asJSON {
					fmt.Fprintln(a.stdout, "warning: "+w.Error())
				}
			}
			if err == nil {
				report.OK = true
				if asJSON {
					return writeJSON(a.stdout, report)
				}
				fmt.Fprintf(a.stdout, "ok: %s\n", file)
				return nil
			}
			for _, e := range splitErrors(err) {
				p := configProblem{Message: e.Error()}
				var ce *config.Error
				if errors.As(e, &ce) {
					p.File, p.Line, p.Path, p.Reason = ce.File, ce.Line, ce.Path, ce.Reason
				}
				report.Errors = append(report.Errors, p)
			}
			if asJSON {
				if err := writeJSON(a.stdout, report); err != nil {
					return err
				}
			} else {
				for _, p := range report.Errors {
					fmt.Fprintln(a.stdout, p.Message)
				}
			}
			if n := len(report.Errors); n > 1 {
				return fmt.Errorf("%s is not valid: %d problems", file, n)
			}
			return fmt.Errorf("%s is not valid", file)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"file", "ok", "errors", "warnings"} as JSON`)
	return cmd
}

// problemOf is a config warning as reported by `config validate --json`.
func problemOf(e *config.Error) configProblem {
	return configProblem{Message: e.Error(), File: e.File, Line: e.Line, Path: e.Path, Reason: e.Reason}
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
