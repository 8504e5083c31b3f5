package command

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/cli/service"
)

// `openclaw gateway install|uninstall|status|start|stop|restart`: the flags
// and the output; the installer itself is package cli/service.

// newServiceOS returns the real machine; tests replace it.
var newServiceOS = service.Local

func (a *app) gatewayCmd() *cobra.Command {
	c := group("gateway", "Install and control the gateway as a service (systemd, launchd)",
		a.gatewayInstallCmd(), a.gatewayUninstallCmd(), a.gatewayStatusCmd(),
		a.gatewayControlCmd("start", "Start the gateway service"),
		a.gatewayControlCmd("stop", "Stop the gateway service"),
		a.gatewayControlCmd("restart", "Restart the gateway service"))
	c.Long = `Install and control openclaw-gateway as a service of this machine, locally
(these commands never talk to the gateway's API):

  Linux   a systemd system service: /etc/systemd/system/openclaw-gateway.service
          (Type=notify, watchdog, hardened), the openclaw user from
          /etc/sysusers.d/openclaw.conf, state in /var/lib/openclaw. Needs root.
  macOS   a launchd user agent: ~/Library/LaunchAgents/ai.openclaw-edge.gateway.plist,
          state in ~/.openclaw-edge (or --state-dir), logs in
          ~/.openclaw-edge/logs/gateway.log.

install and uninstall print every change before they make it; --dry-run
prints the plan only. A file that exists with other contents is never
replaced without --force.`
	return c
}

func (a *app) gatewayInstallCmd() *cobra.Command {
	var opt service.InstallOptions
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Install the gateway as a service, enable and start it",
		Long: `Install openclaw-gateway as a service, enable it at boot (login on macOS)
and start it.

Linux (root): writes /etc/systemd/system/openclaw-gateway.service with
ExecStart pointing at the binary, and /etc/sysusers.d/openclaw.conf; runs
systemd-sysusers (creates the openclaw user), systemctl daemon-reload and
systemctl enable --now (enable and restart when the unit changed).
macOS: writes ~/Library/LaunchAgents/ai.openclaw-edge.gateway.plist and runs
launchctl bootstrap gui/$UID.

The binary is --binary, else the openclaw-gateway beside this openclaw, else
the one in $PATH. Running install again with nothing changed changes nothing.
--print also shows the files' contents.`,
		Example: `  sudo openclaw gateway install
  openclaw gateway install --dry-run --print
  sudo openclaw gateway install --binary /usr/local/bin/openclaw-gateway --force`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := newServiceOS()
			if err := o.CheckPlatform(); err != nil {
				return err
			}
			if o.GOOS == "linux" && !opt.DryRun {
				if err := o.NeedRoot(cmd.CommandPath()); err != nil {
					return err
				}
				if err := o.NeedSystemd(); err != nil {
					return err
				}
			}
			opt.StateDir = a.stateDir // macOS: the global --state-dir; Linux uses /var/lib/openclaw
			p, err := o.InstallPlan(cmd.Context(), opt)
			if err != nil {
				return err
			}
			if err := o.Apply(cmd.Context(), a.stdout, p, opt.DryRun); err != nil {
				return err
			}
			if opt.Print {
				p.PrintFiles(a.stdout)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&opt.Binary, "binary", "", "the openclaw-gateway to run (default: beside openclaw, else in $PATH)")
	cmd.Flags().BoolVar(&opt.Force, "force", false, "replace an existing unit, sysusers entry or plist that differs")
	cmd.Flags().BoolVar(&opt.DryRun, "dry-run", false, "print the plan, change nothing")
	cmd.Flags().BoolVar(&opt.Print, "print", false, "also print the contents of the files written")
	return cmd
}

func (a *app) gatewayUninstallCmd() *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Stop and disable the gateway service and remove its files (state is kept)",
		Long: `Stop and disable the gateway service, then remove what install wrote: the
unit and the sysusers entry (Linux, root), or the launchd plist (macOS). The
state dir (config, sessions, models) and the openclaw user stay; it says
where they are.`,
		Example: `  sudo openclaw gateway uninstall
  openclaw gateway uninstall --dry-run`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := newServiceOS()
			if err := o.CheckPlatform(); err != nil {
				return err
			}
			if o.GOOS == "linux" && !dryRun {
				if err := o.NeedRoot(cmd.CommandPath()); err != nil {
					return err
				}
			}
			p, err := o.UninstallPlan(cmd.Context(), a.stateDir) // macOS: the state dir to mention
			if err != nil {
				return err
			}
			return o.Apply(cmd.Context(), a.stdout, p, dryRun)
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the plan, change nothing")
	return cmd
}

func (a *app) gatewayStatusCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the gateway service's state (systemd or launchd)",
		Long: `Show what the service manager says about the gateway: installed, enabled,
active, main pid, since when, restarts and the last result ("watchdog" when
systemd restarted a gateway that stopped answering). A stopped service is
not an error. For the gateway's own health ask it: openclaw status.

--json prints {"manager", "unit", "file", "installed", "enabled", "active",
"sub", "pid", "since", "restarts", "result"}; a failure prints
{"ok": false, "error": {"code", "message"}} and exits 1.`,
		Example: `  openclaw gateway status
  openclaw gateway status --json | jq -r .active`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := newServiceOS()
			if err := o.CheckPlatform(); err != nil {
				return a.jsonFailure(asJSON, err)
			}
			st, err := o.Status(cmd.Context())
			if err != nil {
				return a.jsonFailure(asJSON, err)
			}
			if asJSON {
				return writeJSON(a.stdout, st)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "service\t%s (%s)\n", st.Unit, st.Manager)
			installed := "no: sudo openclaw gateway install"
			if o.GOOS == "darwin" {
				installed = "no: openclaw gateway install"
			}
			if st.Installed {
				installed = "yes"
				if st.File != "" {
					installed += ", " + st.File
				}
			}
			fmt.Fprintf(tw, "installed\t%s\n", installed)
			if st.Enabled != "" {
				fmt.Fprintf(tw, "enabled\t%s\n", st.Enabled)
			}
			active := st.Active
			if st.Sub != "" {
				active += " (" + st.Sub + ")"
			}
			fmt.Fprintf(tw, "active\t%s\n", active)
			if st.PID > 0 {
				fmt.Fprintf(tw, "pid\t%d\n", st.PID)
			}
			if st.Since != "" {
				fmt.Fprintf(tw, "since\t%s\n", st.Since)
			}
			if st.Restarts > 0 {
				fmt.Fprintf(tw, "restarts\t%d\n", st.Restarts)
			}
			if st.Result != "" && st.Result != "success" {
				fmt.Fprintf(tw, "last result\t%s\n", st.Result)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the state as JSON")
	return cmd
}

func (a *app) gatewayControlCmd(verb, short string) *cobra.Command {
	return &cobra.Command{
		Use:   verb,
		Short: short,
		Long: short + ` through the service manager: systemctl ` + verb + ` openclaw-gateway.service
(root) on Linux, launchctl on macOS (start: bootstrap or kickstart; stop:
bootout, until start or the next login; restart: kickstart -k).`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := newServiceOS()
			if err := o.CheckPlatform(); err != nil {
				return err
			}
			if o.GOOS == "linux" {
				if err := o.NeedRoot(cmd.CommandPath()); err != nil {
					return err
				}
				if err := o.NeedSystemd(); err != nil {
					return err
				}
			}
			return o.Control(cmd.Context(), a.stdout, verb)
		},
	}
}
