// Package service installs and controls the gateway as a service of this
// machine, the work of `openclaw gateway install|uninstall|status|start|
// stop|restart` (the commands parse the flags and print): systemd's system
// manager on Linux (the unit and sysusers entry of systemd/), launchd's
// user agents on macOS. It is local: it never talks to the gateway's API.
// Every change it makes is printed before it is made, a dry run prints them
// only, and a file that exists with other contents is never replaced
// without force.
package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/openclaw-edge/edge/cli/atomicfile"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/config"
	"github.com/openclaw-edge/edge/systemd"
)

// Runner runs one OS command (systemctl, launchctl,
// systemd-sysusers) and returns its combined output.
type Runner interface {
	Run(ctx context.Context, argv ...string) (string, error)
}

// OS is what `openclaw gateway` needs from the machine. Tests give it
// a fake runner that records argv and a temporary directory as Root.
type OS struct {
	GOOS string
	Root string // prefix of every file read or written; "/" for real
	UID  int
	Home string
	// UserHome is the home of the user who ran the command: under sudo,
	// $SUDO_USER's, where their own gateway kept its state; "" = Home.
	UserHome string
	Runner   Runner
	// Executable and LookPath find the default openclaw-gateway.
	Executable func() (string, error)
	LookPath   func(string) (string, error)
}

// Local returns this machine.
func Local() *OS {
	home, _ := os.UserHomeDir()
	return &OS{
		GOOS: runtime.GOOS, Root: "/", UID: os.Getuid(), Home: home, UserHome: sudoHome(),
		Runner: execRunner{}, Executable: os.Executable, LookPath: exec.LookPath,
	}
}

// sudoHome is the home of the user who ran sudo: sudo sets $HOME to
// root's, but the state a user's own gateway kept is in theirs.
func sudoHome() string {
	name := os.Getenv("SUDO_USER")
	if os.Getuid() != 0 || name == "" || name == "root" {
		return ""
	}
	u, err := user.Lookup(name)
	if err != nil {
		return ""
	}
	return u.HomeDir
}

// execRunner runs commands for real.
type execRunner struct{}

func (execRunner) Run(ctx context.Context, argv ...string) (string, error) {
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	return string(out), err
}

// Path is p (an absolute path of the machine) under Root.
func (o *OS) Path(p string) string { return filepath.Join(o.Root, p) }

