package gateway

import (
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/openclaw-edge/edge/engine/api"
)

// Status reports the gateway's state.
func (g *Gateway) Status() api.Status {
	g.mu.Lock()
	st := api.Status{
		Version:        g.cfg.Version,
		APIVersion:     api.Version,
		PID:            os.Getpid(),
		StartedAt:      g.started,
		StateDir:       g.cfg.StateDir,
		Socket:         g.cfg.Socket,
		DefaultAgent:   g.cfg.DefaultAgent,
		ActiveTurns:    g.active,
		LastModel:      g.lastModel,
		LastError:      g.lastError,
		LastErrorAt:    g.lastErrAt,
		LastFailover:   g.lastFailover,
		LastFailoverAt: g.lastFoAt,
	}
	g.mu.Unlock()
	if g.cfg.Status != nil {
		g.cfg.Status(&st)
	}
	st.UptimeSeconds = g.cfg.Now().Sub(g.started).Seconds()
	st.RSSBytes = rss()
	st.Model = g.agents[g.cfg.DefaultAgent].Model
	st.AgentModels = make(map[string]string, len(g.agents))
	for id, ag := range g.agents {
		st.AgentModels[id] = ag.Model
	}
	if list, err := g.cfg.Sessions.List(""); err == nil {
		st.Sessions = len(list)
		// Open turns that no turn of this process runs were cut by a crash
		// and could not be closed yet.
		g.mu.Lock()
		for _, k := range list {
			if _, running := g.running[k.Key]; k.Entry.OpenTurn != "" && !running {
				st.InterruptedOpen++
			}
		}
		if st.InterruptedOpen > 0 {
			st.InterruptedError = g.recoverErr
		}
		g.mu.Unlock()
	}
	if g.cfg.StateWarning != nil {
		st.StateWarning = g.cfg.StateWarning()
	}
	g.mu.Lock()
	hooks := g.statusHooks
	g.mu.Unlock()
	for _, f := range hooks {
		f(&st)
	}
	return st
}

// rss returns the resident set size of this process, or the Go runtime's
// view of its memory where /proc is missing.
func rss() int64 {
	if data, err := os.ReadFile("/proc/self/status"); err == nil {
		for line := range strings.Lines(string(data)) {
			if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				f := strings.Fields(rest)
				if len(f) > 0 {
					if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
						return kb * 1024
					}
				}
			}
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.Sys)
}
