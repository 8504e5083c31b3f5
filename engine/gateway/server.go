package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/session"
	"github.com/openclaw-edge/edge/engine/transcript"
)

// maxSendBody limits the request body of a message (import.go has the
// transcript's).
const maxSendBody = 1 << 20

// Handler returns the control API (DESIGN.md §9). Authentication happens
// below it: the Unix socket only accepts the gateway's own user.
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.PathStatus, func(w http.ResponseWriter, r *http.Request) {
		api.WriteJSON(w, http.StatusOK, g.Status())
	})
	mux.HandleFunc("POST "+api.PathMessages, g.serveSend)
	mux.HandleFunc("GET "+api.PathSessions, g.serveSessions)
	mux.HandleFunc("GET "+api.PathSessionHistory, g.serveHistory)
	mux.HandleFunc("POST "+api.PathSessionReset, g.serveReset)
	mux.HandleFunc("GET "+api.PathSessionExport, g.serveExport)
	mux.HandleFunc("POST "+api.PathSessionImport, g.serveImport)
	mux.HandleFunc("PUT "+api.PathWorkspaceFile, g.serveWorkspaceFile)
	mux.HandleFunc("GET "+api.PathDoctor, g.serveDoctor)
	mux.HandleFunc("GET "+api.PathLogs, g.serveLogs)
	g.configRoutes(mux)
	g.approvalRoutes(mux)
	g.channelRoutes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		api.WriteError(w, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path)})
	})
	return mux
}

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
	if len(g.ch.order) > 0 {
		st.Channels = g.ChannelStatuses()
	}
	return st
}

func (g *Gateway) serveSend(w http.ResponseWriter, r *http.Request) {
	var req api.SendRequest
	if err := decodeJSON(w, r, maxSendBody, &req); err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	clientGone := false
	emit := func(ev api.Event) {
		if clientGone {
			return
		}
		if err := writeEvent(w, ev); err != nil {
			clientGone = true
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	// The turn outlives the request: a client that goes away must not lose
	// the reply, which is in the transcript either way. /stop aborts.
	res, err := g.Send(context.WithoutCancel(r.Context()), req, emit)
	if err != nil {
		emit(api.Event{Type: api.EventError, Error: asAPIError(err)})
		return
	}
	emit(api.Event{Type: api.EventDone, Result: res})
}

// streamWriteTimeout bounds writing one stream event: a client that stops
// reading is dropped after it, and the turn goes on without it (its reply
// is in the transcript either way). A variable so tests can shorten it.
var streamWriteTimeout = 10 * time.Second

// writeEvent writes and flushes one Server-Sent Event under a fresh write
// deadline. An error means the client is gone or stuck: stop writing to it.
func writeEvent(w http.ResponseWriter, ev api.Event) error {
	return writeSSE(w, string(ev.Type), ev)
}

// writeSSE writes and flushes one Server-Sent Event named name.
func writeSSE(w http.ResponseWriter, name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", name, err)
	}
	rc := http.NewResponseController(w)
	// ErrNotSupported (a test recorder, no connection) leaves writes
	// unbounded, as before.
	_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data); err != nil {
		return fmt.Errorf("write %s event: %w", name, err)
	}
	if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return fmt.Errorf("flush %s event: %w", name, err)
	}
	return nil
}

func (g *Gateway) serveSessions(w http.ResponseWriter, r *http.Request) {
	agentID := r.URL.Query().Get("agent")
	if agentID != "" {
		if _, ok := g.agents[agentID]; !ok {
			api.WriteError(w, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("agent %q is not configured", agentID)})
			return
		}
	}
	list, err := g.cfg.Sessions.List(agentID)
	if err != nil {
		api.WriteError(w, asAPIError(g.internal("list sessions", err)))
		return
	}
	out := make([]api.SessionInfo, 0, len(list))
	for _, k := range list {
		out = append(out, sessionInfo(k.AgentID, k.Key, k.Entry))
	}
	api.WriteJSON(w, http.StatusOK, out)
}

func sessionInfo(agentID string, key engine.SessionKey, e session.Entry) api.SessionInfo {
	return api.SessionInfo{
		Key: string(key), AgentID: agentID, SessionID: e.SessionID, ChatType: e.ChatType, Channel: e.Channel,
		DisplayName: e.DisplayName, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt, Model: e.LastModel,
		InputTokens: e.InputTokens, OutputTokens: e.OutputTokens, TotalTokens: e.TotalTokens, Messages: e.Messages,
		ContextTokens: e.ContextTokens, CompactionCount: e.CompactionCount,
		MemoryFlushAt: e.MemoryFlushAt, MemoryFlushCompactionCount: e.MemoryFlushCompactionCount,
	}
}

