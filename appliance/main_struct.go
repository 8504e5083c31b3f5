package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/openclaw-edge/edge/appliance/modelset"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/config"
	"github.com/openclaw-edge/edge/engine/gateway"
	"github.com/openclaw-edge/edge/engine/inbound"
	"github.com/openclaw-edge/edge/engine/localapi"
	"github.com/openclaw-edge/edge/engine/logfile"
	"github.com/openclaw-edge/edge/engine/memory"
	"github.com/openclaw-edge/edge/engine/schedule"
	"github.com/openclaw-edge/edge/engine/session"
	"github.com/openclaw-edge/edge/engine/store/bolt"
	"github.com/openclaw-edge/edge/engine/tool"
	"github.com/openclaw-edge/edge/engine/tool/exec"
	"github.com/openclaw-edge/edge/engine/tool/exec/sandbox"
	"github.com/openclaw-edge/edge/engine/tool/fs"
	memtool "github.com/openclaw-edge/edge/engine/tool/memory"
	"github.com/openclaw-edge/edge/engine/workspace"
	"github.com/openclaw-edge/edge/models/catalog"
	"github.com/openclaw-edge/edge/models/catalog/catalogapi"
	"github.com/openclaw-edge/edge/models/failover"
	"github.com/openclaw-edge/edge/models/httpapi"
	"github.com/openclaw-edge/edge/models/llamacpp"
)

// version is set by the Makefile through -ldflags.
var version = "dev"

// Main is the whole gateway: it loads the config, opens the state, wires
// every part and serves the control API until its context ends. It is the
// one place that knows the config file's shape; everything below it takes
// its own small config.
type Main struct {
	ConfigPath string // "" → $OPENCLAW_CONFIG_PATH, $OPENCLAW_CONFIG, <state-dir>/openclaw.json or .json5, else embedded defaults (config.Locate)
	StateDir   string // "" → $OPENCLAW_STATE_DIR, else ~/.openclaw-edge
	Socket     string // "" → gateway.socket from config, else $RUNTIME_DIRECTORY/gateway.sock, else <state-dir>/gateway.sock
	Stderr     io.Writer
	// Ready, if set, is called once the API is served (tests wait on it).
	Ready func(*Main)
	// Now, if set, is the clock of the gateway and its sessions (tests
	// cross a minute or a day without waiting); nil: time.Now.
	Now func() time.Time

	// Set while running.
	Location config.Location // how ConfigPath and StateDir were found
	Config   *config.Config
	Gateway  *gateway.Gateway
	Inbound  *inbound.Inbound // the channel side
	DB       *bolt.DB
}

// resolvePaths fills in the config file and the state dir the way both
// binaries find them (config.Locate), so `openclaw config validate` checks
// the file this gateway loads.
func (m *Main) resolvePaths() error {
	loc, err := config.Locate(config.Where{Config: m.ConfigPath, StateDir: m.StateDir})
	if err != nil {
		return err
	}
	m.ConfigPath, m.StateDir, m.Location = loc.File, loc.StateDir, loc
	return nil
}

// seedWorkspace writes the bootstrap files missing from an agent's
// workspace (BOOTSTRAP.md only into a brand-new one). Nothing here stops
// the gateway: an agent answers without the files, so a problem is a
// warning that says what to fix.
func (m *Main) seedWorkspace(log *slog.Logger, a gateway.Agent) {
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	res, err := workspace.Ensure(a.Workspace, a.ID, m.StateDir, now())
	for _, w := range res.Warnings {
		log.Warn("workspace: "+w, "agent", a.ID)
	}
	if err != nil {
		log.Warn("workspace: bootstrap files not written; the agent runs without them", "agent", a.ID, "err", err)
	}
	if len(res.Written) > 0 {
		log.Info("workspace: bootstrap files written", "agent", a.ID, "workspace", a.Workspace, "files", strings.Join(res.Written, " "))
	}
}

