package command

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/engine/api"
)

func (a *app) doctorCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the gateway's setup and say what to fix",
		Long: `Check the gateway and the machine it runs on. The checks run in the
gateway, so they are the same from the box and from a paired laptop: the
state dir's owner and permissions, disk space, the control socket, the LAN
API listener, the clock, the exec sandbox (Landlock), the default model and
the local runner, each installed model file and its fit for the box's RAM,
and each channel's link. The CLI adds its own: whether the gateway answers.

Each check prints OK, WARN or FAIL with what was found, and what to do
indented under it. Exit code 1 when a check fails or the gateway cannot be
reached, else 0 (warnings included). --json prints {"ok", "checks": [{"name",
"status", "detail", "fix"}]}; when the gateway cannot be reached,
{"ok": false, "error": {"code", "message"}}.`,
		Example: `  openclaw doctor
  openclaw doctor --json | jq -r '.checks[] | select(.status != "ok") | .fix'`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			socket := a.client().Socket()
			st, err := a.client().Status(cmd.Context())
			if err != nil {
				if !asJSON {
					printChecks(a.stdout, []api.DoctorCheck{{Name: "gateway", Status: api.DoctorFail,
						Detail: fmt.Sprintf("not reachable at %s", socket), Fix: err.Error()}})
				}
				return a.jsonFailure(asJSON, fmt.Errorf("doctor: %w", err))
			}
			checks := []api.DoctorCheck{{Name: "gateway", Status: api.DoctorOK, Detail: fmt.Sprintf("openclaw-gateway %s answers at %s", st.Version, socket)}}
			rep, err := a.client().Doctor(cmd.Context())
			var ae *api.Error
			switch {
			case errors.As(err, &ae) && ae.Code == api.CodeNotFound:
				// An older gateway without GET /v1/doctor: what its status says.
				checks = append(checks, statusChecks(st)...)
			case err != nil:
				return a.jsonFailure(asJSON, fmt.Errorf("doctor: %w", err))
			default:
				checks = append(checks, rep.Checks...)
			}
			report := api.NewDoctorReport(checks)
			if asJSON {
				if err := writeJSON(a.stdout, report); err != nil {
					return err
				}
			} else {
				printChecks(a.stdout, report.Checks)
			}
			if n := countFailed(report.Checks); n > 0 {
				return fmt.Errorf("doctor: %d check(s) failed; fix them as said above", n)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// printChecks prints the doctor's table: STATUS, NAME, DETAIL, and the fix
// of each check that is not ok indented under it.
func printChecks(w io.Writer, checks []api.DoctorCheck) {
	width := len("NAME")
	for _, c := range checks {
		width = max(width, len(api.EscapeControl(c.Name)))
	}
	fmt.Fprintf(w, "%-6s  %-*s  %s\n", "STATUS", width, "NAME", "DETAIL")
	for _, c := range checks {
		fmt.Fprintf(w, "%-6s  %-*s  %s\n", strings.ToUpper(c.Status), width, api.EscapeControl(c.Name), api.EscapeControl(c.Detail))
		if c.Status != api.DoctorOK && c.Fix != "" {
			fmt.Fprintf(w, "%8s%s\n", "", "fix: "+api.EscapeControl(c.Fix))
		}
	}
}

func countFailed(cs []api.DoctorCheck) int {
	n := 0
	for _, c := range cs {
		if c.Status == api.DoctorFail {
			n++
		}
	}
	return n
}

// statusChecks are the checks an older gateway's status allows (it has no
// GET /v1/doctor).
func statusChecks(st *api.Status) []api.DoctorCheck {
	var cs []api.DoctorCheck
	switch {
	case st.SandboxActive:
		cs = append(cs, api.DoctorCheck{Name: "exec sandbox", Status: api.DoctorOK, Detail: st.Sandbox})
	case st.Sandbox == "":
		cs = append(cs, api.DoctorCheck{Name: "exec sandbox", Status: api.DoctorWarn, Detail: "the gateway does not report a sandbox (an older gateway?): exec runs under policy only", Fix: "update the gateway"})
	default:
		cs = append(cs, api.DoctorCheck{Name: "exec sandbox", Status: api.DoctorWarn, Detail: st.Sandbox, Fix: "run Linux 5.13+ with Landlock enabled: it confines exec commands"})
	}
	switch {
	case st.Model != "":
		cs = append(cs, api.DoctorCheck{Name: "default model", Status: api.DoctorOK, Detail: st.Model})
	case st.LocalRunnerError != "":
		// No runner: a pulled model could not run either.
		cs = append(cs, api.DoctorCheck{Name: "default model", Status: api.DoctorWarn, Detail: "no default model", Fix: "set agents.defaults.model in the config to an Ollama or remote model; " + api.NoRunnerHint})
	default:
		cs = append(cs, api.DoctorCheck{Name: "default model", Status: api.DoctorWarn, Detail: "no default model", Fix: "set agents.defaults.model in the config, or pull one with `openclaw models pull`"})
	}
	switch {
	case st.LocalRunnerError != "":
		cs = append(cs, api.DoctorCheck{Name: "local runner", Status: api.DoctorWarn, Detail: st.LocalRunnerError, Fix: "remote providers and Ollama are unaffected; " + api.NoRunnerHint})
	case st.LocalRunner != "":
		cs = append(cs, api.DoctorCheck{Name: "local runner", Status: api.DoctorOK, Detail: st.LocalRunner})
	}
	return cs
}
