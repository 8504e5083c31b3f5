package llamacpp

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openclaw-edge/edge/engine"
)

// RunnerOptions are the llama.cpp settings of one runner process.
type RunnerOptions struct {
	Threads    int  // 0: the runner picks (all cores, at most 4)
	ContextLen int  // tokens per session slot (default 4096)
	BatchSize  int  // default 512
	Slots      int  // sessions whose KV cache is kept (default 1)
	Mmap       bool // memory-map the model file
	// FlashAttn is llama.cpp's flash attention: "off" (""), "on", "auto".
	FlashAttn string
	// KVDir, when set, keeps the sessions' KV cache across runner
	// restarts, within KVDiskMB of disk (runner/kvstate.go).
	KVDir    string
	KVDiskMB int
}

// args is the runner's command line (after argv[0]).
func (o RunnerOptions) args(path string) []string {
	return []string{
		"--model", path,
		"--threads", strconv.Itoa(o.Threads),
		"--ctx", strconv.Itoa(o.ContextLen),
		"--batch", strconv.Itoa(o.BatchSize),
		"--slots", strconv.Itoa(max(o.Slots, 1)),
		"--mmap=" + strconv.FormatBool(o.Mmap),
		"--flash-attn=" + cmp.Or(o.FlashAttn, "off"),
		"--kv-dir", o.KVDir,
		"--kv-disk-mb", strconv.Itoa(o.KVDiskMB),
	}
}

// process supervises one runner process for one model file: started on
// first use, stopped after KeepAlive idle, restarted after it dies.
type process struct {
	path      string
	opts      RunnerOptions
	keepAlive time.Duration // < 0: never unload
	// command starts a fixed runner (Config.Command, tests); nil: the
	// variants FindRunners finds, best first.
	command  func(args ...string) *exec.Cmd
	unusable *unusableSet // shared by the pool
	log      *slog.Logger

	mu      sync.Mutex
	wmu     sync.Mutex // serialises writes to the runner's stdin
	run     *running   // nil when stopped
	nextID  int64
	busy    int
	idle    *time.Timer
	started time.Time
	// speed is what this box measured: prompt tokens evaluated and
	// generated, with the runner's own timings, since the runner started.
	speed speedTally
	// slots is what each KV slot of the running runner holds (its last
	// complete reply, or its ready line).
	slots []int
	// leaving is closed when the runner last stopped has exited (nil: none
	// is leaving).
	leaving <-chan struct{}
}

// speedTally sums the runner's timed work (RunUsage.PromptMS and
// GenerateMS: decode calls only, no IPC or template).
type speedTally struct {
	promptTokens, genTokens int
	promptMS, genMS         float64
}

// add counts one request's usage.
func (t *speedTally) add(u RunUsage) {
	if u.PromptMS > 0 && u.Processed > 0 {
		t.promptTokens += u.Processed
		t.promptMS += u.PromptMS
	}
	if u.GenerateMS > 0 && u.Generated > 0 {
		t.genTokens += u.Generated
		t.genMS += u.GenerateMS
	}
}

// rates returns tokens a second (0: not measured yet).
func (t speedTally) rates() (prompt, gen float64) {
	if t.promptMS > 0 {
		prompt = float64(t.promptTokens) / (t.promptMS / 1000)
	}
	if t.genMS > 0 {
		gen = float64(t.genTokens) / (t.genMS / 1000)
	}
	return prompt, gen
}

// measured records a request's usage in the process's speed tally.
func (p *process) measured(u RunUsage) {
	p.mu.Lock()
	p.speed.add(u)
	if u.SlotTokens != nil {
		p.slots = u.SlotTokens
	}
	p.mu.Unlock()
}

// isBusy reports whether a request runs or waits.
func (p *process) isBusy() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.busy > 0
}

// cachedSlots is what the running runner's slots hold, in tokens.
func (p *process) cachedSlots() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.slots == nil && p.run != nil {
		return p.run.info.SlotTokens
	}
	return slices.Clone(p.slots)
}

// speeds returns the measured prompt and generation tokens a second of
// the running runner (0: none yet).
func (p *process) speeds() (prompt, gen float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.speed.rates()
}

// running is one live runner process.
type running struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	info    ModelInfo
	pending map[int64]chan Reply
	exited  chan struct{}
	exitMsg string // why it ended; set before exited is closed
	// badCPU: it died of SIGILL or said this CPU lacks its variant's
	// instructions; set before exited is closed.
	badCPU bool
	stderr *tailBuffer
}

// errCrashed wraps every failure caused by the runner process ending.
var errCrashed = errors.New("local runner stopped")

func (p *process) ensure(ctx context.Context) (*running, error) {
	p.mu.Lock()
	if r := p.run; r != nil {
		select {
		case <-r.exited:
			p.run = nil
		default:
			p.mu.Unlock()
			return r, nil
		}
	}
	p.mu.Unlock()
	return p.start(ctx)
}

