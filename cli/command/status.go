package command

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/engine/api"
)

func (a *app) statusCmd() *cobra.Command {
	var asJSON, all bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the gateway's health",
		Long: `Show the gateway's version, uptime, memory (RSS), sessions, default agent
and model, configured models that cannot be used (not installed, not
defined), the model that answered last, the local models loaded (each in its
own openclaw-runner process, with that process's RSS) and the runner binary,
the channels, the config changes waiting for a restart ("restart
pending"), the last error and the socket.

--all adds this CLI's version, the exec approvals waiting for an answer and
the default agent's memory index. Parts the gateway cannot give are
reported in place ("unavailable: …"); the command still succeeds.

--json prints the gateway's status object {"version", "apiVersion", "pid",
"uptimeSeconds", "rssBytes", "model", "missingModels", "channels", …};
with --all it also has "cliVersion", "approvals" and "memory" (and
"approvalsError", "memoryError" when those could not be read).`,
		Example: `  openclaw status
  openclaw status --all
  openclaw status --json | jq .rssBytes
  openclaw status --all --json | jq '.missingModels, .approvals'`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := a.client().Status(cmd.Context())
			if err != nil {
				return a.jsonFailure(asJSON, err)
			}
			if !all {
				if asJSON {
					return writeJSON(a.stdout, st)
				}
				a.printStatus(st)
				return nil
			}
			full := statusAll{Status: st, CLIVersion: version()}
			if list, err := a.client().Approvals(cmd.Context()); err != nil {
				full.ApprovalsError = err.Error()
			} else {
				full.Approvals = list
				if full.Approvals == nil {
					full.Approvals = []api.Approval{}
				}
			}
			if ms, err := a.client().MemoryStatus(cmd.Context(), ""); err != nil {
				full.MemoryError = err.Error()
			} else {
				full.Memory = ms
			}
			if asJSON {
				return writeJSON(a.stdout, full)
			}
			a.printStatusAll(full)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	cmd.Flags().BoolVar(&all, "all", false, "also show pending approvals, memory and this CLI's version")
	return cmd
}

// statusAll is `status --all --json`: the gateway's status and what else
// --all gathers.
type statusAll struct {
	*api.Status
	CLIVersion     string            `json:"cliVersion"`
	Approvals      []api.Approval    `json:"approvals,omitempty"`
	ApprovalsError string            `json:"approvalsError,omitempty"`
	Memory         *api.MemoryStatus `json:"memory,omitempty"`
	MemoryError    string            `json:"memoryError,omitempty"`
}

// printStatusAll prints status --all: the status, then the extra parts.
func (a *app) printStatusAll(s statusAll) {
	a.printStatus(s.Status)
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "cli	openclaw %s\n", s.CLIVersion)
	for _, b := range s.Status.RunnerBuilds {
		if b.State != "next" && b.State != "unusable" { // those two are in the status
			fmt.Fprintf(tw, "runner build	%s (%s): %s%s\n", api.EscapeControl(b.Path), api.EscapeControl(orDash(b.Variant)), api.EscapeControl(b.State), prefixed(": ", oneLine(api.EscapeControl(b.Why))))
		}
	}
	switch {
	case s.ApprovalsError != "":
		fmt.Fprintf(tw, "approvals	unavailable: %s\n", oneLine(api.EscapeControl(s.ApprovalsError)))
	case len(s.Approvals) == 0:
		fmt.Fprintf(tw, "approvals	none waiting\n")
	default:
		fmt.Fprintf(tw, "approvals	%d waiting (openclaw approvals list)\n", len(s.Approvals))
		for _, ap := range s.Approvals {
			fmt.Fprintf(tw, "  %s	%s in %s, waiting %s\n", api.EscapeControl(ap.ID), oneLine(api.EscapeControl(ap.Command)),
				api.EscapeControl(ap.SessionKey), a.now().Sub(ap.CreatedAt).Round(time.Second))
		}
	}
	switch m := s.Memory; {
	case s.MemoryError != "":
		fmt.Fprintf(tw, "memory	unavailable: %s\n", oneLine(api.EscapeControl(s.MemoryError)))
	case m != nil:
		line := fmt.Sprintf("agent %s: %d files, %d chunks, %d vectors", m.AgentID, m.Files, m.Chunks, m.Vectors)
		if m.Provider != "" {
			line += ", embeddings " + m.Provider
			if m.Model != "" {
				line += "/" + m.Model
			}
		}
		if m.LastError != "" {
			line += "; last error: " + m.LastError
		}
		fmt.Fprintf(tw, "memory	%s\n", oneLine(api.EscapeControl(line)))
	}
	tw.Flush()
}