// resolveSocket picks the control socket: --socket, else gateway.socket,
// else $RUNTIME_DIRECTORY/gateway.sock (systemd), else <state>/gateway.sock.
func (m *Main) resolveSocket(cfg *config.Config) {
	if m.Socket == "" {
		m.Socket = cfg.Gateway.Socket
	}
	if rd := os.Getenv("RUNTIME_DIRECTORY"); m.Socket == "" && rd != "" {
		// systemd's RuntimeDirectory= (several are ':'-separated: the first).
		m.Socket = filepath.Join(strings.SplitN(rd, ":", 2)[0], "gateway.sock")
	}
	if m.Socket == "" {
		m.Socket = filepath.Join(m.StateDir, "gateway.sock")
	}
}

// Run runs the gateway until ctx ends. Each phase hands the next what it
// built through a wiring; what a phase must undo at the end it leaves on
// the wiring's stack, so the clean-ups run in the reverse order they were
// set up, after an error as after a stop.
func (m *Main) Run(ctx context.Context) error {
	wr := &wiring{}
	defer wr.close()
	if err := m.openState(wr); err != nil {
		return err
	}
	m.buildTools(wr)
	if err := m.buildAgents(wr); err != nil {
		return err
	}
	if err := m.buildModels(wr); err != nil {
		return err
	}
	if err := m.buildGateway(wr); err != nil {
		return err
	}
	if err := m.buildScheduler(wr); err != nil {
		return err
	}
	m.addAgentTools(wr)
	if err := m.serveAPI(wr); err != nil {
		return err
	}
	m.startChannels(wr)
	m.startScheduler(wr)
	if err := m.wait(ctx, wr); err != nil {
		return err
	}
	m.shutdown(wr)
	return nil
}

// wiring carries what Run's phases pass each other.
type wiring struct {
	log      *slog.Logger
	logLevel slog.LevelVar // gateway.logLevel, changed live by config set
	logFile  *logfile.File
	sb       *sandbox.Landlock
	reg      *tool.Registry
	mems     *memories // set once the model pool exists; the tools look it up per call
	ags      []gateway.Agent

	sessions *session.Manager
	registry *catalog.Registry
	pool     *llamacpp.Pool
	resolver *modelset.Set
	lanSide  *lanAPI // set once the LAN API is up; read by status
	// sched and heartbeat speak first (engine/schedule); stopSched stops
	// their loops (shutdown does it before the turns stop).
	sched     *schedule.Scheduler
	heartbeat *schedule.Heartbeat
	stopSched context.CancelFunc
	control   http.Handler // the control API over the gateway and the channels (engine/localapi)

	srv            *http.Server
	served         chan error
	stopLAN        context.CancelFunc
	cancelRequests context.CancelFunc
	serving        atomic.Bool // read by the watchdog's liveness probe

	undo []func() // run last-first by close
}

// atExit queues fn to run when Run returns (as a defer in Run would).
func (wr *wiring) atExit(fn func()) { wr.undo = append(wr.undo, fn) }

// close runs the queued clean-ups, last queued first.
func (wr *wiring) close() {
	for i := len(wr.undo) - 1; i >= 0; i-- {
		wr.undo[i]()
	}
}

