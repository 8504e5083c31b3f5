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
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the gateway's health",
		Long: `Show the gateway's version, uptime, memory (RSS), sessions, default agent
and model, the model that answered last, the local models loaded (each in its
own openclaw-runner process, with that process's RSS) and the runner binary,
the last error and the socket.`,
		Example: `  openclaw status
  openclaw status --json | jq .rssBytes`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := a.client().Status(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, st)
			}
			a.printStatus(st)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return cmd
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
	fmt.Fprintf(tw, "last model\t%s\n", orDash(st.LastModel))
	if st.LastFailover != "" {
		fmt.Fprintf(tw, "last failover\t%s (%s)\n", oneLine(st.LastFailover), relTime(a.now(), st.LastFailoverAt))
	}
	for _, r := range st.Runners {
		fmt.Fprintf(tw, "local model\t%s (pid %d, %.1f MB RSS, %d sessions × %d tokens)\n", r.Model, r.PID, float64(r.RSSBytes)/(1<<20), r.Slots, r.ContextLen)
	}
	switch {
	case st.LocalRunnerError != "":
		fmt.Fprintf(tw, "local runner\t%s\n", oneLine(st.LocalRunnerError))
	case st.LocalRunner != "":
		fmt.Fprintf(tw, "local runner\t%s\n", st.LocalRunner)
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
