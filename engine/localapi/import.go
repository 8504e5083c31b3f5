package localapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/gateway"
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
// staged. A session id already in the store gets a fresh one.
//
// The file is outside input: its header's "sessionKey" is only a wish.
// Without ?key= it is used when it is free and no chat is routed to it
// (importKeyNote); otherwise the import gets a fresh
// agent:<agent>:import-<first 8 of the id>[-N] and the reply says why. So
// a transcript someone sent never becomes the owner's main session or a
// chat's session, and never replaces a session, unless ?key= names it: an
// explicit key replaces, and the replaced transcript stays in the store,
// exportable by id (ImportResult.Replaced).
//
// With ?ifExists=skip a transcript already imported (same entries, or a
// prefix of the stored ones) is read, checked and skipped, and one that
// differs is refused (CodeConflict), so migrating twice never duplicates a
// session. With ?ifExists=fail an id in the store or a key that holds a
// session is refused (CodeConflict) and nothing is imported.
func (h *handler) serveImport(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	keyArg, agentArg := q.Get("key"), q.Get("agent")
	ag, key, err := h.gw.Target(agentArg, keyArg)
	if err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	ifExists := q.Get("ifExists")
	switch ifExists {
	case "", api.ImportIfExistsRename, api.ImportIfExistsSkip, api.ImportIfExistsFail:
	default:
		api.WriteError(w, badRequest(fmt.Sprintf("unknown ?ifExists=%s: want %s, %s or %s", api.EscapeControl(ifExists), api.ImportIfExistsRename, api.ImportIfExistsSkip, api.ImportIfExistsFail)))
		return
	}
	var updatedAt time.Time
	if s := q.Get("updatedAt"); s != "" {
		if updatedAt, err = time.Parse(time.RFC3339Nano, s); err != nil {
			api.WriteError(w, badRequest(fmt.Sprintf("?updatedAt=%s: want an RFC 3339 time such as 2026-09-10T08:00:00Z", api.EscapeControl(clip(s, 64)))))
			return
		}
	}
	explicit := keyArg != ""
	if explicit && ifExists == api.ImportIfExistsFail {
		// Refuse before the body is read; checked again under the lane.
		if err := h.keyFree(ag, key); err != nil {
			api.WriteError(w, asAPIError(err))
			return
		}
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
		ae := h.importError(err)
		// A stalled client would only hold the drain up.
		if (ae.Code == api.CodeBadRequest || ae.Code == api.CodeConflict) && !errors.Is(err, os.ErrDeadlineExceeded) {
			drain(rc, body)
		}
		reply(0, ae)
	}

	imp, err := h.gw.Sessions().BeginImport(body)
	if err != nil {
		fail(err)
		return
	}
	defer func() {
		if err := imp.Discard(); err != nil {
			h.log.Error("could not discard a failed import", "session", imp.SessionID(), "err", err)
		}
	}()
	if ifExists == api.ImportIfExistsSkip && imp.Existing() {
		if !explicit {
			key = "" // nothing is bound
		}
		h.skipImport(w, rc, imp, key, !explicit, reply, fail)
		return
	}
	if ifExists == api.ImportIfExistsFail && imp.Existing() {
		fail(&api.Error{Code: api.CodeConflict, Message: fmt.Sprintf(
			"import: session id %s is already in the store (see `openclaw sessions export --id %s`); nothing was imported. Import without --if-exists fail to keep both (the upload gets a fresh session id)", imp.RenamedFrom(), imp.RenamedFrom())})
		return
	}
	var headerKey engine.SessionKey
	if !explicit {
		if headerKey, err = h.importHeaderKey(imp.Header(), agentArg); err != nil {
			fail(err)
			return
		}
		// The header's agent is the import's unless ?agent= said
		// otherwise (then the header's key is not used: note below).
		if headerKey != "" && agentArg == "" {
			ag = h.gw.Agent(headerKey.AgentID())
		}
		key = headerKey // "": a fresh one below
		if headerKey != "" && ifExists == api.ImportIfExistsFail {
			// Taken is a conflict even where the key would not be used
			// anyway (the main session): "fail" means "nothing if it
			// exists". Checked again under the lane when it is used.
			if hag := h.gw.Agent(headerKey.AgentID()); hag != nil {
				if err := h.keyFree(hag, headerKey); err != nil {
					fail(err)
					return
				}
			}
		}

	}
	n, err := imp.Load()
	if err != nil {
		fail(err)
		return
	}
	// The body is read: no read deadline may cut the wait for the lane.
	_ = rc.SetReadDeadline(time.Time{})
	note := ""
	if headerKey != "" {
		note = h.importKeyNote(ag, headerKey)
	}
	var (
		release func()
		old     session.Entry
		fresh   int // keys picked so far
	)
	for {
		if !explicit && (key == "" || note != "" || fresh > 0) {
			fresh++
			if key, err = h.freshImportKey(ag, imp.SessionID(), fresh); err != nil {
				reply(0, asAPIError(err))
				return
			}
		}
		if release, err = h.gw.Lane(r.Context(), key); err != nil {
			reply(0, &api.Error{Code: api.CodeAborted, Message: "cancelled while waiting for the session's running turn; nothing was imported"})
			return
		}
		// Under the key's lane nothing else binds it: what Get sees is
		// what Publish replaces.
		e, taken, err := h.gw.Sessions().Get(ag.ID, key)
		if err != nil {
			release()
			reply(0, asAPIError(h.gw.Internal("read the session", err)))
			return
		}
		switch {
		case !taken:
		case explicit && ifExists == api.ImportIfExistsFail, !explicit && key == headerKey && ifExists == api.ImportIfExistsFail:
			release()
			reply(0, keyTaken(key, e))
			return
		case explicit:
			old = e
		default:
			if key == headerKey {
				note = fmt.Sprintf("%s already holds session %s", key, e.SessionID)
			}
			release()
			continue
		}
		break
	}
	defer release()
	imp.SetUpdatedAt(updatedAt)
	e, err := imp.Publish(ag.ID, key)
	if err != nil {
		reply(0, asAPIError(h.gw.Internal("store the imported transcript", err)))
		return
	}
	if imp.RenamedFrom() != "" {
		h.log.Info("imported a transcript under a fresh session id", "session", key, "id", e.SessionID, "from", imp.RenamedFrom())
	}
	res := api.ImportResult{
		SessionKey: string(key), SessionID: e.SessionID, Entries: n,
		RenamedFrom: imp.RenamedFrom(), KeyChosen: !explicit && key != headerKey,
	}
	if res.KeyChosen && headerKey != "" {
		res.HeaderKey, res.KeyNote = string(headerKey), note
		h.log.Info("imported a transcript under a fresh key, not the one its header names", "session", key, "header_key", api.EscapeControl(string(headerKey)), "why", note)
	}
	if old.SessionID != "" && old.SessionID != e.SessionID {
		res.Replaced = old.SessionID
		h.log.Info("an import replaced a session; its transcript is kept", "session", key, "replaced", old.SessionID, "id", e.SessionID)
	}
	reply(http.StatusOK, res)
}

