// Package doctor holds the gateway's self-checks: what GET /v1/doctor
// reports and `openclaw doctor` prints (docs/design.md §9). Every check runs in
// the gateway process, on the gateway's machine, so a CLI on another
// machine gets the same answers as one on the box.
//
// Each check is a small function of the facts it looks at (a file's info, a
// free-space figure, the clock), so its table test needs no real machine;
// Run gathers the facts (through Inputs, whose nil fields mean "ask this
// machine") and runs them all. Every check that is not ok says what to do
// (DoctorCheck.Fix).
//
// Choices where the spec was silent:
//   - warn means "works, but look at it"; fail means "something does not
//     work until this is fixed" (the CLI exits 1 on a fail only).
//   - A model bigger than the RAM fails; one over 3/4 of it warns (the KV
//     cache, the gateway and the OS need the rest).
//   - A configured channel that is not linked fails: it receives nothing.
package doctor

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
)

// Names of the checks.
const (
	NameStateDir = "state dir"
	NameDisk     = "disk space"
	NameSocket   = "control socket"
	NameClock    = "clock"
	NameLAN      = "LAN API"
	NameLandlock = "exec sandbox"
	NameModel    = "default model"
	NameRunner   = "local runner"
	NameStateDB  = "state database"
	NameModels   = "local models"
	NameChannels = "channels"
	NameDMScope  = "session scope"
	NameHelpers  = "helper programs"
)

func ok(name, detail string) api.DoctorCheck {
	return api.DoctorCheck{Name: name, Status: api.DoctorOK, Detail: detail}
}

func warn(name, detail, fix string) api.DoctorCheck {
	return api.DoctorCheck{Name: name, Status: api.DoctorWarn, Detail: detail, Fix: fix}
}

func fail(name, detail, fix string) api.DoctorCheck {
	return api.DoctorCheck{Name: name, Status: api.DoctorFail, Detail: detail, Fix: fix}
}

// userName names uid for a chown command: the user name when it is known.
func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		return u.Username
	}
	return strconv.Itoa(uid)
}

// StateDir checks the state directory (fi and err are os.Stat's): it must
// be a directory owned by uid, the gateway's user, that nobody else can
// write; 0700 is expected (the sessions and channel keys are private).
func StateDir(path string, fi fs.FileInfo, err error, uid int) api.DoctorCheck {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fail(NameStateDir, path+" does not exist", "restart the gateway (it creates it), or check --state-dir / $OPENCLAW_STATE_DIR")
	case err != nil:
		return fail(NameStateDir, fmt.Sprintf("cannot look at %s: %v", path, err), fmt.Sprintf("make %s and its parents reachable by the gateway's user (%s)", path, userName(uid)))
	case !fi.IsDir():
		return fail(NameStateDir, path+" is not a directory", fmt.Sprintf("move %s away and restart the gateway", path))
	}
	if owner, known := fileOwner(fi); known && owner != uid {
		return fail(NameStateDir, fmt.Sprintf("%s is owned by uid %d, not the gateway's user (%s, uid %d)", path, owner, userName(uid), uid),
			fmt.Sprintf("sudo chown -R %s %s", userName(uid), path))
	}
	perm := fi.Mode().Perm()
	switch {
	case perm&0o022 != 0:
		return fail(NameStateDir, fmt.Sprintf("%s has mode %04o: other users can write to it", path, perm), "chmod 700 "+path)
	case perm&0o077 != 0:
		return warn(NameStateDir, fmt.Sprintf("%s has mode %04o: other users can read sessions and keys", path, perm), "chmod 700 "+path)
	}
	return ok(NameStateDir, fmt.Sprintf("%s (mode %04o, owned by the gateway's user)", path, perm))
}

// Disk space thresholds of the state dir's file system.
const (
	diskFailBytes = 100 << 20
	diskWarnBytes = 1 << 30
	diskWarnPct   = 10
)

// Disk checks the free space of the file system of the state dir: under
// 1 GiB or 10 % warns, under 100 MiB fails (a full disk stops recording
// messages). free and total are in bytes, err is the statfs error.
func Disk(path string, free, total uint64, err error) api.DoctorCheck {
	if err != nil {
		return warn(NameDisk, fmt.Sprintf("cannot tell the free space of %s: %v", path, err), "check it with `df -h "+path+"`")
	}
	detail := fmt.Sprintf("%s free of %s on the file system of %s", Bytes(int64(free)), Bytes(int64(total)), path)
	fix := "free some space: remove models you do not use (`openclaw models list`, `openclaw models rm NAME`) or other files on that disk"
	switch {
	case free < diskFailBytes:
		return fail(NameDisk, detail+": the gateway can no longer record messages safely", fix)
	case free < diskWarnBytes || (total > 0 && free*100 < total*diskWarnPct):
		return warn(NameDisk, detail+": running low", fix)
	}
	return ok(NameDisk, detail)
}