func (a *app) printStatus(st *api.Status) {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	orDash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	fmt.Fprintf(tw, "gateway\topenclaw-gateway %s (api %s, pid %d)\n", orDash(st.Version), orDash(st.APIVersion), st.PID)
	uptime := time.Duration(st.UptimeSeconds * float64(time.Second)).Round(time.Second)
	fmt.Fprintf(tw, "uptime\t%s\n", uptime)
	fmt.Fprintf(tw, "memory\t%.1f MB RSS\n", float64(st.RSSBytes)/(1<<20))
	fmt.Fprintf(tw, "sessions\t%d (%d turns running)\n", st.Sessions, st.ActiveTurns)
	fmt.Fprintf(tw, "agent\t%s\n", orDash(st.DefaultAgent))
	fmt.Fprintf(tw, "model\t%s\n", orDash(st.Model))
	for _, mp := range st.MissingModels {
		fmt.Fprintf(tw, "missing model\t%s (agent %s): %s\n", api.EscapeControl(mp.Model), api.EscapeControl(mp.Agent), oneLine(api.EscapeControl(mp.Problem)))
	}
	fmt.Fprintf(tw, "last model\t%s\n", orDash(st.LastModel))
	if st.LastFailover != "" {
		fmt.Fprintf(tw, "last failover\t%s (%s)\n", oneLine(st.LastFailover), relTime(a.now(), st.LastFailoverAt))
	}
	for _, r := range st.Runners {
		fmt.Fprintf(tw, "local model\t%s (pid %d, %.1f MB RSS, %d sessions × %d tokens%s)\n", api.EscapeControl(r.Model), r.PID, float64(r.RSSBytes)/(1<<20), r.Slots, r.ContextLen, prefixed(", variant ", api.EscapeControl(r.Variant)))
		if r.CachedSessions > 0 || r.RestoredSessions > 0 {
			fmt.Fprintf(tw, "\tKV cache: %d of %d session slots hold %d prompt tokens", r.CachedSessions, r.Slots, r.CachedTokens)
			if r.RestoredSessions > 0 {
				fmt.Fprintf(tw, " (%d read back from disk at load)", r.RestoredSessions)
			}
			fmt.Fprintln(tw)
		}
		if r.PromptTokPerSec > 0 || r.GenTokPerSec > 0 {
			fmt.Fprintf(tw, "\tmeasured here: prompt %.1f tokens/s, generation %.1f tokens/s\n", r.PromptTokPerSec, r.GenTokPerSec)
		}
	}
	switch {
	case st.LocalRunnerError != "":
		fmt.Fprintf(tw, "local runner\t%s\n", oneLine(api.EscapeControl(st.LocalRunnerError)))
	case st.LocalRunner != "":
		v := st.LocalRunnerVariant
		if v == "" {
			v = "variant not reported"
		}
		if st.BestVariant != "" && st.LocalRunnerVariant != "" && st.LocalRunnerVariant != st.BestVariant {
			v += "; this CPU can run " + st.BestVariant + ": see openclaw doctor"
		}
		fmt.Fprintf(tw, "local runner\t%s (%s)\n", api.EscapeControl(st.LocalRunner), api.EscapeControl(v))
	}
	if len(st.CPUFeatures) > 0 {
		fmt.Fprintf(tw, "cpu\t%s\n", api.EscapeControl(strings.Join(st.CPUFeatures, " ")))
	}
	for _, b := range st.RunnerBuilds {
		if b.State == "unusable" {
			fmt.Fprintf(tw, "runner build\t%s: %s%s\n", api.EscapeControl(b.Path), api.EscapeControl(b.State), prefixed(": ", oneLine(api.EscapeControl(b.Why))))
		}
	}
	if st.LastError != "" {
		fmt.Fprintf(tw, "last error\t%s (%s)\n", oneLine(st.LastError), relTime(a.now(), st.LastErrorAt))
	} else {
		fmt.Fprintf(tw, "last error\t-\n")
	}
	if st.InterruptedOpen > 0 {
		fmt.Fprintf(tw, "interrupted turns\t%d not closed yet (closed at the next start or message in their session) %s\n", st.InterruptedOpen, oneLine(st.InterruptedError))
	}
	if st.StateWarning != "" {
		fmt.Fprintf(tw, "state database\t%s\n", oneLine(st.StateWarning))
	}
	if len(st.RestartPending) > 0 {
		fmt.Fprintf(tw, "config\t%s\n", oneLine(api.EscapeControl(restartPendingLine(st))))
	}
	if st.Sandbox != "" {
		fmt.Fprintf(tw, "exec sandbox\t%s\n", oneLine(st.Sandbox))
	}
	for _, c := range st.Channels {
		line := c.State
		if c.Self != "" {
			line += " as " + c.Self
		}
		if c.Reason != "" && c.State != "linked" {
			line += ": " + c.Reason
		}
		if c.OutboxPending > 0 {
			line += fmt.Sprintf(" (%d waiting to be sent)", c.OutboxPending)
		}
		fmt.Fprintf(tw, "channel %s/%s\t%s\n", c.Channel, c.Account, oneLine(api.EscapeControl(line)))
	}
	if st.StateDir != "" {
		fmt.Fprintf(tw, "state dir\t%s\n", st.StateDir)
	}
	sock := st.Socket
	if sock == "" {
		sock = a.client().Socket()
	}
	fmt.Fprintf(tw, "socket\t%s\n", sock)
	if l := st.LAN; l != nil {
		line := fmt.Sprintf("%s, gateway id %s, %d paired device(s)", strings.Join(l.Addrs, " "), l.GatewayID, l.Devices)
		if l.Error != "" {
			line = "not listening: " + l.Error
		} else if l.MDNS {
			line += ", announced over mDNS as " + l.Name
		}
		fmt.Fprintf(tw, "lan api\t%s\n", oneLine(api.EscapeControl(line)))
	}
	if a.client().Remote() {
		fmt.Fprintf(tw, "connected\tover TLS to %s\n", a.client().Socket())
	}
	tw.Flush()
}