// openState loads the config, opens the log and the state store.
func (m *Main) openState(wr *wiring) error {
	if m.Stderr == nil {
		m.Stderr = os.Stderr
	}
	if err := m.resolvePaths(); err != nil {
		return err
	}
	cfg, err := config.LoadIn(m.ConfigPath, m.StateDir)
	if err != nil {
		return fmt.Errorf("config rejected, nothing was started:\n%w", err)
	}
	m.Config = cfg
	logw, logFile, logErr := openLogFile(m.StateDir, m.Stderr)
	if logFile != nil {
		wr.atExit(func() { _ = logFile.Close() })
	}
	wr.logFile = logFile
	// A LevelVar: gateway.logLevel applies live (config set, liveConfig).
	wr.logLevel.Set(logLevel(cfg.Gateway.LogLevel))
	log := slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: &wr.logLevel}))
	wr.log = log
	if logErr != nil {
		log.Warn("no log file: `openclaw logs` will not work; the log goes to stderr only", "err", logErr)
	}
	for _, w := range cfg.Warnings() {
		log.Warn("config: " + w.Error())
	}
	if home, err := os.UserHomeDir(); err == nil {
		if w := legacyState(m.Location, cfg, home); w != "" {
			log.Warn(w) // before the workspace is created below
		}
	}
	m.resolveSocket(cfg)
	if err := os.MkdirAll(m.StateDir, 0o700); err != nil {
		return fmt.Errorf("create state dir: %w", err)
	}

	db, err := bolt.Open(filepath.Join(m.StateDir, "state.db"), bolt.Options{})
	if err != nil {
		return err
	}
	wr.atExit(func() { _ = db.Close() })
	m.DB = db
	return nil
}

// buildTools builds the tool registry: files, exec (sandboxed where the
// kernel allows) and memory.
func (m *Main) buildTools(wr *wiring) {
	cfg, log, db := m.Config, wr.log, m.DB
	ex := cfg.Tools.Exec
	sb := execSandbox(log, m.StateDir, m.ConfigPath) // warns once when exec runs under policy only
	wr.sb = sb
	execTools := exec.Tools(exec.Config{
		Ask:             ex.Ask,
		Security:        ex.Security,
		SafeBins:        ex.SafeBins,
		Timeout:         time.Duration(ex.TimeoutSeconds) * time.Second,
		ApprovalTimeout: time.Duration(ex.ApprovalTimeoutSeconds) * time.Second,
		Sandbox:         sb,
		Allowlist:       allowlist{db},
	})
	wr.atExit(func() { closeTools(execTools) })
	memTools := memtool.Tools(memtool.Config{Index: func(id string) *memory.Index { return wr.mems.index(id) }, Citations: cfg.Memory.Citations})
	wr.reg = tool.NewRegistry(slices.Concat(fs.Tools(fs.Config{}), execTools, memTools)...)
}

// buildAgents resolves the agents, seeds their workspaces and opens the
// session manager.
func (m *Main) buildAgents(wr *wiring) error {
	cfg, log, db, sb, reg := m.Config, wr.log, m.DB, wr.sb, wr.reg
	ags, err := agents(cfg, reg)
	if err != nil {
		return fmt.Errorf("config rejected, nothing was started: %w", err)
	}
	wr.ags = ags
	for _, a := range ags {
		if err := os.MkdirAll(a.Workspace, 0o700); err != nil {
			return fmt.Errorf("create workspace of agent %s: %w", a.ID, err)
		}
		m.seedWorkspace(log, a)
	}
	checkWorkspaces(log, sb, ags)
	var loc *time.Location
	if len(ags) > 0 {
		loc = ags[0].Location
	}
	reset := cfg.Session.Reset
	daily := reset.Hour()
	if reset.Mode == "idle" || reset.Mode == "none" {
		daily = -1
	}
	idle := reset.IdleMinutes
	if reset.Mode == "none" {
		idle = 0
	}
	wr.sessions = session.NewManager(db, session.Config{DailyResetHour: &daily, IdleMinutes: idle, Location: loc, Now: m.Now})
	return nil
}