// Socket checks the control socket (fi and statErr are os.Lstat's,
// dialErr the result of connecting to it): it must exist, be a socket
// that answers, and not be open to every user (0600, or 0660 with the
// openclaw group).
func Socket(path string, fi fs.FileInfo, statErr, dialErr error) api.DoctorCheck {
	restart := "restart the gateway (`sudo systemctl restart openclaw-gateway`, or `openclaw-gateway run`): it creates the socket again"
	switch {
	case path == "":
		return warn(NameSocket, "the gateway serves no control socket", restart)
	case errors.Is(statErr, fs.ErrNotExist):
		return fail(NameSocket, path+" is gone: local `openclaw` commands cannot reach the gateway", restart)
	case statErr != nil:
		return fail(NameSocket, fmt.Sprintf("cannot look at %s: %v", path, statErr), restart)
	case fi.Mode()&fs.ModeSocket == 0:
		return fail(NameSocket, path+" is not a socket", "remove "+path+", then "+restart)
	case dialErr != nil:
		return fail(NameSocket, fmt.Sprintf("%s does not answer: %v", path, dialErr), restart)
	}
	if perm := fi.Mode().Perm(); perm&0o007 != 0 {
		return warn(NameSocket, fmt.Sprintf("%s has mode %04o: every user may connect (peer credentials still refuse strangers)", path, perm),
			"chmod 660 "+path+" (the gateway sets it at start; something changed it)")
	}
	return ok(NameSocket, path+" answers (mode "+fmt.Sprintf("%04o", fi.Mode().Perm())+")")
}

// Sync is what the system says about its clock's synchronization.
type Sync int

// Clock synchronization states.
const (
	SyncUnknown Sync = iota
	Synced
	Unsynced
)

// noRTC is the advice for a clock that is wrong or not synchronized: a
// Raspberry Pi has no battery-backed clock.
const noRTC = "the box has no RTC: connect it to the network once (NTP sets the clock; systemd-timesyncd keeps it)"

// minYear is the earliest year a set clock can show: this software did not
// exist before.
const minYear = 2025

// Clock checks the time: a year before 2025 means the clock was never set
// (TLS certificates and message times are wrong then); otherwise it should
// be synchronized.
func Clock(now time.Time, sync Sync) api.DoctorCheck {
	if now.Year() < minYear {
		return fail(NameClock, fmt.Sprintf("the clock says %s: it was never set", now.UTC().Format(time.RFC3339)), noRTC)
	}
	switch sync {
	case Synced:
		return ok(NameClock, now.UTC().Format(time.RFC3339)+", synchronized")
	case Unsynced:
		return warn(NameClock, "clock not synchronized ("+now.UTC().Format(time.RFC3339)+")", noRTC)
	}
	return warn(NameClock, "clock not known to be synchronized ("+now.UTC().Format(time.RFC3339)+")", noRTC)
}

// LAN checks the TLS listener of the LAN API (gateway.bind, gateway.port).
// listener is nil when the gateway serves no LAN API; else it returns the
// address it listens on, or why it does not.
func LAN(bind string, listener func() (string, error)) api.DoctorCheck {
	if listener == nil {
		if bind == "" || bind == "loopback" {
			return ok(NameLAN, "LAN API off (gateway.bind loopback)")
		}
		return warn(NameLAN, fmt.Sprintf("gateway.bind is %q but this gateway serves no LAN API", bind),
			"set gateway.bind to \"loopback\", or install a gateway version with the LAN API")
	}
	addr, err := listener()
	if err != nil && (bind == "" || bind == "loopback") {
		// Only paired devices on this machine would miss it: the socket works.
		return warn(NameLAN, "the LAN API (loopback) is not listening: "+err.Error(),
			"another program may hold the port: find it with `ss -ltnp`, or set gateway.port to a free one (`openclaw config set gateway.port 18790`), then restart the gateway")
	}
	if err != nil {
		return fail(NameLAN, "the LAN API is not listening: "+err.Error(),
			"another program may hold the port: find it with `ss -ltnp`, or set gateway.port to a free one (`openclaw config set gateway.port 18790`), then restart the gateway")
	}
	return ok(NameLAN, "listening on "+addr+" (TLS, paired devices only)")
}