// keyParam resolves the ?key= of a session request.
func (g *Gateway) keyParam(r *http.Request) (*Agent, engine.SessionKey, error) {
	key := r.URL.Query().Get("key")
	if key == "" {
		return nil, "", badRequest("missing ?key= (a session key such as agent:main:main)")
	}
	return g.target(r.URL.Query().Get("agent"), key)
}

func (g *Gateway) serveHistory(w http.ResponseWriter, r *http.Request) {
	ag, key, err := g.keyParam(r)
	if err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	e, h, entries, err := g.history(ag, key)
	if err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	out := api.History{SessionKey: string(key), SessionID: e.SessionID, Entries: make([]json.RawMessage, 0, len(entries))}
	if out.Header, err = json.Marshal(h); err != nil {
		api.WriteError(w, asAPIError(g.internal("encode the transcript header", err)))
		return
	}
	for _, en := range entries {
		raw, err := json.Marshal(en)
		if err != nil {
			api.WriteError(w, asAPIError(g.internal("encode a transcript entry", err)))
			return
		}
		out.Entries = append(out.Entries, raw)
	}
	api.WriteJSON(w, http.StatusOK, out)
}

func (g *Gateway) history(ag *Agent, key engine.SessionKey) (session.Entry, transcript.Header, []transcript.Entry, error) {
	e, ok, err := g.cfg.Sessions.Get(ag.ID, key)
	if err != nil {
		return e, transcript.Header{}, nil, g.internal("read the session", err)
	}
	if !ok {
		return e, transcript.Header{}, nil, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no session %s (see `openclaw sessions list`)", key)}
	}
	h, entries, err := g.cfg.Sessions.History(ag.ID, key)
	if err != nil {
		return e, h, nil, g.internal("read the transcript", err)
	}
	return e, h, entries, nil
}

// transcriptByID reads the stored transcript with session id id.
func (g *Gateway) transcriptByID(id string) (transcript.Header, []transcript.Entry, error) {
	if err := transcript.ValidSessionID(id); err != nil {
		return transcript.Header{}, nil, badRequest(api.EscapeControl("?id=: " + err.Error()))
	}
	h, entries, err := g.cfg.Sessions.Transcript(id)
	if errors.Is(err, session.ErrNotFound) {
		return h, nil, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no transcript with session id %s", id)}
	}
	if err != nil {
		return h, nil, g.internal("read the transcript", err)
	}
	return h, entries, nil
}

func (g *Gateway) serveReset(w http.ResponseWriter, r *http.Request) {
	ag, key, err := g.keyParam(r)
	if err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	release, _, err := g.lanes.Acquire(r.Context(), string(key))
	if err != nil {
		api.WriteError(w, &api.Error{Code: api.CodeAborted, Message: "cancelled while waiting for the session's running turn"})
		return
	}
	defer release()
	meta := session.Meta{Workspace: ag.Workspace}
	if old, ok, _ := g.cfg.Sessions.Get(ag.ID, key); ok {
		meta = session.Meta{ChatType: old.ChatType, Channel: old.Channel, DisplayName: old.DisplayName, Subject: old.Subject, Room: old.Room, Workspace: ag.Workspace}
	}
	e, err := g.cfg.Sessions.Reset(ag.ID, key, meta)
	if err != nil {
		api.WriteError(w, asAPIError(g.internal("reset the session", err)))
		return
	}
	api.WriteJSON(w, http.StatusOK, sessionInfo(ag.ID, key, e))
}

// serveExport writes the transcript ?key= points at, or the one with
// session id ?id= (also one no key points at any more: replaced by /new or
// by an import), as OpenClaw JSONL.
func (g *Gateway) serveExport(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	version, err := transcript.ParseFormat(q.Get("format"))
	if err != nil {
		api.WriteError(w, badRequest(api.EscapeControl(err.Error())))
		return
	}
	var (
		h       transcript.Header
		entries []transcript.Entry
	)
	if q.Has("id") {
		if q.Has("key") {
			api.WriteError(w, badRequest("give ?key= or ?id=, not both"))
			return
		}
		h, entries, err = g.transcriptByID(q.Get("id"))
	} else {
		var (
			ag  *Agent
			key engine.SessionKey
		)
		if ag, key, err = g.keyParam(r); err == nil {
			_, h, entries, err = g.history(ag, key)
		}
	}
	if err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	var buf bytes.Buffer
	if err := transcript.Export(&buf, h, entries, version); err != nil {
		api.WriteError(w, asAPIError(g.internal("encode the transcript", err)))
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	_, _ = buf.WriteTo(w) // the client went away; nothing to do
}

func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return badRequest(fmt.Sprintf("request body is larger than %d bytes", limit))
		}
		return badRequest("invalid JSON request body: " + err.Error())
	}
	if dec.More() {
		return badRequest("invalid JSON request body: more than one value")
	}
	return nil
}

func asAPIError(err error) *api.Error {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae
	}
	return &api.Error{Code: api.CodeInternal, Message: err.Error()}
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