// run runs argv and wraps a failure with the command and its output.
func (o *OS) run(ctx context.Context, argv ...string) (string, error) {
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

// Step is one change of a plan: a file written or removed, a directory
// made, a command run.
type Step struct {
	action   string // "write", "mkdir", "remove", "run", "keep", "move"
	path     string
	dest     string // move: where path goes
	argv     []string
	note     string
	data     []byte
	mode     fs.FileMode
	optional bool // a failing command is reported and the plan goes on
}

func (s Step) String() string {
	switch s.action {
	case "run":
		return fmt.Sprintf("%-6s %s", "run", strings.Join(s.argv, " "))
	case "move":
		return fmt.Sprintf("%-6s %s → %s (%s)", "move", s.path, s.dest, s.note)
	default:
		line := fmt.Sprintf("%-6s %s", s.action, s.path)
		if s.note != "" {
			line += " (" + s.note + ")"
		}
		return line
	}
}

// Plan is what install or uninstall will do, and what to say after.
type Plan struct {
	steps []Step
	after []string // lines printed once the steps are done
}

// PrintFiles prints the contents of each file the plan writes (install
// --print).
func (p Plan) PrintFiles(w io.Writer) {
	for _, s := range p.steps {
		if s.action == "write" {
			fmt.Fprintf(w, "\n--- %s\n%s", s.path, s.data)
		}
	}
}

// Apply prints each step, then does it; dry-run prints only.
func (o *OS) Apply(ctx context.Context, w io.Writer, p Plan, dryRun bool) error {
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
			err = writeServiceFile(o.Path(s.path), s.data, s.mode)
		case "mkdir":
			err = os.MkdirAll(o.Path(s.path), s.mode)
		case "remove":
			err = os.Remove(o.Path(s.path))
			if errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
		case "move":
			err = moveState(o.Path(s.path), o.Path(s.dest), s.path, s.dest)
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
// through atomicfile.Write, then gives it mode: a crash leaves the old file
// or the new one, never half of one.
func writeServiceFile(path string, data []byte, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	err := atomicfile.Write(path, func(w io.Writer) error {
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
func (o *OS) fileStep(path string, data []byte, mode fs.FileMode, force bool) (s Step, changed bool, err error) {
	old, err := os.ReadFile(o.Path(path))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Step{action: "write", path: path, data: data, mode: mode, note: "new"}, true, nil
	case err != nil:
		return Step{}, false, fmt.Errorf("read %s: %w", path, err)
	case bytes.Equal(old, data):
		return Step{action: "keep", path: path, note: "unchanged"}, false, nil
	case !force:
		return Step{}, false, fmt.Errorf("%s already exists and differs from what install writes; nothing was changed. See what install would write with `openclaw gateway install --dry-run --force --print`; replace it with --force", path)
	}
	return Step{action: "write", path: path, data: data, mode: mode, note: "replaces a different file, --force"}, true, nil
}

// Installed says whether install wrote the service's file: the systemd
// unit, or the launchd plist.
func (o *OS) Installed() bool {
	if o.GOOS == "darwin" {
		return o.Exists(o.plistPath())
	}
	return o.Exists("/etc/systemd/system/" + systemd.UnitName)
}

// Exists says whether path (under Root) exists.
func (o *OS) Exists(path string) bool {
	_, err := os.Stat(o.Path(path))
	return err == nil
}

// NeedRoot is the error of a system-service action run by another user.
func (o *OS) NeedRoot(cmdPath string) error {
	if o.UID == 0 {
		return nil
	}
	return fmt.Errorf("%s changes the system service and needs root: run `sudo %s` (or --dry-run to see the plan)", cmdPath, cmdPath)
}

// NeedSystemd fails where systemd is not the running init system.
func (o *OS) NeedSystemd() error {
	if o.Exists("/run/systemd/system") {
		return nil
	}
	return &api.Error{Code: "no_service_manager", Message: "systemd is not running on this machine (no /run/systemd/system): run `openclaw-gateway run` under your own init system or supervisor instead"}
}

// CheckPlatform refuses systems with neither systemd nor launchd support.
func (o *OS) CheckPlatform() error {
	if o.GOOS == "linux" || o.GOOS == "darwin" {
		return nil
	}
	return &api.Error{Code: "no_service_manager", Message: fmt.Sprintf("openclaw gateway manages a systemd service (Linux) or a launchd agent (macOS), not a %s service: run `openclaw-gateway run` yourself", o.GOOS)}
}

// ErrNoGateway is GatewayBinary's error when openclaw-gateway is neither
// beside openclaw nor in $PATH.
var ErrNoGateway = errors.New("cannot find openclaw-gateway beside openclaw or in $PATH: build it (make build) or install it")

// GatewayBinary resolves flag (install's --binary), else openclaw-gateway
// beside this executable, else in $PATH, to an absolute path of a regular
// executable file (a path of the machine: under Root it is o.Path of it).
func (o *OS) GatewayBinary(flag string) (string, error) {
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
			return "", ErrNoGateway
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
func (o *OS) isExecutable(p string) bool {
	fi, err := os.Stat(o.Path(p))
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

// InstallOptions are the flags of install.
type InstallOptions struct {
	Binary string
	// StateDir is the global --state-dir: launchd's state dir; on Linux
	// (the service's is /var/lib/openclaw) the one to move from.
	StateDir string
	Force    bool
	DryRun   bool
	Print    bool
	// MigrateState moves the state a user's own gateway kept (StateDirs'
	// from) to the service's state dir.
	MigrateState bool
	// Running is a gateway that answers at the socket of the state dir to
	// move, as the caller found it; nil: none answers.
	Running *Running
}

// Running is a gateway that answers at its control socket.
type Running struct {
	Socket string
	PID    int // 0: its status does not say
}

// InstallPlan plans `openclaw gateway install`.
func (o *OS) InstallPlan(ctx context.Context, opt InstallOptions) (Plan, error) {
	bin, err := o.GatewayBinary(opt.Binary)
	if errors.Is(err, ErrNoGateway) {
		return Plan{}, fmt.Errorf("%w, then pass --binary /path/to/openclaw-gateway", err)
	}
	if err != nil {
		return Plan{}, err
	}
	if o.GOOS == "darwin" {
		return o.launchdInstallPlan(ctx, bin, opt)
	}
	if hiddenByUnit(bin) {
		return Plan{}, fmt.Errorf("gateway binary %s lies under a directory the unit hides (ProtectHome=yes: /home, /root, /run/user): copy it out first, e.g. `sudo install -m 755 %s /usr/local/bin/` and pass --binary /usr/local/bin/openclaw-gateway", bin, bin)
	}
	unit, err := systemd.Unit(bin)
	if err != nil {
		return Plan{}, err
	}
	unitPath := "/etc/systemd/system/" + systemd.UnitName
	usersPath := "/etc/sysusers.d/" + systemd.SysusersName
	us, unitChanged, err := o.fileStep(unitPath, unit, 0o644, opt.Force)
	if err != nil {
		return Plan{}, err
	}
	ss, _, err := o.fileStep(usersPath, systemd.Sysusers(), 0o644, opt.Force)
	if err != nil {
		return Plan{}, err
	}
	from, to, err := o.StateDirs(opt.StateDir)
	if err != nil {
		return Plan{}, err
	}
	move, notes, err := o.stateSteps(from, to, opt, 0)
	if err != nil {
		return Plan{}, err
	}
	p := Plan{steps: []Step{us, ss,
		{action: "run", argv: []string{"systemd-sysusers", usersPath}},
		{action: "run", argv: []string{"systemctl", "daemon-reload"}},
	}}
	// The state moves once the user exists to own it, before the service starts.
	p.steps = append(p.steps, move...)
	if unitChanged {
		// restart: a running gateway picks up the new unit now.
		p.steps = append(p.steps,
			Step{action: "run", argv: []string{"systemctl", "enable", systemd.UnitName}},
			Step{action: "run", argv: []string{"systemctl", "restart", systemd.UnitName}})
	} else {
		p.steps = append(p.steps, Step{action: "run", argv: []string{"systemctl", "enable", "--now", systemd.UnitName}})
	}
	p.after = []string{
		"openclaw-gateway runs as the " + systemd.User + " user, enabled at boot.",
		"  state and config: " + systemd.StateDir + " (config: " + systemd.StateDir + "/openclaw.json)",
		"  control socket:   " + systemd.Socket + " (the CLI finds it; use it as root or " + systemd.User + ")",
		"  logs:             journalctl -u " + systemd.UnitName + " -f",
	}
	p.after = append(p.after, notes...)
	return p, nil
}

// launchdTarget is the launchd domain target of the agent.
func (o *OS) launchdTarget() string {
	return "gui/" + strconv.Itoa(o.UID) + "/" + systemd.LaunchdLabel
}

func (o *OS) plistPath() string {
	return filepath.Join(o.Home, "Library", "LaunchAgents", systemd.LaunchdLabel+".plist")
}

// launchdStateDir is --state-dir, else $OPENCLAW_STATE_DIR, else
// ~/.openclaw-edge (the gateway's own default, config.DefaultStateDirName).
func (o *OS) launchdStateDir(flag string) (string, error) {
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
func (o *OS) launchdLoaded(ctx context.Context) bool {
	_, err := o.Runner.Run(ctx, "launchctl", "print", o.launchdTarget())
	return err == nil
}

func (o *OS) launchdInstallPlan(ctx context.Context, bin string, opt InstallOptions) (Plan, error) {
	if o.Home == "" {
		return Plan{}, errors.New("no home directory for ~/Library/LaunchAgents")
	}
	state, err := o.launchdStateDir(opt.StateDir)
	if err != nil {
		return Plan{}, err
	}
	l := systemd.Launchd{Binary: bin, StateDir: state}
	data, err := systemd.Plist(l)
	if err != nil {
		return Plan{}, err
	}
	ps, changed, err := o.fileStep(o.plistPath(), data, 0o644, opt.Force)
	if err != nil {
		return Plan{}, err
	}
	loaded := o.launchdLoaded(ctx)
	agentPID := 0
	if loaded && opt.MigrateState && opt.Running != nil { // is the gateway running from the old state the agent?
		if st, err := o.Status(ctx); err == nil {
			agentPID = st.PID
		}
	}
	from, _, err := o.StateDirs(opt.StateDir)
	if err != nil {
		return Plan{}, err
	}
	move, notes, err := o.stateSteps(from, state, opt, agentPID)
	if err != nil {
		return Plan{}, err
	}
	var p Plan
	if len(move) > 0 && loaded {
		// The agent may run from the state that moves: out with it first.
		p.steps = append(p.steps, Step{action: "run", argv: []string{"launchctl", "bootout", o.launchdTarget()}, optional: true})
	}
	p.steps = append(p.steps, move...) // before logs/ makes the target non-empty
	p.steps = append(p.steps, Step{action: "mkdir", path: filepath.Dir(l.LogFile()), mode: 0o700}, ps)
	domain := "gui/" + strconv.Itoa(o.UID)
	switch {
	case len(move) > 0 && loaded:
		p.steps = append(p.steps, Step{action: "run", argv: []string{"launchctl", "bootstrap", domain, o.plistPath()}})
	case loaded && changed:
		p.steps = append(p.steps,
			Step{action: "run", argv: []string{"launchctl", "bootout", o.launchdTarget()}, optional: true},
			Step{action: "run", argv: []string{"launchctl", "bootstrap", domain, o.plistPath()}})
	case loaded:
		p.steps = append(p.steps, Step{action: "keep", path: o.launchdTarget(), note: "already loaded"})
	default:
		p.steps = append(p.steps,
			Step{action: "run", argv: []string{"launchctl", "enable", o.launchdTarget()}},
			Step{action: "run", argv: []string{"launchctl", "bootstrap", domain, o.plistPath()}})
	}
	p.after = []string{
		"openclaw-gateway runs as a launchd agent (" + systemd.LaunchdLabel + "), started at login.",
		"  state and config: " + state,
		"  logs:             " + l.LogFile(),
	}
	p.after = append(p.after, notes...)
	return p, nil
}

// UninstallPlan plans `openclaw gateway uninstall`: stop, disable, remove
// what install wrote; the state stays.
func (o *OS) UninstallPlan(ctx context.Context, stateDir string) (Plan, error) {
	var p Plan
	if o.GOOS == "darwin" {
		state, err := o.launchdStateDir(stateDir)
		if err != nil {
			return Plan{}, err
		}
		if o.launchdLoaded(ctx) {
			p.steps = append(p.steps, Step{action: "run", argv: []string{"launchctl", "bootout", o.launchdTarget()}})
		}
		if o.Exists(o.plistPath()) {
			p.steps = append(p.steps, Step{action: "remove", path: o.plistPath()})
		}
		if len(p.steps) == 0 {
			p.after = append(p.after, "nothing to uninstall: no "+o.plistPath()+" and no loaded "+o.launchdTarget())
		}
		p.after = append(p.after, "state kept in "+state+" (config, sessions, models); remove it yourself when you no longer need it")
		return p, nil
	}
	unitPath := "/etc/systemd/system/" + systemd.UnitName
	usersPath := "/etc/sysusers.d/" + systemd.SysusersName
	if o.Exists(unitPath) {
		p.steps = append(p.steps,
			// optional: a unit systemd never loaded cannot be stopped.
			Step{action: "run", argv: []string{"systemctl", "disable", "--now", systemd.UnitName}, optional: true},
			Step{action: "remove", path: unitPath},
			Step{action: "run", argv: []string{"systemctl", "daemon-reload"}})
	}
	if o.Exists(usersPath) {
		p.steps = append(p.steps, Step{action: "remove", path: usersPath})
	}
	if len(p.steps) == 0 {
		p.after = append(p.after, "nothing to uninstall: no "+unitPath+" and no "+usersPath)
	}
	p.after = append(p.after,
		"state kept in "+systemd.StateDir+" (config, sessions, models); remove it yourself when you no longer need it: sudo rm -rf "+systemd.StateDir,
		"the "+systemd.User+" user stays (systemd-sysusers never removes users): sudo userdel "+systemd.User)
	return p, nil
}

// Status is `openclaw gateway status --json`.
type Status struct {
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
	// Socket is where a gateway answered (StatusOf); Managed says whether
	// the service manager runs that gateway. When it does not, Active is
	// "running" and PID the gateway's.
	Socket  string `json:"socket,omitempty"`
	Managed *bool  `json:"managed,omitempty"`
	// ManagerError says why the service manager could not be asked while
	// a gateway answered anyway.
	ManagerError string `json:"managerError,omitempty"`
}

// StatusOf is Status with what a gateway answering at its control socket
// (running, nil: none answers) says: a gateway run by hand or by another
// supervisor is running, whatever the service manager says about the
// service, and the service manager's failure is then a note, not an error.
func (o *OS) StatusOf(ctx context.Context, running *Running) (*Status, error) {
	var st *Status
	err := o.CheckPlatform()
	if err == nil {
		st, err = o.Status(ctx)
	}
	if running == nil {
		return st, err
	}
	if err != nil {
		// Status fails only where systemd is out of reach (darwin never fails).
		st = &Status{Unit: systemd.UnitName, ManagerError: err.Error()}
		if o.GOOS == "linux" {
			st.Manager, st.Installed = "systemd", o.Exists("/etc/systemd/system/"+systemd.UnitName)
		}
	}
	managed := running.PID > 0 && st.PID == running.PID
	if running.PID == 0 { // an older gateway's status has no pid: trust the manager
		managed = st.Active == "active" || st.Active == "running"
	}
	st.Socket, st.Managed = running.Socket, &managed
	if !managed {
		// What the manager said of its last run is not this gateway's.
		st.Active, st.Sub, st.PID, st.Since, st.Restarts, st.Result = "running", "", running.PID, "", 0, ""
	}
	return st, nil
}

// Status asks the service manager about the gateway; a service that is
// not installed or not running is a Status, not an error.
func (o *OS) Status(ctx context.Context) (*Status, error) {
	if o.GOOS == "darwin" {
		st := &Status{Manager: "launchd", Unit: o.launchdTarget(), File: o.plistPath(), Installed: o.Exists(o.plistPath()), Active: "not loaded"}
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
	if err := o.NeedSystemd(); err != nil {
		return nil, err
	}
	out, err := o.run(ctx, "systemctl", "show", systemd.UnitName, "--no-pager",
		"--property=LoadState,UnitFileState,ActiveState,SubState,MainPID,ActiveEnterTimestamp,NRestarts,Result,FragmentPath")
	if err != nil {
		return nil, fmt.Errorf("ask systemd about %s: %w", systemd.UnitName, err)
	}
	st := &Status{Manager: "systemd", Unit: systemd.UnitName}
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

// Control runs start, stop or restart.
func (o *OS) Control(ctx context.Context, w io.Writer, verb string) error {
	var argv [][]string
	if o.GOOS == "darwin" {
		domain := "gui/" + strconv.Itoa(o.UID)
		switch verb {
		case "start":
			if o.launchdLoaded(ctx) {
				argv = [][]string{{"launchctl", "kickstart", o.launchdTarget()}}
			} else {
				if !o.Exists(o.plistPath()) {
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
		fmt.Fprintln(w, Step{action: "run", argv: a})
		if _, err := o.run(ctx, a...); err != nil {
			if o.GOOS == "linux" {
				return fmt.Errorf("%w (see `journalctl -u %s`)", err, systemd.UnitName)
			}
			return err
		}
	}
	return nil
}