// buildModels opens the model registry, the local runner pool, the memory
// indexes and the model resolver.
func (m *Main) buildModels(wr *wiring) error {
	cfg, log, db, ags := m.Config, wr.log, m.DB, wr.ags
	lr := cfg.LocalRunner()
	modelsDir := lr.ModelsDir
	if modelsDir == "" {
		modelsDir = filepath.Join(m.StateDir, "models")
	}
	registry, err := catalog.Open(modelsDir)
	if err != nil {
		return fmt.Errorf("model registry: %w", err)
	}
	wr.registry = registry
	keepAlive := lr.KeepAlive
	if keepAlive == 0 {
		keepAlive = time.Nanosecond // "0": unload right after each reply
	}
	pool := llamacpp.NewPool(llamacpp.Config{
		Runner: llamacpp.RunnerOptions{Threads: lr.Threads, ContextLen: lr.ContextSize, BatchSize: lr.BatchSize, Mmap: lr.MMap, FlashAttn: lr.FlashAttention,
			KVDir: filepath.Join(m.StateDir, "kvcache"), KVDiskMB: int(lr.DiskCache >> 20)},
		KeepAlive:     keepAlive,
		CacheBudgetMB: int(lr.CacheBudget >> 20),
		ProbeCache:    filepath.Join(m.StateDir, "runner-probes.json"),
		Logger:        log,
	})
	wr.pool = pool
	wr.atExit(pool.Close)
	mems := newMemories(cfg, m.StateDir, ags, registry, pool, log)
	wr.mems = mems
	wr.atExit(mems.close)
	mems.hookSessions(ags)
	wr.resolver = modelset.New(modelset.Config{
		Config: cfg, Pool: pool, Registry: registry, Log: log,
		Client: httpapi.NewClient(),
		// Read-modify-write of a cooldown is one bbolt transaction.
		Cooldowns: failover.JSONUpdateStore(
			func(k string, v any) (bool, error) { return db.GetJSON(bolt.BucketCooldowns, k, v) },
			func(k string, v any) error { return db.PutJSON(bolt.BucketCooldowns, k, v) },
			func(k string, v any, fn func(bool) (bool, error)) error {
				return db.Update(bolt.BucketCooldowns, k, v, fn)
			}),
	})
	return nil
}

// buildGateway builds the channels and the gateway, and closes the turns
// a crash left open.
func (m *Main) buildGateway(wr *wiring) error {
	cfg, log, db, sb, reg, ags := m.Config, wr.log, m.DB, wr.sb, wr.reg, wr.ags
	ex, sessions, pool, resolver := cfg.Tools.Exec, wr.sessions, wr.pool, wr.resolver
	chans, err := buildChannels(cfg, m.StateDir, db, log, m.Now)
	if err != nil {
		return err
	}
	gw, err := gateway.New(gateway.Config{
		Agents:       ags,
		DefaultAgent: cfg.DefaultAgentID(),
		MainKey:      cfg.Session.MainKey,
		Sessions:     sessions,
		Tools:        reg,
		Models:       resolver,
		Status: func(st *api.Status) {
			sandboxStatus(sb, st)
			st.MissingModels = resolver.MissingModels(ags)
			if wr.lanSide != nil {
				wr.lanSide.Status(st)
			}
			for _, l := range pool.Loaded() {
				r := api.Runner{Model: l.Path, Binary: l.Runner, Variant: l.Info.Variant, PID: l.PID, Since: l.Since, Slots: l.Info.Slots, ContextLen: l.Info.ContextLen, RSSBytes: l.RSSBytes,
					PromptTokPerSec: l.PromptTokPerSec, GenTokPerSec: l.GenTokPerSec, RestoredSessions: l.Info.RestoredSlots}
				for _, n := range l.SlotTokens {
					if n > 0 {
						r.CachedSessions++
						r.CachedTokens += n
					}
				}
				st.Runners = append(st.Runners, r)
			}
			runnerStatus(st, pool)
		},
		ApprovalTimeout: time.Duration(ex.ApprovalTimeoutSeconds) * time.Second,
		Version:         version,
		StateDir:        m.StateDir,
		Now:             m.Now,
		Socket:          m.Socket,
		Logger:          log,
		StateWarning:    db.Degraded,
		Allowlist:       allowlist{db},
	})
	if err != nil {
		return err
	}
	m.Gateway = gw
	in, err := inbound.New(gw, inbound.Config{
		Channels: chans,
		Records:  db,
		Bindings: routingBindings(cfg.Bindings),
		DMScope:  cfg.Session.DMScope,
		Owners:   cfg.Commands.OwnerAllowFrom,
		StateDir: m.StateDir,
		Logger:   log,
		Now:      m.Now,
	})
	if err != nil {
		return err
	}
	m.Inbound = in
	if w := db.Degraded(); w != "" {
		log.Error(w)
	}
	// Never fatal: a turn that cannot be closed now (full disk, read-only
	// store) stays open, status reports it, and the next start or the next
	// message in its session closes it (docs/design.md §4).
	if n, err := gw.RecoverInterrupted(); err != nil {
		log.Error("some interrupted turns could not be closed; the gateway starts anyway", "closed", n, "err", err)
	} else if n > 0 {
		log.Warn("closed turns that a crash interrupted", "count", n)
	}
	return nil
}