// Version is the CLI's version, set at link time with
// -ldflags "-X github.com/openclaw-edge/edge/cli/command.Version=1.2.3";
// without it the module version from the build info, else "dev".
var Version = ""

func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

func (a *app) versionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print the CLI's version",
		Long:    "Print the CLI's version, the control API version it speaks, and its Go build. 'openclaw status' shows the gateway's.",
		Example: "  openclaw version\n  openclaw version --json",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := struct {
				Version    string `json:"version"`
				APIVersion string `json:"apiVersion"`
				Go         string `json:"go"`
				Platform   string `json:"platform"`
			}{version(), api.Version, runtime.Version(), runtime.GOOS + "/" + runtime.GOARCH}
			if asJSON {
				return writeJSON(a.stdout, v)
			}
			fmt.Fprintf(a.stdout, "openclaw %s (api %s, %s %s)\n", v.Version, v.APIVersion, v.Go, v.Platform)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the version as JSON")
	return cmd
}

// prefixed is p+s, or "" when s is empty.
func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

// restartPendingLine says which config changes wait for a restart and how
// to restart this gateway, as it says (its service manager's command when
// one started it, else stopping and starting openclaw-gateway run).
func restartPendingLine(st *api.Status) string {
	how := st.RestartHow
	if how == "" {
		how = "openclaw gateway restart, or stop openclaw-gateway run and start it again"
	}
	return fmt.Sprintf("restart pending (%s): restart the gateway to apply (%s)", strings.Join(st.RestartPending, ", "), how)
}