// keyFree is a CodeConflict error when key holds a session.
func (h *handler) keyFree(ag *gateway.Agent, key engine.SessionKey) error {
	e, taken, err := h.gw.Sessions().Get(ag.ID, key)
	switch {
	case err != nil:
		return h.gw.Internal("read the session", err)
	case taken:
		return keyTaken(key, e)
	}
	return nil
}

// keyTaken is the CodeConflict error of ?ifExists=fail for a key that
// holds a session, saying how to go ahead either way.
func keyTaken(key engine.SessionKey, e session.Entry) *api.Error {
	k := api.EscapeControl(string(key))
	return &api.Error{Code: api.CodeConflict, Message: fmt.Sprintf(
		"import: %s already holds session %s; nothing was imported. Without --if-exists fail a file's header key gets a fresh key instead, and --key %s replaces that session (its transcript stays exportable with `openclaw sessions export --id %s`)",
		k, e.SessionID, k, e.SessionID)}
}

// maxImportKeyTries bounds the search for a free agent:<agent>:import-… key.
const maxImportKeyTries = 100

// freshImportKey is the try'th candidate of a key the gateway picks for an
// import: agent:<agent>:import-<first 8 of the id>, then …-2, …-3.
func (h *handler) freshImportKey(ag *gateway.Agent, id string, try int) (engine.SessionKey, error) {
	if try > maxImportKeyTries {
		return "", h.gw.Internal("pick a session key for the import", fmt.Errorf("agent:%s:import-%s-1…%d are all taken", ag.ID, keySafe(id, 8), maxImportKeyTries))
	}
	name := "import-" + keySafe(id, 8)
	if try > 1 {
		name += "-" + strconv.Itoa(try)
	}
	return engine.AgentSessionKey(ag.ID, name), nil
}