// serveAPI serves the control API on the socket and, for paired devices,
// on the LAN.
func (m *Main) serveAPI(wr *wiring) error {
	cfg, log, db, registry, logFile := m.Config, wr.log, m.DB, wr.registry, wr.logFile
	ln, err := listenUnix(m.Socket)
	if err != nil {
		return err
	}
	ln = limitListener(ln, maxConns)
	// The paired devices' record, which the control API serves, after the
	// socket: a start that fails there keeps a preseeded pairing code
	// (newLAN takes it from its file).
	lanSide, err := newLAN(cfg, m.StateDir, db, log)
	if err != nil {
		return err
	}
	wr.lanSide = lanSide
	wr.control = localapi.New(m.Gateway, m.Inbound, localapi.Config{
		Doctor:        doctorConfig(cfg, registry, &wr.lanSide),
		Logs:          logFile,
		ConfigFile:    m.ConfigPath,
		ConfigHow:     m.Location.How(),
		ConfigNewFile: filepath.Join(m.StateDir, "openclaw.json"),
		ApplyLive:     wr.liveConfig,
		StateDir:      m.StateDir,
		Socket:        m.Socket,
		Logger:        log,
		Now:           m.Now,
		Memory:        memoryLookup(cfg, wr.mems),
		Models:        catalogapi.New(registry, catalogapi.Options{}),
		Devices:       lanSide.srv,
		Cron:          wr.sched,
	})
	lanCtx, stopLAN := context.WithCancel(context.Background())
	wr.stopLAN = stopLAN
	wr.atExit(stopLAN)
	// Requests (a model pull) end when the gateway stops; a cut pull
	// resumes from its .part file next time.
	baseCtx, cancelRequests := context.WithCancel(context.Background())
	wr.cancelRequests = cancelRequests
	wr.atExit(cancelRequests)
	// The socket and, through the device check, the TLS API for paired
	// devices serve the one control API.
	srv := apiServer(wr.control, log, baseCtx)
	wr.srv = srv
	served := make(chan error, 1)
	wr.served = served
	serving := &wr.serving
	serving.Store(true)
	go func() { served <- srv.Serve(ln); serving.Store(false) }()
	wr.atExit(func() { _ = os.Remove(m.Socket) })

	lanSide.listen(lanCtx, cfg, wr.control, log, baseCtx)
	wr.atExit(func() { _ = lanSide.http.Close() }) // after an early return; Shutdown below is the orderly way
	return nil
}