func (p *process) start(ctx context.Context) (*running, error) {
	// A runner that is leaving saves its sessions' KV cache first (up to
	// stopWait): the next one starts after it, so it reads that save and
	// two caches are never in memory at once.
	p.mu.Lock()
	leaving := p.leaving
	p.mu.Unlock()
	if leaving != nil {
		select {
		case <-leaving:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.run != nil {
		return p.run, nil
	}
	if p.command != nil {
		r, err := p.startOne(ctx, RunnerBinary{}, p.command)
		if errors.Is(err, errUnusable) {
			return nil, &engine.ModelError{Kind: engine.ErrUnreachable, Provider: "local", Message: fmt.Sprintf("the local runner could not load %s: %v", p.path, err)}
		}
		return r, err
	}
	bins, _, err := FindRunners()
	if err != nil {
		var me *engine.ModelError
		if errors.As(err, &me) {
			return nil, me // no runner binary: say what is missing
		}
		return nil, &engine.ModelError{Kind: engine.ErrNoModel, Provider: "local", Message: err.Error()}
	}
	var refused []string
	for i, b := range bins {
		if why := p.unusable.get(b.Path); why != "" {
			refused = append(refused, filepath.Base(b.Path)+": "+why)
			continue
		}
		// The last build is never marked: there is nothing to fall back
		// to, and a rebuilt file must work without a gateway restart.
		b.last = i == len(bins)-1
		r, err := p.startOne(ctx, b, func(args ...string) *exec.Cmd { return exec.Command(b.Path, args...) })
		if errors.Is(err, errUnusable) {
			why := strings.TrimPrefix(err.Error(), errUnusable.Error()+": ")
			refused = append(refused, filepath.Base(b.Path)+": "+why)
			if b.last {
				break
			}
			p.unusable.mark(b.Path, why)
			p.log.Warn("local runner build cannot run here; trying the next", "runner", b.Path, "why", why)
			continue
		}
		return r, err
	}
	return nil, &engine.ModelError{Kind: engine.ErrUnreachable, Provider: "local",
		Message: "no openclaw-runner build runs on this CPU (" + strings.Join(refused, "; ") + "); rebuild it here with make build"}
}

// startOne starts one runner binary and waits until its model is loaded.
// p.mu is held. An error wrapping errUnusable means this binary cannot run
// on this CPU.
func (p *process) startOne(ctx context.Context, bin RunnerBinary, command func(args ...string) *exec.Cmd) (*running, error) {
	cmd := command(p.opts.args(p.path)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("runner stdin: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("runner stdout: %w", err)
	}
	tail := &tailBuffer{max: 8 << 10}
	cmd.Stderr = tail
	start := time.Now()
	if err := cmd.Start(); err != nil {
		var me *engine.ModelError
		if errors.As(err, &me) {
			return nil, me // no runner binary: say what is missing
		}
		return nil, fmt.Errorf("start the local runner: %w", err)
	}
	r := &running{cmd: cmd, stdin: stdin, pending: make(map[int64]chan Reply), exited: make(chan struct{}), stderr: tail}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	ready := make(chan error, 1)
	go func() {
		first := true
		for sc.Scan() {
			var rep Reply
			if err := json.Unmarshal(sc.Bytes(), &rep); err != nil {
				continue // not ours (a stray print); the protocol is line-exact
			}
			if first {
				first = false
				switch {
				case rep.Type == ReplyReady && rep.Info != nil:
					r.info = *rep.Info
					ready <- nil
				case rep.Type == ReplyError:
					ready <- errors.New(rep.Error)
				default:
					ready <- fmt.Errorf("unexpected first line %q", rep.Type)
				}
				continue
			}
			p.mu.Lock()
			ch := r.pending[rep.ID]
			p.mu.Unlock()
			if ch != nil {
				ch <- rep
			}
		}
		// No p.mu here: start holds it while it waits for ready, and a
		// runner that dies while loading must not deadlock the gateway.
		waitErr := cmd.Wait()
		r.exitMsg = describeExit(waitErr, tail.lastLine())
		switch {
		case first:
			// Before ready: SIGILL or "this CPU lacks", or a build that
			// refuses this gateway's command line (exit 2: an older build).
			r.badCPU = wrongCPU(waitErr) || usageExit(waitErr)
		case wrongCPU(waitErr) && !provenHere(r.info.Variant):
			// It loaded, then hit an instruction this CPU lacks; a build
			// whose variant this CPU fully supports merely crashed.
			r.badCPU = true
			if bin.Path != "" && !bin.last {
				p.unusable.mark(bin.Path, r.exitMsg)
				p.log.Warn("local runner build died of an instruction this CPU lacks; the next start uses the next build", "runner", bin.Path, "why", r.exitMsg)
			}
		}
		close(r.exited)
		if first {
			ready <- errors.New(r.exitMsg)
		}
	}()
	select {
	case err := <-ready:
		if err != nil {
			_ = cmd.Process.Kill() // it failed to load; make sure it is gone
			<-r.exited
			if r.badCPU {
				return nil, fmt.Errorf("%w: %s", errUnusable, r.exitMsg)
			}
			return nil, &engine.ModelError{Kind: engine.ErrUnreachable, Provider: "local", Message: fmt.Sprintf("the local runner could not load %s: %v", p.path, err)}
		}
	case <-ctx.Done():
		_ = cmd.Process.Kill() // the turn gave up while loading
		<-r.exited
		return nil, ctx.Err()
	}
	p.run = r
	p.started = time.Now()
	if r.info.Variant == "" {
		r.info.Variant = bin.Variant
	}
	p.log.Info("local model loaded", "model", p.path, "pid", cmd.Process.Pid, "ms", time.Since(start).Milliseconds(), "slots", r.info.Slots, "ctx", r.info.ContextLen, "runner", cmd.Path, "variant", r.info.Variant)
	return r, nil
}

func describeExit(err error, lastStderr string) string {
	msg := "exited"
	if err != nil {
		msg = err.Error()
	}
	if lastStderr != "" {
		msg += ": " + lastStderr
	}
	return msg
}

// call sends req and passes every reply for it to on until on returns true.
// Cancelling ctx sends OpCancel and returns ctx.Err() once the runner
// confirms (or at once if it died).
func (p *process) call(ctx context.Context, req Request, on func(Reply) bool) error {
	for try := 0; ; try++ {
		replied := false
		err := p.callOnce(ctx, req, func(rep Reply) bool { replied = true; return on(rep) })
		var bad *badCPUError
		if errors.As(err, &bad) && !replied && ctx.Err() == nil && p.command == nil && try == 0 {
			continue // that build is marked unusable; ensure starts the next (once)
		}
		return err // a badCPUError reads and unwraps as the crash it wraps
	}
}

// badCPUError is a call's failure because the runner died of an
// instruction this CPU lacks (the build is marked unusable by then).
type badCPUError struct{ err error }

func (e *badCPUError) Error() string { return e.err.Error() }
func (e *badCPUError) Unwrap() error { return e.err }

func (p *process) callOnce(ctx context.Context, req Request, on func(Reply) bool) error {
	r, err := p.ensure(ctx)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.nextID++
	req.ID = p.nextID
	ch := make(chan Reply, 256)
	r.pending[req.ID] = ch
	p.busy++
	if p.idle != nil {
		p.idle.Stop()
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(r.pending, req.ID)
		p.busy--
		p.armIdle()
		p.mu.Unlock()
	}()
	if err := p.send(r, req); err != nil {
		return err
	}
	cancelled := false
	for {
		select {
		case rep := <-ch:
			if on(rep) {
				if cancelled {
					return ctx.Err()
				}
				return nil
			}
		case <-r.exited:
			// Drain what arrived before the exit.
			for {
				select {
				case rep := <-ch:
					if on(rep) {
						return nil
					}
					continue
				default:
				}
				break
			}
			err := fmt.Errorf("%w (%s)", errCrashed, r.exitMsg)
			if r.badCPU {
				return &badCPUError{err}
			}
			return err
		case <-ctx.Done():
			if !cancelled {
				cancelled = true
				_ = p.send(r, Request{Op: OpCancel, ID: req.ID}) // if it fails, the runner is gone and exited fires
			}
		}
	}
}

func (p *process) send(r *running, req Request) error {
	data, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode runner request: %w", err)
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if _, err := r.stdin.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("%w (write: %v)", errCrashed, err)
	}
	return nil
}

// armIdle schedules an unload after keepAlive. p.mu is held.
func (p *process) armIdle() {
	if p.busy > 0 || p.run == nil || p.keepAlive < 0 {
		return
	}
	if p.idle != nil {
		p.idle.Stop()
	}
	r := p.run
	p.idle = time.AfterFunc(p.keepAlive, func() {
		p.mu.Lock()
		if p.busy > 0 || p.run != r {
			p.mu.Unlock()
			return
		}
		p.run = nil
		p.leaving = r.exited
		p.mu.Unlock()
		p.log.Info("unloading idle local model", "model", p.path, "idle", p.keepAlive)
		stopRunner(r)
	})
}

// stopRunner closes the runner's stdin (it exits cleanly, saving its KV
// states first) and kills it if it has not gone within stopWait.
func stopRunner(r *running) {
	_ = r.stdin.Close() // the process may already be gone
	select {
	case <-r.exited:
	case <-time.After(stopWait):
		_ = r.cmd.Process.Kill()
		<-r.exited
	}
}

// stopWait is how long a runner may take to leave: long enough to write
// a few hundred MB of KV state to an SD card; each file is written whole
// or not at all, so a kill loses only what was not yet written.
const stopWait = 25 * time.Second // within systemd's TimeoutStopSec=30s

// stop unloads the model now.
func (p *process) stop() {
	p.mu.Lock()
	r := p.run
	p.run = nil
	if r != nil {
		p.leaving = r.exited
	}
	if p.idle != nil {
		p.idle.Stop()
	}
	p.mu.Unlock()
	if r != nil {
		stopRunner(r)
	}
}

// status describes the process for `openclaw status`.
func (p *process) status() (pid int, info ModelInfo, since time.Time, runner string, loaded bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.run == nil {
		return 0, ModelInfo{}, time.Time{}, "", false
	}
	select {
	case <-p.run.exited:
		return 0, ModelInfo{}, time.Time{}, "", false
	default:
	}
	return p.run.cmd.Process.Pid, p.run.info, p.started, p.run.cmd.Path, true
}

// tailBuffer keeps the last max bytes written to it (the runner's stderr).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(b), nil
}

func (t *tailBuffer) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := bytes.Split(bytes.TrimSpace(t.buf), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(string(lines[i])); l != "" {
			if len(l) > 200 {
				l = l[:200]
			}
			return l
		}
	}
	return ""
}

