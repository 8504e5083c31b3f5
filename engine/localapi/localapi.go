// Package localapi is the gateway's control API (docs/design.md §9): HTTP
// handlers that only translate requests into calls on the turn core
// (engine/gateway) and the channel side (engine/inbound), and their
// answers into the wire types of engine/api. The shape is tailscale's
// ipn/localapi: one route table, no state of its own beyond the request,
// and no authentication — that happens below it (the Unix socket accepts
// only the gateway's own user; the LAN listener's TLS layer admits paired
// devices and applies their role).
//
// Where things are, one job a file:
//
//	localapi.go   New, status, messages (the CLI's turns), sessions, reset, delete, export
//	channels.go   channels, pairing, outbound sends, login and logout
//	approvals.go  pending exec approvals and the allowlist
//	config.go     config get|set|validate on the gateway's own file
//	import.go     a streamed transcript import
//	workspace.go  writing a workspace file
//	doctor.go     the self-checks (engine/doctor)
//	logs.go       the log file's tail and follow
//	cron.go       the scheduler's jobs and the heartbeat
//
// The web dashboard's files (engine/dashboard) are served by the same mux.
package localapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/config"
	"github.com/openclaw-edge/edge/engine/dashboard"
	"github.com/openclaw-edge/edge/engine/gateway"
	"github.com/openclaw-edge/edge/engine/inbound"
	"github.com/openclaw-edge/edge/engine/logfile"
	"github.com/openclaw-edge/edge/engine/session"
	"github.com/openclaw-edge/edge/engine/transcript"
)

// maxSendBody limits the request body of a message (import.go has the
// transcript's).
const maxSendBody = 1 << 20

// Config is what only the wiring knows.
type Config struct {
	// Doctor is what GET /v1/doctor needs from the wiring (doctor.go).
	Doctor DoctorConfig
	// Logs is the gateway's log file, served by GET /v1/logs (logs.go);
	// nil: there is none.
	Logs *logfile.File
	// ConfigFile is the config file the gateway loaded ("": the built-in
	// defaults); ConfigNewFile is where `config set` creates one when
	// there is none (config.go). ConfigHow says how ConfigFile was
	// found (config.Location.How), for `openclaw config validate`.
	ConfigFile, ConfigNewFile string
	ConfigHow                 string
	// ApplyLive applies key of the changed config c to the running
	// gateway when key is a setting that can change live, and reports
	// whether it did; the others wait for a restart (config.go). nil:
	// nothing applies live.
	ApplyLive func(key string, c *config.Config) bool
	// StateDir and Socket are the gateway's, for the doctor and imports.
	StateDir, Socket string
	Logger           *slog.Logger
	Now              func() time.Time

	// The parts outside the turn core (parts.go); nil: that part's
	// routes are not served.
	Memory  MemoryLookup // memory.go
	Models  Models       // models.go
	Devices Devices      // devices.go
	Cron    Cron         // cron.go: the scheduler and the heartbeat
}

type handler struct {
	gw   *gateway.Gateway
	in   *inbound.Inbound
	cfg  Config
	log  *slog.Logger
	conf configFile // the config endpoints' file (config.go)
}

// New returns the control API over the turn core gw and the channel side
// in. Authentication happens below it: the Unix socket only accepts the
// gateway's own user.
func New(gw *gateway.Gateway, in *inbound.Inbound, cfg Config) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	h := &handler{gw: gw, in: in, cfg: cfg, log: cfg.Logger}
	mux := http.NewServeMux()
	Register(mux, h.routes())
	mux.HandleFunc("/", notFound)
	return mux
}

// routes is the gateway's part of the route table.
func (h *handler) routes() []Route {
	rs := []Route{
		{"GET", api.PathStatus, func(w http.ResponseWriter, r *http.Request) {
			api.WriteJSON(w, http.StatusOK, h.gw.Status())
		}},
		{"POST", api.PathMessages, h.serveSend},
		{"GET", api.PathSessions, h.serveSessions},
		{"GET", api.PathSessionHistory, h.serveHistory},
		{"POST", api.PathSessionReset, h.serveReset},
		{"POST", api.PathSessionDelete, h.serveDelete},
		{"GET", api.PathSessionExport, h.serveExport},
		{"POST", api.PathSessionImport, h.serveImport},
		{"PUT", api.PathWorkspaceFile, h.serveWorkspaceFile},
		{"GET", api.PathDoctor, h.serveDoctor},
		{"GET", api.PathLogs, h.serveLogs},
		{"GET", api.PathDashboard, dashboard.Serve},
		{"GET", api.PathDashboardAsset, dashboard.Serve},
	}
	rs = append(rs, h.configRoutes()...)
	rs = append(rs, h.approvalRoutes()...)
	rs = append(rs, h.channelRoutes()...)
	return append(rs, partRoutes(h.cfg)...)
}

func (h *handler) serveSend(w http.ResponseWriter, r *http.Request) {
	var req api.SendRequest
	if err := decodeJSON(w, r, maxSendBody, &req); err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	flusher := startStream(w)
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
	res, err := h.gw.Send(context.WithoutCancel(r.Context()), req, emit)
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

func (h *handler) serveSessions(w http.ResponseWriter, r *http.Request) {
	agentID := r.URL.Query().Get("agent")
	if agentID != "" {
		if h.gw.Agent(agentID) == nil {
			api.WriteError(w, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("agent %q is not configured", agentID)})
			return
		}
	}
	list, err := h.gw.Sessions().List(agentID)
	if err != nil {
		api.WriteError(w, asAPIError(h.gw.Internal("list sessions", err)))
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
		DisplayName: e.DisplayName, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt, Model: e.LastModel, ModelOverride: e.ModelOverride,
		InputTokens: e.InputTokens, OutputTokens: e.OutputTokens, TotalTokens: e.TotalTokens, Messages: e.Messages,
		ContextTokens: e.ContextTokens, CompactionCount: e.CompactionCount,
		MemoryFlushAt: e.MemoryFlushAt, MemoryFlushCompactionCount: e.MemoryFlushCompactionCount,
	}
}

