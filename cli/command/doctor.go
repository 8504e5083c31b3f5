package command

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/engine/api"
)

// check is one line of `openclaw doctor`.
type check struct {
	Name   string `json:"name"`
	Status string `json:"status"` // "ok" or "warn"
	Detail string `json:"detail"`
}

func (a *app) doctorCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the gateway's setup and say what to fix",
		Long: `Check that the gateway answers on its socket, that exec commands run under
the kernel sandbox, that a default model is configured, and that the local
model runner (openclaw-runner) is installed where the gateway finds it. Each check
prints OK or WARN with what to do. Exit code 1 when the gateway cannot be
reached (nothing else can be checked then), else 0.`,
		Example: `  openclaw doctor
  openclaw doctor --json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := a.client().Status(cmd.Context())
			checks := doctorChecks(a.client().Socket(), st, err)
			if asJSON {
				if werr := writeJSON(a.stdout, struct {
					OK     bool    `json:"ok"`
					Checks []check `json:"checks"`
				}{allOK(checks), checks}); werr != nil {
					return werr
				}
			} else {
				for _, c := range checks {
					label := "OK  "
					if c.Status != "ok" {
						label = "WARN"
					}
					fmt.Fprintf(a.stdout, "%s  %s: %s\n", label, c.Name, c.Detail)
				}
			}
			if err != nil {
				return fmt.Errorf("doctor: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the checks as JSON")
	return cmd
}

// doctorChecks turns a status reply (or the error instead of one) into
// checks.
func doctorChecks(socket string, st *api.Status, err error) []check {
	if err != nil {
		return []check{{"gateway", "warn", fmt.Sprintf("not reachable at %s: %v", socket, err)}}
	}
	cs := []check{{"gateway", "ok", fmt.Sprintf("openclaw-gateway %s answers at %s", st.Version, socket)}}
	switch {
	case st.SandboxActive:
		cs = append(cs, check{"exec sandbox", "ok", st.Sandbox})
	case st.Sandbox == "":
		cs = append(cs, check{"exec sandbox", "warn", "the gateway does not report a sandbox (an older gateway?): exec runs under policy only"})
	default:
		cs = append(cs, check{"exec sandbox", "warn", st.Sandbox + " (Linux 5.13+ with Landlock enabled confines exec commands)"})
	}
	if st.Model != "" {
		cs = append(cs, check{"model", "ok", st.Model})
	} else {
		cs = append(cs, check{"model", "warn", "no default model: set agents.defaults.model in the config, or pull one with `openclaw models pull`"})
	}
	// An older gateway reports neither; then there is nothing to say.
	switch {
	case st.LocalRunnerError != "":
		cs = append(cs, check{"local runner", "warn", st.LocalRunnerError + " (local models cannot run; remote providers are unaffected)"})
	case st.LocalRunner != "":
		cs = append(cs, check{"local runner", "ok", st.LocalRunner})
	}
	return cs
}

func allOK(cs []check) bool {
	for _, c := range cs {
		if c.Status != "ok" {
			return false
		}
	}
	return true
}