// FromStatus turns what the gateway's status knows into checks: the exec
// sandbox (Landlock), the default model, the local runner and the state
// database.
func FromStatus(st *api.Status) []api.DoctorCheck {
	var cs []api.DoctorCheck
	switch {
	case st.SandboxActive:
		cs = append(cs, ok(NameLandlock, st.Sandbox))
	case st.Sandbox == "":
		cs = append(cs, warn(NameLandlock, "the sandbox state is unknown: exec runs under policy only", "run a Linux 5.13+ kernel with Landlock enabled"))
	default:
		cs = append(cs, warn(NameLandlock, st.Sandbox,
			"run a Linux 5.13+ kernel with Landlock enabled (\"landlock\" in /sys/kernel/security/lsm, else add lsm=landlock,… to the kernel command line) so exec commands are confined to their workspace"))
	}
	switch {
	case st.Model != "":
		cs = append(cs, ok(NameModel, st.Model))
	case st.LocalRunnerError != "":
		// No runner: a pulled model file could not run (the pure build).
		cs = append(cs, warn(NameModel, "no default model", "set agents.defaults.model to an Ollama or remote model (`openclaw config set agents.defaults.model '\"ollama/qwen3:1.7b\"'`); "+api.NoRunnerHint))
	default:
		cs = append(cs, warn(NameModel, "no default model", "set agents.defaults.model (`openclaw config set agents.defaults.model '\"provider/model\"'`), or pull one with `openclaw models pull`"))
	}
	switch {
	case st.LocalRunnerError != "":
		cs = append(cs, warn(NameRunner, st.LocalRunnerError, "remote providers and Ollama are unaffected; "+api.NoRunnerHint))
	case st.LocalRunner != "":
		cs = append(cs, runnerCheck(st)...)
	}
	switch {
	case st.StateWarning != "":
		cs = append(cs, fail(NameStateDB, st.StateWarning, "see `openclaw logs` for the cause (a full disk, a read-only file system), fix it and restart the gateway"))
	case st.InterruptedOpen > 0:
		cs = append(cs, warn(NameStateDB, fmt.Sprintf("%d interrupted turn(s) could not be closed: %s", st.InterruptedOpen, st.InterruptedError),
			"free disk space; they close at the next start or the next message in their session"))
	}
	return cs
}

// Channels checks each configured channel account's link.
func Channels(list []api.ChannelStatus) []api.DoctorCheck {
	if len(list) == 0 {
		return []api.DoctorCheck{ok(NameChannels, "no channels configured (the CLI only)")}
	}
	var cs []api.DoctorCheck
	for _, c := range list {
		name := "channel " + c.Channel
		login := "openclaw channels login " + c.Channel
		if c.Account != "" && c.Account != "default" {
			name += "/" + c.Account
			login += " --account " + c.Account
		}
		why := c.Reason
		if c.Detail != "" {
			why = strings.TrimSpace(why + " " + c.Detail)
		}
		if why != "" {
			why = ": " + why
		}
		switch c.State {
		case "linked":
			d := "linked"
			if c.Self != "" {
				d += " as " + c.Self
			}
			if c.OutboxDead > 0 {
				cs = append(cs, warn(name, fmt.Sprintf("%s; %d message(s) could not be sent and were given up", d, c.OutboxDead), "see `openclaw logs` for why"))
				continue
			}
			cs = append(cs, ok(name, d))
		case "connecting":
			cs = append(cs, warn(name, "connecting"+why, "wait a minute; if it stays so, check the network and `openclaw logs`"))
		case "not-linked", "logged-out":
			cs = append(cs, fail(name, c.State+why+": it receives nothing", "link it: `"+login+"`"))
		case "stopped":
			cs = append(cs, warn(name, "stopped"+why, "restart the gateway"))
		default:
			cs = append(cs, fail(name, c.State+why, "see `openclaw logs`; if it was logged out, link it again: `"+login+"`"))
		}
	}
	return cs
}

// ModelFile is an installed local model: its registry name and file.
type ModelFile struct {
	Name, Path string
}

// Model fit: a model over this share of the RAM warns.
const modelWarnPct = 75

