package gateway

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/session"
	"github.com/openclaw-edge/edge/engine/transcript"
)

// Import limits. The body is read line by line and stored in batches
// (session.Import), so memory does not grow with the file; the size cap
// only keeps a runaway upload from filling the disk.
const maxImportBody = 4 << 30

// Timeouts of an import upload, variables so tests can shorten them.
var (
	// importReadIdle is how long the upload may send nothing: the read
	// deadline rolls forward as data arrives, so a large file on a slow
	// link is fine and a stalled client is not.
	importReadIdle = 30 * time.Second
	// importDrainTime bounds reading the rest of a rejected upload, which
	// lets the client see the error reply instead of a broken pipe.
	importDrainTime = 10 * time.Second
	// replyWriteTimeout bounds writing a reply to a client that does not
	// read it.
	replyWriteTimeout = 30 * time.Second
)

// serveImport streams an OpenClaw JSONL transcript into the store
// (POST /v1/sessions/import[?key=]). Nothing is visible until the last
// transaction, which binds the session key; a failure discards what was
// staged. A session id already in the store gets a fresh one; without a key
// the import gets agent:<agent>:import-<first 8 of the id>. With
// ?ifExists=skip a transcript already imported (same entries, or a prefix
// of the stored ones) is read, checked and skipped, and one that differs is
// refused (CodeConflict), so migrating twice never duplicates a session.
func (g *Gateway) serveImport(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	keyArg := q.Get("key")
	ag, key, err := g.target(q.Get("agent"), keyArg)
	if err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	ifExists := q.Get("ifExists")
	switch ifExists {
	case "", api.ImportIfExistsRename, api.ImportIfExistsSkip:
	default:
		api.WriteError(w, badRequest(fmt.Sprintf("unknown ?ifExists=%s: want %s or %s", api.EscapeControl(ifExists), api.ImportIfExistsRename, api.ImportIfExistsSkip)))
		return
	}
	rc := http.NewResponseController(w)
	body := &rollingBody{r: http.MaxBytesReader(w, r.Body, maxImportBody), rc: rc, idle: importReadIdle}
	reply := func(status int, v any) {
		_ = rc.SetWriteDeadline(time.Now().Add(replyWriteTimeout)) // not supported by a test recorder: fine
		if e, ok := v.(*api.Error); ok {
			api.WriteError(w, e)
			return
		}
		api.WriteJSON(w, status, v)
	}
	fail := func(err error) {
		ae := g.importError(err)
		// A stalled client would only hold the drain up.
		if ae.Code == api.CodeBadRequest && !errors.Is(err, os.ErrDeadlineExceeded) {
			drain(rc, body)
		}
		reply(0, ae)
	}

	imp, err := g.cfg.Sessions.BeginImport(body)
	if err != nil {
		fail(err)
		return
	}
	defer func() {
		if err := imp.Discard(); err != nil {
			g.log.Error("could not discard a failed import", "session", imp.SessionID(), "err", err)
		}
	}()
	chosen := keyArg == ""
	if ifExists == api.ImportIfExistsSkip && imp.Existing() {
		g.skipImport(w, rc, imp, key, chosen, reply, fail)
		return
	}
	if chosen {
		key = engine.AgentSessionKey(ag.ID, "import-"+keySafe(imp.SessionID(), 8))
	}
	n, err := imp.Load()
	if err != nil {
		fail(err)
		return
	}
	// The body is read: no read deadline may cut the wait for the lane.
	_ = rc.SetReadDeadline(time.Time{})
	release, _, err := g.lanes.Acquire(r.Context(), string(key))
	if err != nil {
		reply(0, &api.Error{Code: api.CodeAborted, Message: "cancelled while waiting for the session's running turn; nothing was imported"})
		return
	}
	defer release()
	e, err := imp.Publish(ag.ID, key)
	if err != nil {
		reply(0, asAPIError(g.internal("store the imported transcript", err)))
		return
	}
	if imp.RenamedFrom() != "" {
		g.log.Info("imported a transcript under a fresh session id", "session", key, "id", e.SessionID, "from", imp.RenamedFrom())
	}
	reply(http.StatusOK, api.ImportResult{
		SessionKey: string(key), SessionID: e.SessionID, Entries: n,
		RenamedFrom: imp.RenamedFrom(), KeyChosen: chosen,
	})
}