// startChannels starts the channels and the memory watcher, tells systemd
// the gateway is ready and starts its watchdog.
func (m *Main) startChannels(wr *wiring) {
	log, db, mems, ags, resolver := wr.log, m.DB, wr.mems, wr.ags, wr.resolver
	// Channels after the API: a message that arrives now is answered by a
	// gateway that can already be asked about it.
	chanCtx, stopChannels := context.WithCancel(context.Background())
	wr.atExit(stopChannels)
	memCtx, stopMemory := context.WithCancel(context.Background())
	wr.atExit(stopMemory)
	mems.watch(memCtx)
	if err := m.Inbound.Start(chanCtx); err != nil {
		log.Error("channels could not start; the gateway serves the CLI only", "err", err)
	}
	if _, err := daemon.SdNotify(false, daemon.SdNotifyReady); err != nil {
		log.Warn("sd_notify READY failed", "err", err)
	}
	stopWatchdog := watchdog(log, liveness(&wr.serving, db.Bolt()))
	wr.atExit(stopWatchdog)

	defAgent := ags[0]
	log.Info("gateway ready", "version", version, "socket", m.Socket, "state", m.StateDir, "config", orDefaults(m.ConfigPath), "config_found", m.Location.How(), "agent", defAgent.ID, "model", orNone(defAgent.Model), "workspace", defAgent.Workspace)
	if defAgent.Model == "" {
		log.Warn(strings.Join(strings.Fields(gateway.NoModelHelp), " "))
	} else if _, _, _, err := resolver.Resolve([]string{defAgent.Model}, nil); err != nil {
		log.Warn("the default model cannot answer yet: " + modelset.UserText(err))
	}
	if m.Ready != nil {
		m.Ready(m)
	}
}

// wait blocks until ctx ends or the control API stops on its own.
func (m *Main) wait(ctx context.Context, wr *wiring) error {
	select {
	case <-ctx.Done():
	case err := <-wr.served:
		if !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("control API stopped: %w", err)
		}
	}
	return nil
}

// shutdown stops the gateway in order: channels, turns, the LAN, the API.
func (m *Main) shutdown(wr *wiring) {
	log, gw, lanSide, srv := wr.log, m.Gateway, wr.lanSide, wr.srv
	_, _ = daemon.SdNotify(false, daemon.SdNotifyStopping) // best effort: not under systemd
	wr.cancelRequests()
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Turns first: a turn's stream keeps its connection busy, so the
	// server alone would wait for the model; cancelled turns close their
	// transcripts with a visible "stopped" entry.
	// Channels first: no new message is taken; what is in flight stays in
	// the inbox and outbox for the next start. The scheduler before them:
	// no job is claimed now, and a run the shutdown cuts stays pending
	// for the next start.
	if wr.stopSched != nil {
		wr.stopSched()
	}
	m.Inbound.Stop()
	if err := gw.Shutdown(shutdown); err != nil {
		log.Warn("turns still running at shutdown are left to the next start", "err", err)
	}
	if wr.sched != nil {
		wr.sched.Stop()
		wr.heartbeat.Stop()
	}
	wr.stopLAN()
	if err := lanSide.shutdown(shutdown); err != nil {
		log.Warn("LAN requests still running at shutdown were cut", "err", err)
	}
	if err := srv.Shutdown(shutdown); err != nil {
		log.Warn("turns still running at shutdown were cut", "err", err)
	}
	log.Info("gateway stopped")
}

// closeTools stops what tools keep running (background exec processes).
func closeTools(ts []tool.Tool) {
	for _, t := range ts {
		if c, ok := t.(io.Closer); ok {
			_ = c.Close() // shutting down; a process that would not die is gone with us
		}
	}
}

// liveConfig applies a config change the gateway can take while it runs
// (localapi.Config.ApplyLive). Only the log level does today; every other
// setting is read at start, and status says "restart pending".
func (wr *wiring) liveConfig(key string, c *config.Config) bool {
	switch key {
	case "gateway.logLevel":
		wr.logLevel.Set(logLevel(c.Gateway.LogLevel))
		return true
	}
	return false
}

func logLevel(s string) slog.Level {
	switch s {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func orDefaults(s string) string {
	if s == "" {
		return "embedded defaults"
	}
	return s
}

var _ net.Listener = (*peerListener)(nil)
