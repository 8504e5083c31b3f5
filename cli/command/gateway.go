package command

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/cli/service"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
)

// `openclaw gateway install|uninstall|status|start|stop|restart|run`: the
// flags and the output; the installer itself is package cli/service.

// newServiceOS returns the real machine; tests replace it.
var newServiceOS = service.Local

// probeGateway asks the gateway at socket for its status, briefly: one
// that answers is running, whatever a service manager says. Tests replace it.
var probeGateway = func(ctx context.Context, socket string) (*api.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return client.New(socket).Status(ctx)
}

// runningAt is the gateway that answers at socket, nil when none does.
func runningAt(ctx context.Context, socket string) *service.Running {
	st, err := probeGateway(ctx, socket)
	if err != nil {
		return nil
	}
	return &service.Running{Socket: socket, PID: st.PID}
}

func (a *app) gatewayCmd() *cobra.Command {
	c := group("gateway", "Run the gateway, or install and control it as a service (systemd, launchd)",
		a.gatewayRunCmd(),
		a.gatewayInstallCmd(), a.gatewayUninstallCmd(), a.gatewayStatusCmd(),
		a.gatewayControlCmd("start", "Start the gateway service"),
		a.gatewayControlCmd("stop", "Stop the gateway service"),
		a.gatewayControlCmd("restart", "Restart the gateway service"))
	c.Long = `Run openclaw-gateway in the foreground (run), or install and control it as a
service of this machine, locally (only status and install --migrate-state
look at a gateway's socket, to see whether one runs):

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

// gatewayRunCmd is OpenClaw's `openclaw gateway run`: it becomes
// openclaw-gateway run (syscall.Exec where there is one), so flags,
// output, signals and the exit status are the gateway's own.
func (a *app) gatewayRunCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "run [--config FILE] [--state-dir DIR] [--socket PATH]",
		Short: "Run the gateway in the foreground until Ctrl-C (openclaw-gateway run)",
		Long: `Run the gateway in the foreground: this is ` + "`openclaw-gateway run`" + ` with the
same arguments and environment, found beside openclaw, else in $PATH. The
flags are the gateway's (` + "`openclaw gateway run --help`" + ` shows its help);
Ctrl-C or SIGTERM stops it cleanly.`,
		Example: `  openclaw gateway run
  openclaw gateway run --state-dir /srv/openclaw --config ./openclaw.json`,
		Args:               cobra.ArbitraryArgs,
		DisableFlagParsing: true, // every flag is openclaw-gateway's
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runGateway(cmd.Context(), args)
		},
	}
}

// runGateway runs openclaw-gateway run with args. Under Main it becomes
// that program (a.replace), so the terminal's signals reach it; otherwise
// it is a child on a's streams that gets SIGTERM when ctx ends, and its
// exit status is returned as an exitError.
func (a *app) runGateway(ctx context.Context, args []string) error {
	o := newServiceOS()
	bin, err := o.GatewayBinary("")
	if err != nil {
		return err
	}
	path := o.Path(bin)
	argv := append([]string{"openclaw-gateway", "run"}, args...)
	if a.replace != nil {
		err := a.replace(path, argv, os.Environ())
		return fmt.Errorf("run %s: %w", path, err)
	}
	cmd := exec.CommandContext(ctx, path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = a.stdin, a.stdout, a.stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) } // a clean shutdown
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() > 0 {
			return &exitError{code: ee.ExitCode()} // it said why itself
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("run %s: %w", path, err)
	}
	return nil
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
--print also shows the files' contents.

The service keeps its state in /var/lib/openclaw (Linux) or the state dir
(macOS). When a gateway you ran yourself kept state elsewhere (Linux:
--state-dir, else ~/.openclaw-edge of the user running sudo; macOS:
~/.openclaw-edge), install says that it stays behind; --migrate-state moves
it there (sessions, config, models: the model index follows). It refuses
while that gateway runs (stop it first) and when the target already holds
a state; across file systems it copies, renames the copy into place and
only then removes the old one.`,
		Example: `  sudo openclaw gateway install
  openclaw gateway install --dry-run --print
  sudo openclaw gateway install --binary /usr/local/bin/openclaw-gateway --force
  sudo openclaw gateway install --migrate-state`,
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
			if opt.MigrateState {
				from, _, err := o.StateDirs(opt.StateDir)
				if err != nil {
					return err
				}
				// Not the owner check of ordinary commands: under sudo the
				// user's socket is not root's, and this only asks "is one there".
				opt.Running = runningAt(cmd.Context(), filepath.Join(from, "gateway.sock"))
			}
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
	cmd.Flags().BoolVar(&opt.MigrateState, "migrate-state", false, "move the state a gateway you ran yourself kept (~/.openclaw-edge) to the service's state dir")
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
		Short: "Show whether the gateway runs, and the service's state (systemd or launchd)",
		Long: `Show whether a gateway answers at its control socket (found as every command
finds it: --socket, --state-dir, …), then what the service manager says
about the gateway service: installed, enabled, active, main pid, since when,
restarts and the last result ("watchdog" when systemd restarted a gateway
that stopped answering). A stopped service is not an error. A gateway that
answers but is not the service's (` + "`openclaw gateway run`" + `, another
supervisor) is reported running, "not managed by systemd", with its pid;
the service manager's own failure is then only a note. For the gateway's
own health ask it: openclaw status.

--json prints {"manager", "unit", "file", "installed", "enabled", "active",
"sub", "pid", "since", "restarts", "result"}, and when a gateway answers
"socket" and "managed" (and "managerError" when the service manager could
not be asked); a failure prints {"ok": false, "error": {"code", "message"}}
and exits 1.`,
		Example: `  openclaw gateway status
  openclaw gateway status --json | jq -r .active`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := newServiceOS()
			var running *service.Running
			socket := a.client().Socket()
			if osOwnerCheck.check(socket) == nil { // never an impostor's socket
				running = runningAt(cmd.Context(), socket)
			}
			st, err := o.StatusOf(cmd.Context(), running)
			if err != nil {
				return a.jsonFailure(asJSON, err)
			}
			if asJSON {
				return writeJSON(a.stdout, st)
			}
			manager := st.Manager
			if manager == "" {
				manager = "a service manager"
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			if st.Manager != "" {
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
			}
			if st.Enabled != "" {
				fmt.Fprintf(tw, "enabled\t%s\n", st.Enabled)
			}
			active := st.Active
			if st.Sub != "" {
				active += " (" + st.Sub + ")"
			}
			if st.Managed != nil && !*st.Managed {
				active += " (not managed by " + manager + ")"
			}
			fmt.Fprintf(tw, "active\t%s\n", active)
			if st.Socket != "" {
				fmt.Fprintf(tw, "socket\t%s (answers)\n", st.Socket)
			}
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
			if st.ManagerError != "" {
				fmt.Fprintf(tw, "note\t%s could not be asked: %s\n", manager, st.ManagerError)
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