// skipImport finishes an ?ifExists=skip import whose session id is in the
// store: it reads the rest of the upload, compares and stores nothing.
func (g *Gateway) skipImport(w http.ResponseWriter, rc *http.ResponseController, imp *session.Import, key engine.SessionKey, chosen bool, reply func(int, any), fail func(error)) {
	id := imp.RenamedFrom()
	match, n, err := imp.Match()
	if err != nil {
		fail(err)
		return
	}
	_ = rc.SetReadDeadline(time.Time{})
	if chosen {
		key = "" // nothing was bound
	}
	switch match {
	case session.MatchSame, session.MatchPrefix:
		existing := api.ExistingSame
		if match == session.MatchPrefix {
			existing = api.ExistingExtended
		}
		reply(http.StatusOK, api.ImportResult{SessionKey: string(key), SessionID: id, Entries: n, Skipped: true, Existing: existing})
	default:
		reply(0, &api.Error{Code: api.CodeConflict, Message: fmt.Sprintf(
			"import: session %s is already in the store with different entries (it changed since it was imported, here or at the source); nothing was imported. Import without ifExists=skip to keep both (the upload gets a fresh session id)", id)})
	}
}

// importError turns an import failure into the reply: what is wrong with
// the transcript or the upload (and where) is the client's to fix; a store
// failure is ours.
func (g *Gateway) importError(err error) *api.Error {
	var le *transcript.LineError
	if !errors.As(err, &le) {
		return asAPIError(g.internal("import the transcript", err))
	}
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return badRequest(fmt.Sprintf("import: the transcript is larger than %d GiB; nothing was imported", mbe.Limit>>30))
	case errors.Is(err, os.ErrDeadlineExceeded):
		return badRequest(fmt.Sprintf("import: the upload stalled at line %d (nothing received for %s); nothing was imported", le.Line, importReadIdle))
	case isReadError(err):
		return badRequest(fmt.Sprintf("import: the upload broke off at line %d (%v); nothing was imported", le.Line, errors.Unwrap(le.Err)))
	}
	return badRequest("import: " + err.Error() + "; nothing was imported")
}

// isReadError reports whether a decoder error came from reading, not
// parsing.
func isReadError(err error) bool {
	var le *transcript.LineError
	return errors.As(err, &le) && strings.HasPrefix(le.Err.Error(), "read: ")
}

// drain reads the rest of a rejected upload, for a bounded time, so the
// client gets to read the error reply: a server that stops reading makes
// most clients fail on the write with a broken pipe instead.
func drain(rc *http.ResponseController, body *rollingBody) {
	body.stopped = true
	_ = rc.SetReadDeadline(time.Now().Add(importDrainTime))
	_, _ = io.Copy(io.Discard, body) // bounded by the deadline; errors mean "done"
}

// keySafe returns up to n leading bytes of a session id usable in a
// session key (a ':' would start a new key segment).
func keySafe(id string, n int) string {
	if len(id) > n {
		id = id[:n]
	}
	return strings.Map(func(r rune) rune {
		if r == ':' || r == '.' {
			return '-'
		}
		return r
	}, id)
}

// rollingBody is a request body whose read deadline moves forward as data
// arrives: a long upload lives as long as it keeps sending.
type rollingBody struct {
	r       io.Reader
	rc      *http.ResponseController
	idle    time.Duration
	renewAt time.Time
	stopped bool // the deadline is fixed (draining)
}

func (b *rollingBody) Read(p []byte) (int, error) {
	// Renew at most every quarter of the idle time: a syscall per read of
	// a large upload would be waste.
	if now := time.Now(); !b.stopped && !now.Before(b.renewAt) {
		_ = b.rc.SetReadDeadline(now.Add(b.idle)) // ErrNotSupported without a real connection
		b.renewAt = now.Add(b.idle / 4)
	}
	return b.r.Read(p)
}