// Models checks each installed model: its file must be readable by the
// gateway (size returns its size, or why it cannot be opened), and fit in
// memTotal bytes of RAM (memErr: the RAM is unknown; the fit is not
// checked).
func Models(files []ModelFile, size func(path string) (int64, error), memTotal uint64, memErr error) []api.DoctorCheck {
	if len(files) == 0 {
		return []api.DoctorCheck{ok(NameModels, "no local models installed (`openclaw models pull` gets one)")}
	}
	var cs []api.DoctorCheck
	for _, f := range files {
		name := "model " + f.Name
		n, err := size(f.Path)
		if err != nil {
			cs = append(cs, fail(name, fmt.Sprintf("cannot read %s: %v", f.Path, err),
				fmt.Sprintf("make it readable by the gateway's user, or import it again with --copy (`openclaw models rm %s`, `openclaw models import FILE --copy`)", f.Name)))
			continue
		}
		switch {
		case memErr != nil || memTotal == 0:
			cs = append(cs, ok(name, fmt.Sprintf("%s, %s (RAM unknown: fit not checked)", f.Path, Bytes(n))))
		case uint64(n) > memTotal:
			cs = append(cs, fail(name, fmt.Sprintf("%s is larger than this box's RAM (%s): it cannot run here", Bytes(n), Bytes(int64(memTotal))),
				"use a smaller model or quantization (`openclaw models list`), and `openclaw models rm "+f.Name+"`"))
		case uint64(n)*100 > memTotal*modelWarnPct:
			cs = append(cs, warn(name, fmt.Sprintf("%s uses over %d%% of this box's RAM (%s): little is left for the context and the system", Bytes(n), modelWarnPct, Bytes(int64(memTotal))),
				"prefer a smaller model or quantization, or lower models.local.contextSize"))
		default:
			cs = append(cs, ok(name, fmt.Sprintf("%s, fits in %s of RAM", Bytes(n), Bytes(int64(memTotal)))))
		}
	}
	return cs
}

// Bytes formats n bytes for people: "512 B", "1.5 KiB", "4.2 GiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// Inputs are what Run looks at. The paths and values come from the
// gateway; the funcs are this machine's facts, nil meaning the real one
// (tests replace them).
type Inputs struct {
	StateDir string
	UID      int // the gateway's user
	Socket   string
	Now      time.Time
	// Status is the gateway's status (sandbox, model, runner, channels).
	Status *api.Status
	// Models are the installed local models; nil: no registry.
	Models []ModelFile
	// Bind is gateway.bind; LAN reports the LAN API's listener (nil: none).
	Bind string
	LAN  func() (string, error)
	// SharedMain is nil when session.dmScope is not checked; else what
	// the config says about senders who are not owners sharing the
	// owner's main session (config.SharedMainWarnings), empty when none
	// do.
	SharedMain []string
	// Helpers are the programs the configuration needs beside the gateway
	// (openclaw-memindex for memory search, openclaw-whatsapp for WhatsApp);
	// nil: not checked.
	Helpers []Helper

	Stat      func(string) (fs.FileInfo, error) // os.Lstat
	Dial      func(socket string) error         // connects to the socket
	DiskSpace func(path string) (free, total uint64, err error)
	MemTotal  func() (uint64, error)
	ClockSync func() Sync
	ModelSize func(path string) (int64, error) // opens the file for reading
}

// Run gathers the facts and runs every check, in a fixed order.
func Run(in Inputs) []api.DoctorCheck {
	if in.Stat == nil {
		in.Stat = os.Lstat
	}
	if in.Dial == nil {
		in.Dial = dialSocket
	}
	if in.DiskSpace == nil {
		in.DiskSpace = DiskSpace
	}
	if in.MemTotal == nil {
		in.MemTotal = MemTotal
	}
	if in.ClockSync == nil {
		in.ClockSync = ClockSync
	}
	if in.ModelSize == nil {
		in.ModelSize = ReadableSize
	}
	if in.Now.IsZero() {
		in.Now = time.Now()
	}
	var cs []api.DoctorCheck
	fi, err := in.Stat(in.StateDir)
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		fi, err = os.Stat(in.StateDir) // a linked state dir is fine: look at its target
	}
	cs = append(cs, StateDir(in.StateDir, fi, err, in.UID))
	free, total, err := in.DiskSpace(in.StateDir)
	cs = append(cs, Disk(in.StateDir, free, total, err))
	var dialErr error
	fi, err = nil, nil
	if in.Socket != "" {
		fi, err = in.Stat(in.Socket)
		if err == nil && fi.Mode()&fs.ModeSocket != 0 {
			dialErr = in.Dial(in.Socket)
		}
	}
	cs = append(cs, Socket(in.Socket, fi, err, dialErr))
	cs = append(cs, LAN(in.Bind, in.LAN))
	cs = append(cs, Clock(in.Now, in.ClockSync()))
	st := in.Status
	if st == nil {
		st = &api.Status{}
	}
	cs = append(cs, FromStatus(st)...)
	switch {
	case in.Models != nil && len(in.Models) == 0 && st.LocalRunnerError != "":
		// Pulling one would not help without the runner (FromStatus says
		// what would).
		cs = append(cs, ok(NameModels, "no local models installed (they need openclaw-runner)"))
	case in.Models != nil:
		mem, memErr := in.MemTotal()
		cs = append(cs, Models(in.Models, in.ModelSize, mem, memErr)...)
	}
	cs = append(cs, Channels(st.Channels)...)
	if in.SharedMain != nil {
		cs = append(cs, DMScope(in.SharedMain))
	}
	if in.Helpers != nil {
		cs = append(cs, Helpers(in.Helpers))
	}
	return cs
}

