package command

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/config"
	"github.com/openclaw-edge/edge/engine/doctor"
	"github.com/openclaw-edge/edge/systemd"
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

When no gateway answers at the local socket, the checks that need none run
here, on the files a gateway started now would use: the config file (every
problem with its file and line, as ` + "`openclaw config validate`" + `), the state
dir (there, a directory, yours, writable, 0700), its free disk space, the
LAN API's port (gateway.bind and gateway.port: free, or held by another
program) and openclaw-runner ($OPENCLAW_RUNNER, else beside openclaw, else
in $PATH); the gateway check fails and says how to start it.

Each check prints OK, WARN or FAIL with what was found, and what to do
indented under it. Exit code 1 when a check fails or the gateway cannot be
reached, else 0 (warnings included). --json prints {"ok", "checks": [{"name",
"status", "detail", "fix"}]}, also when the gateway is down (its check
failing); when a paired gateway cannot be reached, or the socket cannot be
used, {"ok": false, "error": {"code", "message"}}.`,
		Example: `  openclaw doctor
  openclaw doctor --json | jq -r '.checks[] | select(.status != "ok") | .fix'`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			socket := a.client().Socket()
			st, err := a.client().Status(cmd.Context())
			if errors.Is(err, client.ErrGatewayDown) && !a.client().Remote() {
				return a.doctorHere(asJSON, socket)
			}
			if err != nil {
				if !asJSON {
					printChecks(a.stdout, []api.DoctorCheck{{Name: "gateway", Status: api.DoctorFail,
						Detail: "not reachable at " + socket}}) // why, and what to do: the error printed next
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

// doctorHere is the doctor without a gateway: the gateway check fails, and
// what needs no gateway is checked here, on the files a gateway started
// now would use (found as config validate finds them).
func (a *app) doctorHere(asJSON bool, socket string) error {
	where := config.Where{Config: a.configFile, StateDir: a.stateDir}
	if where.StateDir == "" && os.Getenv("OPENCLAW_STATE_DIR") == "" && socket == systemSocket {
		where.StateDir = systemd.StateDir // the service's (stale) socket: its state
	}
	loc, locErr := config.Locate(where)
	checks := []api.DoctorCheck{gatewayDownCheck(socket, newServiceOS().Installed())}
	cc, cfg := configCheck(loc, locErr)
	checks = append(checks, cc)
	if loc.StateDir != "" {
		uid := os.Getuid()
		if loc.StateDir == systemd.StateDir {
			if s, ok := lookupServiceUID(); ok {
				uid = s
			}
		}
		checks = append(checks, stateDirCheck(loc.StateDir, uid), diskCheck(loc.StateDir))
	}
	checks = append(checks, portCheck(cfg.Gateway.Bind, cfg.Gateway.Port, net.Listen))
	local := false
	if ag, ok := cfg.Agent(cfg.DefaultAgentID()); ok {
		local = strings.HasPrefix(ag.Model.Primary, "local/")
	}
	checks = append(checks, runnerHereCheck(func() (string, error) { return engine.FindProgram(runnerName, runnerEnv) }, local))

	report := api.NewDoctorReport(checks)
	if asJSON {
		if err := writeJSON(a.stdout, report); err != nil {
			return err
		}
	} else {
		printChecks(a.stdout, report.Checks)
	}
	var failed []string
	for _, c := range report.Checks {
		if c.Status == api.DoctorFail {
			failed = append(failed, c.Name)
		}
	}
	return fmt.Errorf("doctor: the gateway is not running (checked here what needs none); %d check(s) failed: %s", len(failed), strings.Join(failed, ", "))
}

// The runner binary of local models, as the gateway finds it
// (models/llamacpp, which the CLI does not link).
const (
	runnerName = "openclaw-runner"
	runnerEnv  = "OPENCLAW_RUNNER"
)

// gatewayDownCheck is the failing gateway check: nothing answers at socket;
// how to start it depends on whether the service is installed.
func gatewayDownCheck(socket string, installed bool) api.DoctorCheck {
	fix := "run it in the foreground: `openclaw gateway run`; or install it as a service: `sudo openclaw gateway install`"
	if installed {
		fix = "start the service: `sudo openclaw gateway start` (`openclaw gateway status` says how it ended); or run one in the foreground: `openclaw gateway run`"
	}
	return api.DoctorCheck{Name: "gateway", Status: api.DoctorFail,
		Detail: "not running: nothing answers at " + socket + "; the checks below ran here, without it", Fix: fix}
}

// configCheck is config validate's check of the file loc names (locErr:
// why none could be chosen), and the config to check the rest against:
// the built-in defaults when it is not valid.
func configCheck(loc config.Location, locErr error) (api.DoctorCheck, *config.Config) {
	const name = "config"
	fix := "fix the file: `openclaw config validate` lists every problem with its line"
	if locErr != nil {
		return api.DoctorCheck{Name: name, Status: api.DoctorFail, Detail: locErr.Error(), Fix: fix}, config.Default()
	}
	report := validateLocal(loc)
	var msgs []string
	for _, p := range report.Errors {
		msgs = append(msgs, p.Message)
	}
	if !report.OK {
		return api.DoctorCheck{Name: name, Status: api.DoctorFail, Detail: strings.Join(msgs, "; "), Fix: fix}, config.Default()
	}
	cfg, err := loc.Load()
	if err != nil { // it was valid a moment ago: changed since
		return api.DoctorCheck{Name: name, Status: api.DoctorFail, Detail: err.Error(), Fix: fix}, config.Default()
	}
	detail := loc.File
	if report.Missing {
		detail = loc.How() // "no openclaw.json … in the state dir …: the built-in defaults apply"
	}
	for _, w := range report.Warnings {
		msgs = append(msgs, w.Message)
	}
	if len(msgs) > 0 {
		return api.DoctorCheck{Name: name, Status: api.DoctorWarn, Detail: detail + ": " + strings.Join(msgs, "; "),
			Fix: "`openclaw config validate` explains each warning"}, cfg
	}
	return api.DoctorCheck{Name: name, Status: api.DoctorOK, Detail: detail}, cfg
}

// stateDirCheck is the gateway's own state dir check (owner uid, not open
// to others) and, for a state dir of this user, that it can be written. A
// state dir that does not exist yet is made by the gateway's first start.
func stateDirCheck(dir string, uid int) api.DoctorCheck {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return api.DoctorCheck{Name: doctor.NameStateDir, Status: api.DoctorWarn,
			Detail: dir + " does not exist yet: the gateway makes it when it starts",
			Fix:    "start the gateway; if it should use another state dir, pass --state-dir or set $OPENCLAW_STATE_DIR"}
	}
	c := doctor.StateDir(dir, fi, err, uid)
	if c.Status == api.DoctorFail || uid != os.Getuid() {
		return c
	}
	f, err := os.CreateTemp(dir, ".doctor-*")
	if err != nil {
		return api.DoctorCheck{Name: doctor.NameStateDir, Status: api.DoctorFail,
			Detail: "the gateway cannot write to its state dir: " + err.Error(),
			Fix:    "make " + dir + " writable (chmod 700 " + dir + "), or use another with --state-dir"}
	}
	f.Close()
	if err := os.Remove(f.Name()); err != nil {
		return api.DoctorCheck{Name: doctor.NameStateDir, Status: api.DoctorWarn,
			Detail: "a test file could not be removed: " + err.Error(), Fix: "remove " + f.Name()}
	}
	return c
}

// diskCheck is the gateway's disk space check on the file system of dir
// (or of its nearest parent that exists: the state dir may be made later).
func diskCheck(dir string) api.DoctorCheck {
	at := dir
	for {
		if _, err := os.Stat(at); err == nil || filepath.Dir(at) == at {
			break
		}
		at = filepath.Dir(at)
	}
	free, total, err := doctor.DiskSpace(at)
	return doctor.Disk(at, free, total, err)
}

// portCheck says whether the gateway could listen on its LAN API port
// (gateway.bind, gateway.port): it is down, so a port in use is another
// program's. Loopback only warns, as the gateway's own check does: the
// control socket works without it.
func portCheck(bind string, port int, listen func(network, addr string) (net.Listener, error)) api.DoctorCheck {
	host := bind
	switch bind {
	case "", "loopback":
		host = "127.0.0.1"
	case "lan":
		host = ""
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	where := fmt.Sprintf("port %d (gateway.port) on %s (gateway.bind %s)", port, cmpOr(host, "every address"), cmpOr(bind, "loopback"))
	ln, err := listen("tcp", addr)
	if err == nil {
		ln.Close()
		return api.DoctorCheck{Name: doctor.NameLAN, Status: api.DoctorOK, Detail: where + " is free"}
	}
	status := api.DoctorFail
	if host == "127.0.0.1" {
		status = api.DoctorWarn
	}
	var detail string
	if errors.Is(err, syscall.EADDRINUSE) {
		detail = where + " is in use by another program: the gateway's LAN API could not listen there"
	} else {
		detail = where + " cannot be listened on: " + err.Error()
	}
	return api.DoctorCheck{Name: doctor.NameLAN, Status: status, Detail: detail,
		Fix: fmt.Sprintf("find the program with `ss -ltnp 'sport = :%d'` (or `lsof -i :%d`) and stop it, or set gateway.port to a free one (`openclaw config set gateway.port %d`)", port, port, port+1)}
}

// cmpOr is s, or def when s is empty.
func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// runnerHereCheck looks for openclaw-runner as the gateway does, from
// here. Without it local models cannot run: a failure when the default
// agent's model is one.
func runnerHereCheck(find func() (string, error), localDefault bool) api.DoctorCheck {
	p, err := find()
	if err == nil {
		return api.DoctorCheck{Name: doctor.NameRunner, Status: api.DoctorOK, Detail: p}
	}
	var pe *engine.ProgramError
	detail := err.Error()
	switch {
	case errors.As(err, &pe) && pe.EnvValue != "":
		detail = fmt.Sprintf("$%s names %s: %v", runnerEnv, pe.EnvValue, pe.Err)
	case errors.As(err, &pe):
		detail = fmt.Sprintf("%s is neither beside %s nor in $PATH", runnerName, pe.Exe)
	}
	if localDefault {
		return api.DoctorCheck{Name: doctor.NameRunner, Status: api.DoctorFail, Detail: detail + ": the default model is a local one and cannot run",
			Fix: "install openclaw-runner beside openclaw-gateway (make build writes bin/openclaw-runner), or set $" + runnerEnv + "; " + api.NoRunnerHint}
	}
	return api.DoctorCheck{Name: doctor.NameRunner, Status: api.DoctorWarn, Detail: detail,
		Fix: "remote providers and Ollama are unaffected; " + api.NoRunnerHint}
}
