package command

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/config"
	"github.com/openclaw-edge/edge/systemd"
)

// `openclaw gateway install|uninstall|status|start|stop|restart` manages the
// gateway as a service of this machine: systemd's system manager on Linux
// (the unit and sysusers entry of systemd/), launchd's user agents on macOS.
// It is local: it never talks to the gateway's API. Every change it makes is
// printed before it is made, --dry-run prints them only, and a file that
// exists with other contents is never replaced without --force.

// commandRunner runs one OS command (systemctl, launchctl,
// systemd-sysusers) and returns its combined output.
type commandRunner interface {
	Run(ctx context.Context, argv ...string) (string, error)
}

// serviceOS is what `openclaw gateway` needs from the machine. Tests give it
// a fake runner that records argv and a temporary directory as Root.
type serviceOS struct {
	GOOS   string
	Root   string // prefix of every file read or written; "/" for real
	UID    int
	Home   string
	Runner commandRunner
	// Executable and LookPath find the default openclaw-gateway.
	Executable func() (string, error)
	LookPath   func(string) (string, error)
}

// newServiceOS returns the real machine; tests replace it.
var newServiceOS = func() *serviceOS {
	home, _ := os.UserHomeDir()
	return &serviceOS{
		GOOS: runtime.GOOS, Root: "/", UID: os.Getuid(), Home: home,
		Runner: execRunner{}, Executable: os.Executable, LookPath: exec.LookPath,
	}
}

// execRunner runs commands for real.
type execRunner struct{}

func (execRunner) Run(ctx context.Context, argv ...string) (string, error) {
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	return string(out), err
}

// path is p (an absolute path of the machine) under Root.
func (o *serviceOS) path(p string) string { return filepath.Join(o.Root, p) }

// run runs argv and wraps a failure with the command and its output.
func (o *serviceOS) run(ctx context.Context, argv ...string) (string, error) {
	out, err := o.Runner.Run(ctx, argv...)
	if err != nil {
		msg := strings.TrimSpace(out)
		if msg != "" {
			msg = ": " + msg
		}
		return out, fmt.Errorf("%s: %w%s", strings.Join(argv, " "), err, msg)
	}
	return out, nil
}

// step is one change of a plan: a file written or removed, a directory
// made, a command run.
type step struct {
	action   string // "write", "mkdir", "remove", "run", "keep"
	path     string
	argv     []string
	note     string
	data     []byte
	mode     fs.FileMode
	optional bool // a failing command is reported and the plan goes on
}

func (s step) String() string {
	switch s.action {
	case "run":
		return fmt.Sprintf("%-6s %s", "run", strings.Join(s.argv, " "))
	default:
		line := fmt.Sprintf("%-6s %s", s.action, s.path)
		if s.note != "" {
			line += " (" + s.note + ")"
		}
		return line
	}
}

// plan is what install or uninstall will do, and what to say after.
type plan struct {
	steps []step
	after []string // lines printed once the steps are done
}