// RunnerName is the file name of the runner binary (package
// appliance/runner): the gateway itself is pure Go and never links llama.cpp.
const RunnerName = "openclaw-runner"

// RunnerEnv names the environment variable that overrides where the runner
// binary is.
const RunnerEnv = "OPENCLAW_RUNNER"

// FindRunner returns the path of the runner binary: $OPENCLAW_RUNNER if set,
// else openclaw-runner in the directory of this executable (symlinks
// resolved), else openclaw-runner on $PATH. When none is found the error is
// an *engine.ModelError of kind no_model that says what is missing and how to
// fix it. It looks again on every call, so a runner installed after the
// gateway started is found without a restart.
func FindRunner() (string, error) {
	p, err := engine.FindProgram(RunnerName, RunnerEnv)
	var pe *engine.ProgramError
	switch {
	case err == nil:
		return p, nil
	case !errors.As(err, &pe):
		return "", err
	case pe.EnvValue != "":
		return "", &engine.ModelError{Kind: engine.ErrNoModel, Provider: "local",
			Message: fmt.Sprintf("%s=%s: %v; point it at the openclaw-runner binary (make build writes bin/openclaw-runner)", RunnerEnv, pe.EnvValue, pe.Err)}
	default:
		return "", &engine.ModelError{Kind: engine.ErrNoModel, Provider: "local",
			Message: fmt.Sprintf("%s not found next to %s or on PATH; install it (make build) or set %s", RunnerName, pe.Exe, RunnerEnv)}
	}
}