// importHeaderKey reads the header's "sessionKey", "" when there is none.
// It is outside input: anything but a well-formed agent:<agent>:<name> of
// a configured agent is refused, naming the line and the field.
func (h *handler) importHeaderKey(hdr transcript.Header, agentArg string) (engine.SessionKey, error) {
	raw, ok := hdr.Extra["sessionKey"]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	bad := func(format string, args ...any) error {
		return badRequest(`import: line 1: header field "sessionKey": ` + fmt.Sprintf(format, args...) + "; nothing was imported. Import with --key to choose the key")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", bad("want a string, not %s", api.EscapeControl(clip(string(raw), 64)))
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	k := engine.SessionKey(s)
	if err := k.Valid(); err != nil {
		return "", bad("%s", api.EscapeControl(err.Error()))
	}
	id := k.AgentID()
	if id == "" {
		return "", bad("%q: want agent:<agentId>:<name>", api.EscapeControl(clip(s, 64)))
	}
	if h.gw.Agent(id) == nil && agentArg == "" {
		return "", bad("agent %q is not configured here (agents: %s)", api.EscapeControl(clip(id, 64)), strings.Join(h.gw.AgentIDs(), ", "))
	}
	return k, nil
}

// peerKinds are the key segments routing puts before a chat's id
// (engine/routing): a key with one is a chat's session.
var peerKinds = []string{string(engine.ChatDirect), string(engine.ChatGroup), string(engine.ChatChannel), string(engine.ChatRoom)}

// importKeyNote says why the header's key k may not be taken without an
// explicit ?key= ("" when it may, if free): it is another agent's than the
// import's, an agent's main session (the owner's, where MEMORY.md is
// loaded), or a key chats are routed to — a file must not put words into
// a conversation it does not come from.
func (h *handler) importKeyNote(ag *gateway.Agent, k engine.SessionKey) string {
	if k.AgentID() != ag.ID {
		return fmt.Sprintf("it names agent %q; the import is for agent %q", k.AgentID(), ag.ID)
	}
	rest := strings.TrimPrefix(string(k), "agent:"+ag.ID+":")
	if strings.EqualFold(rest, h.gw.MainKey()) {
		return fmt.Sprintf("%s is the agent's main session (the owner's)", k)
	}
	for _, seg := range strings.Split(strings.ToLower(rest), ":") {
		if slices.Contains(peerKinds, seg) {
			return fmt.Sprintf("%s is where a chat's messages are routed", k)
		}
	}
	return ""
}

// clip cuts s to n bytes for an error message.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// skipImport finishes an ?ifExists=skip import whose session id is in the
// store: it reads the rest of the upload, compares and stores nothing.
func (h *handler) skipImport(w http.ResponseWriter, rc *http.ResponseController, imp *session.Import, key engine.SessionKey, chosen bool, reply func(int, any), fail func(error)) {
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
func (h *handler) importError(err error) *api.Error {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae
	}
	var le *transcript.LineError
	if !errors.As(err, &le) {
		return asAPIError(h.gw.Internal("import the transcript", err))
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