// apply prints each step, then does it; dry-run prints only.
func (o *serviceOS) apply(ctx context.Context, w io.Writer, p plan, dryRun bool) error {
	if dryRun {
		fmt.Fprintln(w, "dry run: nothing is changed; the plan:")
	}
	for _, s := range p.steps {
		fmt.Fprintln(w, s.String())
		if dryRun {
			continue
		}
		var err error
		switch s.action {
		case "write":
			err = writeServiceFile(o.path(s.path), s.data, s.mode)
		case "mkdir":
			err = os.MkdirAll(o.path(s.path), s.mode)
		case "remove":
			err = os.Remove(o.path(s.path))
			if errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
		case "run":
			_, err = o.run(ctx, s.argv...)
			if err != nil && s.optional {
				fmt.Fprintf(w, "       (ignored: %v)\n", err)
				err = nil
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	for _, l := range p.after {
		fmt.Fprintln(w, l)
	}
	return nil
}

// writeServiceFile writes data to path (its directory made if need be)
// through writeFileAtomic, then gives it mode: a crash leaves the old file
// or the new one, never half of one.
func writeServiceFile(path string, data []byte, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	err := writeFileAtomic(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	if err != nil {
		return err
	}
	return os.Chmod(path, mode)
}

// fileStep plans writing data to path: new, unchanged (kept), or a
// different file, which is a conflict unless force.
func (o *serviceOS) fileStep(path string, data []byte, mode fs.FileMode, force bool) (s step, changed bool, err error) {
	old, err := os.ReadFile(o.path(path))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return step{action: "write", path: path, data: data, mode: mode, note: "new"}, true, nil
	case err != nil:
		return step{}, false, fmt.Errorf("read %s: %w", path, err)
	case bytes.Equal(old, data):
		return step{action: "keep", path: path, note: "unchanged"}, false, nil
	case !force:
		return step{}, false, fmt.Errorf("%s already exists and differs from what install writes; nothing was changed. See what install would write with `openclaw gateway install --dry-run --force --print`; replace it with --force", path)
	}
	return step{action: "write", path: path, data: data, mode: mode, note: "replaces a different file, --force"}, true, nil
}

func (o *serviceOS) exists(path string) bool {
	_, err := os.Stat(o.path(path))
	return err == nil
}

// needRoot is the error of a system-service action run by another user.
func (o *serviceOS) needRoot(cmdPath string) error {
	if o.UID == 0 {
		return nil
	}
	return fmt.Errorf("%s changes the system service and needs root: run `sudo %s` (or --dry-run to see the plan)", cmdPath, cmdPath)
}

// needSystemd fails where systemd is not the running init system.
func (o *serviceOS) needSystemd() error {
	if o.exists("/run/systemd/system") {
		return nil
	}
	return &api.Error{Code: "no_service_manager", Message: "systemd is not running on this machine (no /run/systemd/system): run `openclaw-gateway run` under your own init system or supervisor instead"}
}

// checkPlatform refuses systems with neither systemd nor launchd support.
func (o *serviceOS) checkPlatform() error {
	if o.GOOS == "linux" || o.GOOS == "darwin" {
		return nil
	}
	return &api.Error{Code: "no_service_manager", Message: fmt.Sprintf("openclaw gateway manages a systemd service (Linux) or a launchd agent (macOS), not a %s service: run `openclaw-gateway run` yourself", o.GOOS)}
}

// gatewayBinary resolves --binary, else openclaw-gateway beside this
// executable, else in $PATH, to an absolute path of a regular executable file.
func (o *serviceOS) gatewayBinary(flag string) (string, error) {
	const name = "openclaw-gateway"
	p := flag
	if p == "" {
		if self, err := o.Executable(); err == nil {
			if c := filepath.Join(filepath.Dir(self), name); o.isExecutable(c) {
				p = c
			}
		}
	}
	if p == "" {
		found, err := o.LookPath(name)
		if err != nil {
			return "", errors.New("cannot find openclaw-gateway beside openclaw or in $PATH: build it (make build) or install it, then pass --binary /path/to/openclaw-gateway")
		}
		p = found
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("--binary %s: %w", p, err)
	}
	if !o.isExecutable(abs) {
		return "", fmt.Errorf("gateway binary %s is not an executable file", abs)
	}
	return abs, nil
}

// isExecutable says whether p (under Root) is a regular file with an x bit.
func (o *serviceOS) isExecutable(p string) bool {
	fi, err := os.Stat(o.path(p))
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// hiddenByUnit reports a binary the unit's ProtectHome=yes hides from the
// service: it could not even start.
func hiddenByUnit(bin string) bool {
	for _, dir := range []string{"/home", "/root", "/run/user"} {
		if bin == dir || strings.HasPrefix(bin, dir+"/") {
			return true
		}
	}
	return false
}

// installOptions are the flags of install.
type installOptions struct {
	binary   string
	stateDir string // launchd only
	force    bool
	dryRun   bool
	print    bool
}

// installPlan plans `openclaw gateway install`.
func (o *serviceOS) installPlan(ctx context.Context, opt installOptions) (plan, error) {
	bin, err := o.gatewayBinary(opt.binary)
	if err != nil {
		return plan{}, err
	}
	if o.GOOS == "darwin" {
		return o.launchdInstallPlan(ctx, bin, opt)
	}
	if hiddenByUnit(bin) {
		return plan{}, fmt.Errorf("gateway binary %s lies under a directory the unit hides (ProtectHome=yes: /home, /root, /run/user): copy it out first, e.g. `sudo install -m 755 %s /usr/local/bin/` and pass --binary /usr/local/bin/openclaw-gateway", bin, bin)
	}
	unit, err := systemd.Unit(bin)
	if err != nil {
		return plan{}, err
	}
	unitPath := "/etc/systemd/system/" + systemd.UnitName
	usersPath := "/etc/sysusers.d/" + systemd.SysusersName
	us, unitChanged, err := o.fileStep(unitPath, unit, 0o644, opt.force)
	if err != nil {
		return plan{}, err
	}
	ss, _, err := o.fileStep(usersPath, systemd.Sysusers(), 0o644, opt.force)
	if err != nil {
		return plan{}, err
	}
	p := plan{steps: []step{us, ss,
		{action: "run", argv: []string{"systemd-sysusers", usersPath}},
		{action: "run", argv: []string{"systemctl", "daemon-reload"}},
	}}
	if unitChanged {
		// restart: a running gateway picks up the new unit now.
		p.steps = append(p.steps,
			step{action: "run", argv: []string{"systemctl", "enable", systemd.UnitName}},
			step{action: "run", argv: []string{"systemctl", "restart", systemd.UnitName}})
	} else {
		p.steps = append(p.steps, step{action: "run", argv: []string{"systemctl", "enable", "--now", systemd.UnitName}})
	}
	p.after = []string{
		"openclaw-gateway runs as the " + systemd.User + " user, enabled at boot.",
		"  state and config: " + systemd.StateDir + " (config: " + systemd.StateDir + "/openclaw.json)",
		"  control socket:   " + systemd.Socket + " (the CLI finds it; use it as root or " + systemd.User + ")",
		"  logs:             journalctl -u " + systemd.UnitName + " -f",
	}
	return p, nil
}

// launchdTarget is the launchd domain target of the agent.
func (o *serviceOS) launchdTarget() string {
	return "gui/" + strconv.Itoa(o.UID) + "/" + systemd.LaunchdLabel
}

func (o *serviceOS) plistPath() string {
	return filepath.Join(o.Home, "Library", "LaunchAgents", systemd.LaunchdLabel+".plist")
}

// launchdStateDir is --state-dir, else $OPENCLAW_STATE_DIR, else
// ~/.openclaw-edge (the gateway's own default, config.DefaultStateDirName).
func (o *serviceOS) launchdStateDir(flag string) (string, error) {
	dir := flag
	if dir == "" {
		dir = os.Getenv("OPENCLAW_STATE_DIR")
	}
	if dir == "" {
		if o.Home == "" {
			return "", errors.New("no home directory: pass --state-dir")
		}
		dir = filepath.Join(o.Home, config.DefaultStateDirName)
	}
	return filepath.Abs(dir)
}

// launchdLoaded says whether the agent is loaded (launchctl print succeeds).
func (o *serviceOS) launchdLoaded(ctx context.Context) bool {
	_, err := o.Runner.Run(ctx, "launchctl", "print", o.launchdTarget())
	return err == nil
}

func (o *serviceOS) launchdInstallPlan(ctx context.Context, bin string, opt installOptions) (plan, error) {
	if o.Home == "" {
		return plan{}, errors.New("no home directory for ~/Library/LaunchAgents")
	}
	state, err := o.launchdStateDir(opt.stateDir)
	if err != nil {
		return plan{}, err
	}
	l := systemd.Launchd{Binary: bin, StateDir: state}
	data, err := systemd.Plist(l)
	if err != nil {
		return plan{}, err
	}
	ps, changed, err := o.fileStep(o.plistPath(), data, 0o644, opt.force)
	if err != nil {
		return plan{}, err
	}
	p := plan{steps: []step{
		{action: "mkdir", path: filepath.Dir(l.LogFile()), mode: 0o700},
		ps,
	}}
	domain := "gui/" + strconv.Itoa(o.UID)
	switch loaded := o.launchdLoaded(ctx); {
	case loaded && changed:
		p.steps = append(p.steps,
			step{action: "run", argv: []string{"launchctl", "bootout", o.launchdTarget()}, optional: true},
			step{action: "run", argv: []string{"launchctl", "bootstrap", domain, o.plistPath()}})
	case loaded:
		p.steps = append(p.steps, step{action: "keep", path: o.launchdTarget(), note: "already loaded"})
	default:
		p.steps = append(p.steps,
			step{action: "run", argv: []string{"launchctl", "enable", o.launchdTarget()}},
			step{action: "run", argv: []string{"launchctl", "bootstrap", domain, o.plistPath()}})
	}
	p.after = []string{
		"openclaw-gateway runs as a launchd agent (" + systemd.LaunchdLabel + "), started at login.",
		"  state and config: " + state,
		"  logs:             " + l.LogFile(),
	}
	return p, nil
}

// uninstallPlan plans `openclaw gateway uninstall`: stop, disable, remove
// what install wrote; the state stays.
func (o *serviceOS) uninstallPlan(ctx context.Context, stateDir string) (plan, error) {
	var p plan
	if o.GOOS == "darwin" {
		state, err := o.launchdStateDir(stateDir)
		if err != nil {
			return plan{}, err
		}
		if o.launchdLoaded(ctx) {
			p.steps = append(p.steps, step{action: "run", argv: []string{"launchctl", "bootout", o.launchdTarget()}})
		}
		if o.exists(o.plistPath()) {
			p.steps = append(p.steps, step{action: "remove", path: o.plistPath()})
		}
		if len(p.steps) == 0 {
			p.after = append(p.after, "nothing to uninstall: no "+o.plistPath()+" and no loaded "+o.launchdTarget())
		}
		p.after = append(p.after, "state kept in "+state+" (config, sessions, models); remove it yourself when you no longer need it")
		return p, nil
	}
	unitPath := "/etc/systemd/system/" + systemd.UnitName
	usersPath := "/etc/sysusers.d/" + systemd.SysusersName
	if o.exists(unitPath) {
		p.steps = append(p.steps,
			// optional: a unit systemd never loaded cannot be stopped.
			step{action: "run", argv: []string{"systemctl", "disable", "--now", systemd.UnitName}, optional: true},
			step{action: "remove", path: unitPath},
			step{action: "run", argv: []string{"systemctl", "daemon-reload"}})
	}
	if o.exists(usersPath) {
		p.steps = append(p.steps, step{action: "remove", path: usersPath})
	}
	if len(p.steps) == 0 {
		p.after = append(p.after, "nothing to uninstall: no "+unitPath+" and no "+usersPath)
	}
	p.after = append(p.after,
		"state kept in "+systemd.StateDir+" (config, sessions, models); remove it yourself when you no longer need it: sudo rm -rf "+systemd.StateDir,
		"the "+systemd.User+" user stays (systemd-sysusers never removes users): sudo userdel "+systemd.User)
	return p, nil
}

// serviceStatus is `openclaw gateway status --json`.
type serviceStatus struct {
	Manager   string `json:"manager"` // "systemd" or "launchd"
	Unit      string `json:"unit"`    // the unit name or the launchd target
	File      string `json:"file,omitempty"`
	Installed bool   `json:"installed"`
	Enabled   string `json:"enabled,omitempty"` // systemd's UnitFileState: enabled, disabled …
	Active    string `json:"active"`            // systemd: active, inactive, failed …; launchd: running, not running, not loaded
	Sub       string `json:"sub,omitempty"`
	PID       int    `json:"pid,omitempty"`
	Since     string `json:"since,omitempty"`
	Restarts  int    `json:"restarts,omitempty"`
	Result    string `json:"result,omitempty"` // systemd: success, watchdog, exit-code …
}

func (o *serviceOS) status(ctx context.Context) (*serviceStatus, error) {
	if o.GOOS == "darwin" {
		st := &serviceStatus{Manager: "launchd", Unit: o.launchdTarget(), File: o.plistPath(), Installed: o.exists(o.plistPath()), Active: "not loaded"}
		out, err := o.Runner.Run(ctx, "launchctl", "print", o.launchdTarget())
		if err != nil {
			return st, nil // not loaded: launchctl print fails
		}
		st.Active = "not running"
		for _, line := range strings.Split(out, "\n") {
			k, v, ok := strings.Cut(strings.TrimSpace(line), " = ")
			switch {
			case !ok:
			case k == "state":
				st.Active = v
			case k == "pid":
				st.PID, _ = strconv.Atoi(v)
			case k == "runs":
				st.Restarts, _ = strconv.Atoi(v)
			case k == "last exit code":
				st.Result = v
			}
		}
		return st, nil
	}
	if err := o.needSystemd(); err != nil {
		return nil, err
	}
	out, err := o.run(ctx, "systemctl", "show", systemd.UnitName, "--no-pager",
		"--property=LoadState,UnitFileState,ActiveState,SubState,MainPID,ActiveEnterTimestamp,NRestarts,Result,FragmentPath")
	if err != nil {
		return nil, fmt.Errorf("ask systemd about %s: %w", systemd.UnitName, err)
	}
	st := &serviceStatus{Manager: "systemd", Unit: systemd.UnitName}
	for _, line := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), "=")
		switch k {
		case "LoadState":
			st.Installed = v == "loaded"
		case "UnitFileState":
			st.Enabled = v
		case "ActiveState":
			st.Active = v
		case "SubState":
			st.Sub = v
		case "MainPID":
			st.PID, _ = strconv.Atoi(v)
		case "ActiveEnterTimestamp":
			st.Since = v
		case "NRestarts":
			st.Restarts, _ = strconv.Atoi(v)
		case "Result":
			st.Result = v
		case "FragmentPath":
			st.File = v
		}
	}
	return st, nil
}

// control runs start, stop or restart.
func (o *serviceOS) control(ctx context.Context, w io.Writer, verb string) error {
	var argv [][]string
	if o.GOOS == "darwin" {
		domain := "gui/" + strconv.Itoa(o.UID)
		switch verb {
		case "start":
			if o.launchdLoaded(ctx) {
				argv = [][]string{{"launchctl", "kickstart", o.launchdTarget()}}
			} else {
				if !o.exists(o.plistPath()) {
					return fmt.Errorf("the gateway agent is not installed (no %s): run `openclaw gateway install`", o.plistPath())
				}
				argv = [][]string{{"launchctl", "bootstrap", domain, o.plistPath()}}
			}
		case "stop": // unloads it until start or the next login
			argv = [][]string{{"launchctl", "bootout", o.launchdTarget()}}
		case "restart":
			argv = [][]string{{"launchctl", "kickstart", "-k", o.launchdTarget()}}
		}
	} else {
		argv = [][]string{{"systemctl", verb, systemd.UnitName}}
	}
	for _, a := range argv {
		fmt.Fprintln(w, step{action: "run", argv: a})
		if _, err := o.run(ctx, a...); err != nil {
			if o.GOOS == "linux" {
				return fmt.Errorf("%w (see `journalctl -u %s`)", err, systemd.UnitName)
			}
			return err
		}
	}
	return nil
}

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
	var opt installOptions
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
			if err := o.checkPlatform(); err != nil {
				return err
			}
			if o.GOOS == "linux" && !opt.dryRun {
				if err := o.needRoot(cmd.CommandPath()); err != nil {
					return err
				}
				if err := o.needSystemd(); err != nil {
					return err
				}
			}
			opt.stateDir = a.stateDir // macOS: the global --state-dir; Linux uses /var/lib/openclaw
			p, err := o.installPlan(cmd.Context(), opt)
			if err != nil {
				return err
			}
			if err := o.apply(cmd.Context(), a.stdout, p, opt.dryRun); err != nil {
				return err
			}
			if opt.print {
				for _, s := range p.steps {
					if s.action == "write" {
						fmt.Fprintf(a.stdout, "\n--- %s\n%s", s.path, s.data)
					}
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&opt.binary, "binary", "", "the openclaw-gateway to run (default: beside openclaw, else in $PATH)")
	cmd.Flags().BoolVar(&opt.force, "force", false, "replace an existing unit, sysusers entry or plist that differs")
	cmd.Flags().BoolVar(&opt.dryRun, "dry-run", false, "print the plan, change nothing")
	cmd.Flags().BoolVar(&opt.print, "print", false, "also print the contents of the files written")
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
			if err := o.checkPlatform(); err != nil {
				return err
			}
			if o.GOOS == "linux" && !dryRun {
				if err := o.needRoot(cmd.CommandPath()); err != nil {
					return err
				}
			}
			p, err := o.uninstallPlan(cmd.Context(), a.stateDir) // macOS: the state dir to mention
			if err != nil {
				return err
			}
			return o.apply(cmd.Context(), a.stdout, p, dryRun)
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
			if err := o.checkPlatform(); err != nil {
				return a.jsonFailure(asJSON, err)
			}
			st, err := o.status(cmd.Context())
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
			if err := o.checkPlatform(); err != nil {
				return err
			}
			if o.GOOS == "linux" {
				if err := o.needRoot(cmd.CommandPath()); err != nil {
					return err
				}
				if err := o.needSystemd(); err != nil {
					return err
				}
			}
			return o.control(cmd.Context(), a.stdout, verb)
		},
	}
}