// keyParam resolves the ?key= of a session request.
func (h *handler) keyParam(r *http.Request) (*gateway.Agent, engine.SessionKey, error) {
	key := r.URL.Query().Get("key")
	if key == "" {
		return nil, "", badRequest("missing ?key= (a session key such as agent:main:main)")
	}
	return h.gw.Target(r.URL.Query().Get("agent"), key)
}

func (h *handler) serveHistory(w http.ResponseWriter, r *http.Request) {
	ag, key, err := h.keyParam(r)
	if err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	e, hdr, entries, err := h.history(ag, key)
	if err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	// The conversation as it stands: the active branch. A turn moved off
	// it (a HEARTBEAT_OK heartbeat, engine/schedule) is not part of it;
	// the export keeps every entry.
	entries = transcript.Path(entries, transcript.ActiveLeaf(entries))
	out := api.History{SessionKey: string(key), SessionID: e.SessionID, Entries: make([]json.RawMessage, 0, len(entries))}
	if out.Header, err = json.Marshal(hdr); err != nil {
		api.WriteError(w, asAPIError(h.gw.Internal("encode the transcript header", err)))
		return
	}
	for _, en := range entries {
		raw, err := json.Marshal(en)
		if err != nil {
			api.WriteError(w, asAPIError(h.gw.Internal("encode a transcript entry", err)))
			return
		}
		out.Entries = append(out.Entries, raw)
	}
	api.WriteJSON(w, http.StatusOK, out)
}

func (h *handler) history(ag *gateway.Agent, key engine.SessionKey) (session.Entry, transcript.Header, []transcript.Entry, error) {
	e, ok, err := h.gw.Sessions().Get(ag.ID, key)
	if err != nil {
		return e, transcript.Header{}, nil, h.gw.Internal("read the session", err)
	}
	if !ok {
		return e, transcript.Header{}, nil, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no session %s (see `openclaw sessions list`)", key)}
	}
	hdr, entries, err := h.gw.Sessions().History(ag.ID, key)
	if err != nil {
		return e, hdr, nil, h.gw.Internal("read the transcript", err)
	}
	return e, hdr, entries, nil
}

// transcriptByID reads the stored transcript with session id id.
func (h *handler) transcriptByID(id string) (transcript.Header, []transcript.Entry, error) {
	if err := transcript.ValidSessionID(id); err != nil {
		return transcript.Header{}, nil, badRequest(api.EscapeControl("?id=: " + err.Error()))
	}
	hdr, entries, err := h.gw.Sessions().Transcript(id)
	if errors.Is(err, session.ErrNotFound) {
		return hdr, nil, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no transcript with session id %s", id)}
	}
	if err != nil {
		return hdr, nil, h.gw.Internal("read the transcript", err)
	}
	return hdr, entries, nil
}

func (h *handler) serveReset(w http.ResponseWriter, r *http.Request) {
	ag, key, err := h.keyParam(r)
	if err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	release, err := h.gw.Lane(r.Context(), key)
	if err != nil {
		api.WriteError(w, &api.Error{Code: api.CodeAborted, Message: "cancelled while waiting for the session's running turn"})
		return
	}
	defer release()
	meta := session.Meta{Workspace: ag.Workspace}
	if old, ok, _ := h.gw.Sessions().Get(ag.ID, key); ok {
		meta = session.Meta{ChatType: old.ChatType, Channel: old.Channel, DisplayName: old.DisplayName, Subject: old.Subject, Room: old.Room, Workspace: ag.Workspace}
	}
	e, err := h.gw.Sessions().Reset(ag.ID, key, meta)
	if err != nil {
		api.WriteError(w, asAPIError(h.gw.Internal("reset the session", err)))
		return
	}
	api.WriteJSON(w, http.StatusOK, sessionInfo(ag.ID, key, e))
}

// serveDelete removes the session ?key= and its current transcript
// (gateway.Delete: after its running turn) and answers the session as it
// was.
func (h *handler) serveDelete(w http.ResponseWriter, r *http.Request) {
	ag, key, err := h.keyParam(r)
	if err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	e, err := h.gw.Delete(r.Context(), ag.ID, key)
	if err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	api.WriteJSON(w, http.StatusOK, sessionInfo(ag.ID, key, e))
}

// serveExport writes the transcript ?key= points at, or the one with
// session id ?id= (also one no key points at any more: replaced by /new or
// by an import), as OpenClaw JSONL.
func (h *handler) serveExport(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	version, err := transcript.ParseFormat(q.Get("format"))
	if err != nil {
		api.WriteError(w, badRequest(api.EscapeControl(err.Error())))
		return
	}
	var (
		hdr     transcript.Header
		entries []transcript.Entry
	)
	if q.Has("id") {
		if q.Has("key") {
			api.WriteError(w, badRequest("give ?key= or ?id=, not both"))
			return
		}
		hdr, entries, err = h.transcriptByID(q.Get("id"))
	} else {
		var (
			ag  *gateway.Agent
			key engine.SessionKey
		)
		if ag, key, err = h.keyParam(r); err == nil {
			_, hdr, entries, err = h.history(ag, key)
		}
	}
	if err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	var buf bytes.Buffer
	if err := transcript.Export(&buf, hdr, entries, version); err != nil {
		api.WriteError(w, asAPIError(h.gw.Internal("encode the transcript", err)))
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	_, _ = buf.WriteTo(w) // the client went away; nothing to do
}