// Helper is one program the gateway starts for a feature the
// configuration uses: Path where it was found, or Err why not.
type Helper struct {
	Name, For, Path string
	Err             error
}

// Helpers checks that every helper program the configuration needs is
// installed where the gateway finds it.
func Helpers(hs []Helper) api.DoctorCheck {
	var found, missing []string
	for _, h := range hs {
		if h.Err != nil {
			missing = append(missing, h.Name+" (for "+h.For+"): "+h.Err.Error())
			continue
		}
		found = append(found, h.Name+" "+h.Path)
	}
	if len(missing) > 0 {
		return fail(NameHelpers, strings.Join(missing, "; "),
			"install the missing programs beside openclaw-gateway (make build writes them to bin/; the image and make release ship them), then restart the gateway")
	}
	if len(found) == 0 {
		return ok(NameHelpers, "none needed by this configuration")
	}
	return ok(NameHelpers, strings.Join(found, "; "))
}

// DMScope checks that no sender who is not an owner shares the owner's
// main session (session.dmScope "main" with a DM policy that lets them
// in): problems are the config's warnings saying so.
func DMScope(problems []string) api.DoctorCheck {
	if len(problems) == 0 {
		return ok(NameDMScope, "direct messages of senders who are not owners stay out of the owner's main session")
	}
	return warn(NameDMScope, strings.Join(problems, "; "),
		`remove session.dmScope from the config (owners in the main session, everyone else in one of their own) or set it to "per-channel-peer", then restart the gateway; until then their messages are marked untrusted in the owner's session`)
}

// dialSocket connects to a Unix socket and hangs up.
func dialSocket(path string) error {
	c, err := net.DialTimeout("unix", path, 2*time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}

// ReadableSize opens path for reading and returns its size.
func ReadableSize(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("%s is not a regular file", path)
	}
	return fi.Size(), nil
}

// NameRunnerBuilds is the check of runner builds this CPU cannot run.
const NameRunnerBuilds = "runner builds"

// runnerCheck says which runner build local models use, for which CPU
// variant, and warns when a better variant would run on this CPU (local
// generation at about half speed without AVX2/AVX-512 or the Pi 5's
// dot-product instructions) or when a build died of an instruction this
// CPU lacks.
func runnerCheck(st *api.Status) []api.DoctorCheck {
	variant := st.LocalRunnerVariant
	detail := st.LocalRunner
	switch variant {
	case "":
		detail += " (CPU variant not reported: built by hand, not by make build)"
	default:
		detail += " (variant " + variant
		if st.LocalRunnerCPU != "" {
			detail += "; llama.cpp uses " + st.LocalRunnerCPU
		}
		detail += ")"
	}
	if len(st.CPUFeatures) > 0 {
		detail += "; CPU: " + strings.Join(st.CPUFeatures, " ")
	}
	var cs []api.DoctorCheck
	if variant != "" && st.BestVariant != "" && variant != st.BestVariant {
		cs = append(cs, warn(NameRunner, detail+"; this CPU can run the faster "+st.BestVariant+" variant",
			"build it on this machine (`make build` builds the variant for the building CPU) or install the release's openclaw-runner-"+st.BestVariant+" beside "+st.LocalRunner))
	} else {
		cs = append(cs, ok(NameRunner, detail))
	}
	var bad []string
	for _, b := range st.RunnerBuilds {
		if b.State == "unusable" {
			bad = append(bad, b.Path+": "+b.Why)
		}
	}
	if len(bad) > 0 {
		cs = append(cs, warn(NameRunnerBuilds, "cannot run on this CPU, skipped until the file changes or the gateway restarts: "+strings.Join(bad, "; "),
			"remove or rebuild those files (`make build` on this machine); the next build is used meanwhile"))
	}
	return cs
}