// unusableSet remembers the runner binaries that cannot run on this CPU,
// each as the file it was (a rebuilt or replaced file is tried again; a
// restart forgets them all).
type unusableSet struct {
	mu  sync.Mutex
	why map[string]unusable // by path
}

func (u *unusableSet) mark(path, why string) {
	key, err := fileKey(path)
	if err != nil {
		return // gone: nothing to skip
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.why == nil {
		u.why = make(map[string]unusable)
	}
	u.why[path] = unusable{key: key, why: why}
}

// get says why path cannot run, or "" — also when the file changed since
// (a rebuilt file is tried again without a gateway restart).
func (u *unusableSet) get(path string) string {
	u.mu.Lock()
	e, ok := u.why[path]
	u.mu.Unlock()
	if !ok {
		return ""
	}
	if key, err := fileKey(path); err != nil || key != e.key {
		return ""
	}
	return e.why
}

func (u *unusableSet) all() map[string]string {
	u.mu.Lock()
	paths := slices.Collect(maps.Keys(u.why))
	u.mu.Unlock()
	out := make(map[string]string)
	for _, p := range paths {
		if why := u.get(p); why != "" {
			out[p] = why
		}
	}
	return out
}

type unusable struct{ key, why string }

// processRSS is a process's resident set size (VmRSS of /proc/PID/status on
// Linux), or 0 where that cannot be read (other systems, a process gone).
func processRSS(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// usageExit reports a runner that exited 2: it refused its command line.
func usageExit(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == 2
}

// provenHere reports whether variant is a known build whose instructions
// this CPU all has: a SIGILL from it is a crash, not a wrong build.
func provenHere(variant string) bool {
	v, ok := VariantByName(variant)
	return ok && len(v.Missing(cpuFeatures())) == 0
}
