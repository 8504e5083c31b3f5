// Package lan is the gateway's control API for the LAN (docs/design.md §9,
// §10): a TLS listener with the gateway's own identity that serves the same
// handlers as the Unix socket, to paired devices only; the pairing that
// makes a device paired (a code shown on the box, a CPace exchange bound to
// both TLS identities: engine/pair); and the record of paired devices
// (name, key, role, createdAt, lastSeen) with revocation that takes effect
// at once, on open connections too. It is the authentication layer of the
// LAN side: the control API's handlers (engine/localapi, the device
// endpoints included) sit behind it, and learn who asks only through the
// methods here that read the request's context.
//
// Choices where the spec was silent (Syncthing's and Tailscale's habits):
//   - Mutual TLS 1.3 with self-signed Ed25519 certificates; neither end
//     uses a CA. The gateway asks every client for a certificate and lets
//     any through the handshake; what it may do is decided per request by
//     the key it showed: an unknown key reaches only the two pairing
//     endpoints, a revoked one nothing.
//   - Codes live in memory (a restart forgets them); one is active at a
//     time, made anew by `openclaw-gateway pair-code`, single use, 10
//     minutes, and locked after 5 exchanges that did not complete: every
//     CPace exchange is one guess an attacker can test, so every exchange
//     counts until one is confirmed.
//   - Roles: operator (everything the local CLI can do) and viewer (only
//     the routes api.Routes lists as reads; every write, and any route not
//     listed, is refused). Pairing makes an operator; `openclaw devices
//     role` changes it, from the local socket or another operator — never
//     a device's own. The local socket is always an operator, so demoting
//     the last operator device locks nobody out (the box can undo it).
//   - lastSeen is written at most every 5 minutes per device.
package lan

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/pair"
)

// Limits of pairing.
const (
	CodeTTL      = 10 * time.Minute
	MaxTries     = 5
	sessionTTL   = 30 * time.Second
	maxSessions  = 8
	seenInterval = 5 * time.Minute
	maxNameLen   = 64
)

// bucket holds the paired devices, keyed by fingerprint (hex).
const bucket = "devices"

// Config is what the LAN API needs.
type Config struct {
	Identity *pair.Identity
	Name     string         // the box's name, shown to devices
	Records  engine.Records // where paired devices are kept
	Log      *slog.Logger
	Now      func() time.Time // nil: time.Now
}

// Server is the LAN API's state: devices, the active code, pairings in
// progress and the open connections of each device.
type Server struct {
	cfg Config

	mu       sync.Mutex
	devices  map[pair.Fingerprint]*api.Device
	seen     map[pair.Fingerprint]time.Time // last lastSeen write
	code     *codeState
	sessions map[string]*session
	conns    map[pair.Fingerprint]map[net.Conn]struct{}
}

type codeState struct {
	code    string
	expires time.Time
	tries   int
}

type session struct {
	st      *pair.GatewayState
	device  pair.Fingerprint
	name    string
	expires time.Time
}

// New loads the paired devices.
func New(cfg Config) (*Server, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{
		cfg: cfg, devices: map[pair.Fingerprint]*api.Device{}, seen: map[pair.Fingerprint]time.Time{},
		sessions: map[string]*session{}, conns: map[pair.Fingerprint]map[net.Conn]struct{}{},
	}
	err := cfg.Records.ViewRecords(func(tx engine.RecordTx) error {
		return tx.ForEach(bucket, "", func(key string, raw []byte) error {
			var d api.Device
			if err := json.Unmarshal(raw, &d); err != nil {
				return fmt.Errorf("device %s: %w", key, err)
			}
			fp, err := pair.ParseFingerprint(key)
			if err != nil {
				return err
			}
			s.devices[fp] = &d
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read paired devices: %w", err)
	}
	return s, nil
}

// Devices returns the paired devices, oldest first.
func (s *Server) Devices() []api.Device {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]api.Device, 0, len(s.devices))
	for fp, d := range s.devices {
		c := *d
		c.Connected = len(s.conns[fp]) > 0
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b api.Device) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out
}

// NewCode makes a new pairing code, replacing the active one.
func (s *Server) NewCode() (api.PairCode, error) {
	c, err := pair.NewCode()
	if err != nil {
		return api.PairCode{}, err
	}
	return s.SetCode(c)
}

// SetCode makes code (e.g. one preseeded on the boot partition) the active
// code for CodeTTL.
func (s *Server) SetCode(code string) (api.PairCode, error) {
	c, err := pair.NormalizeCode(code)
	if err != nil {
		return api.PairCode{}, err
	}
	exp := s.cfg.Now().Add(CodeTTL)
	s.mu.Lock()
	s.code = &codeState{code: c, expires: exp}
	clear(s.sessions)
	s.mu.Unlock()
	return api.PairCode{Code: c, ExpiresAt: exp}, nil
}

// TLSConfig is the listener's: the gateway's identity, TLS 1.3, a client
// certificate required (any: requests are authorized by its key).
func (s *Server) TLSConfig() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{s.cfg.Identity.Cert},
		MinVersion:   tls.VersionTLS13,
		ClientAuth:   tls.RequireAnyClientCert,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("a client certificate is required")
			}
			if _, err := x509.ParseCertificate(raw[0]); err != nil {
				return fmt.Errorf("client certificate: %w", err)
			}
			return nil
		},
	}
}

type connKey struct{}

// ConnContext is the http.Server's: it keeps the connection reachable
// from its requests, so revocation can close it.
func (s *Server) ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// ConnState is the http.Server's: it forgets closed connections.
func (s *Server) ConnState(c net.Conn, st http.ConnState) {
	if st != http.StateClosed && st != http.StateHijacked {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for fp, set := range s.conns {
		if _, ok := set[c]; ok {
			delete(set, c)
			if len(set) == 0 {
				delete(s.conns, fp)
			}
			return
		}
	}
}

// Handler serves the TLS listener: the pairing endpoints to anyone who
// completed the handshake, everything else (next, the control API) to
// paired devices only, reads only to viewers. The device it admitted rides
// in the request's context, for WhoAmI and SetRoleFor.
func (s *Server) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			api.WriteError(w, &api.Error{Code: api.CodeForbidden, Message: "a client certificate is required"})
			return
		}
		fp := pair.Of(r.TLS.PeerCertificates[0])
		switch r.URL.Path {
		case api.PathPairStart, api.PathPairFinish:
			// Strangers get one request per connection, like the refusal
			// below: only a successful start keeps it open, for its finish.
			// Otherwise one host could hold every connection slot with a
			// bogus finish now and then.
			w.Header().Set("Connection", "close")
		}
		switch r.URL.Path {
		case api.PathPairStart:
			s.pairStart(w, r, fp)
			return
		case api.PathPairFinish:
			s.pairFinish(w, r, fp)
			return
		}
		d, ok := s.admit(r, fp)
		if !ok {
			// No keep-alive for strangers: the listener's connection slots
			// are for paired devices.
			w.Header().Set("Connection", "close")
			api.WriteError(w, &api.Error{Code: api.CodeNotPaired, Message: "this device is not paired with the gateway (or was revoked): pair it with `openclaw pair`"})
			return
		}
		// Anything but an operator is a viewer. What a viewer may call is
		// decided by the route table (api.Routes), not by the method: a
		// POST can read (memory search) and an unlisted route is refused.
		if d.Role != api.RoleOperator && !api.ViewerMay(r.Method, r.URL.Path) {
			api.WriteError(w, &api.Error{Code: api.CodeForbidden, Message: fmt.Sprintf("device %q is a viewer: it may only read (an operator can make it one with `openclaw devices role %s operator`)", d.Name, d.ID)})
			return
		}
		if r.URL.Path == api.PathPairCode {
			api.WriteError(w, &api.Error{Code: api.CodeForbidden, Message: "pairing codes are made on the box itself: run `openclaw-gateway pair-code` there"})
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), deviceKey{}, d)))
	})
}

// deviceKey is the request context's key of the paired device Handler
// admitted.
type deviceKey struct{}

// caller is the paired device asking in ctx; nil on the local socket.
func caller(ctx context.Context) *api.Device {
	if d, ok := ctx.Value(deviceKey{}).(api.Device); ok {
		return &d
	}
	return nil
}

// WhoAmI is how the gateway sees the asker in ctx: a paired device over
// TLS, or the local socket.
func (s *Server) WhoAmI(ctx context.Context) api.WhoAmI {
	if d := caller(ctx); d != nil {
		return api.WhoAmI{Transport: "tls", Device: d, GatewayName: s.cfg.Name, GatewayID: s.cfg.Identity.Fingerprint.ID()}
	}
	return api.WhoAmI{Transport: "socket", GatewayName: s.cfg.Name, GatewayID: s.cfg.Identity.Fingerprint.ID()}
}

// LocalCode makes a new pairing code for the local socket (Handler refuses
// the route to devices) and logs it.
func (s *Server) LocalCode() (api.PairCode, error) {
	c, err := s.NewCode()
	if err != nil {
		return api.PairCode{}, &api.Error{Code: api.CodeInternal, Message: err.Error()}
	}
	s.cfg.Log.Info("new pairing code made on the local socket", "expires", c.ExpiresAt.Format(time.RFC3339))
	return c, nil
}

// admit returns the paired device behind fp, tracks the request's
// connection under it and refreshes lastSeen now and then.
func (s *Server) admit(r *http.Request, fp pair.Fingerprint) (api.Device, bool) {
	now := s.cfg.Now()
	s.mu.Lock()
	d, ok := s.devices[fp]
	if !ok {
		s.mu.Unlock()
		return api.Device{}, false
	}
	if c, _ := r.Context().Value(connKey{}).(net.Conn); c != nil {
		set := s.conns[fp]
		if set == nil {
			set = map[net.Conn]struct{}{}
			s.conns[fp] = set
		}
		set[c] = struct{}{}
	}
	write := now.Sub(s.seen[fp]) >= seenInterval
	if write {
		s.seen[fp] = now
		d.LastSeen = now
	}
	out := *d
	s.mu.Unlock()
	if write {
		if err := s.update(fp, func(d *api.Device) { d.LastSeen = now }); err != nil {
			s.cfg.Log.Warn("could not record when a device was last seen", "device", out.ID, "err", err)
		}
	}
	return out, true
}

// update changes one stored device record in place. Only the field a
// caller changes is written, read and written in one transaction: a copy
// taken before the lock was let go (a lastSeen write, a rename) must not
// write back an old role or name that changed meanwhile.
func (s *Server) update(fp pair.Fingerprint, change func(*api.Device)) error {
	return s.cfg.Records.UpdateRecords(func(tx engine.RecordTx) error {
		var d api.Device
		if ok, err := tx.Get(bucket, fp.String(), &d); err != nil || !ok {
			return err // revoked meanwhile: do not bring it back
		}
		change(&d)
		return tx.Put(bucket, fp.String(), d)
	})
}

func (s *Server) pairStart(w http.ResponseWriter, r *http.Request, fp pair.Fingerprint) {
	var req api.PairStart
	if !decode(w, r, &req) {
		return
	}
	b, err := pair.BindingOf(r.TLS, s.cfg.Identity.Fingerprint, false)
	if err != nil {
		api.WriteError(w, &api.Error{Code: api.CodeBadRequest, Message: err.Error()})
		return
	}
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, ss := range s.sessions {
		if now.After(ss.expires) {
			delete(s.sessions, id)
		}
	}
	c := s.code
	switch {
	case c == nil || now.After(c.expires):
		api.WriteError(w, &api.Error{Code: api.CodeNoCode, Message: "no pairing code is active on the gateway: run `openclaw-gateway pair-code` on the box for one (codes last 10 minutes and work once)"})
		return
	case c.tries >= MaxTries:
		api.WriteError(w, &api.Error{Code: api.CodePairLocked, Message: "this pairing code is locked after 5 wrong tries: make a new one with `openclaw-gateway pair-code` on the box"})
		return
	case len(s.sessions) >= maxSessions:
		api.WriteError(w, &api.Error{Code: api.CodeForbidden, Message: "too many pairings in progress; try again in a minute"})
		return
	}
	msgB, st, err := pair.Exchange(c.code, b, req.MsgA)
	c.tries++ // every exchange is one guess, until one is confirmed
	if err != nil {
		s.cfg.Log.Warn("pairing attempt with a malformed message", "remote", r.RemoteAddr, "tries", c.tries)
		api.WriteError(w, &api.Error{Code: api.CodePairFailed, Message: pair.ErrMismatch.Error()})
		return
	}
	id := randomID()
	s.sessions[id] = &session{st: st, device: fp, name: cleanName(req.Name, fp), expires: now.Add(sessionTTL)}
	w.Header().Del("Connection") // the finish comes on this connection: its TLS session is the binding
	api.WriteJSON(w, http.StatusOK, api.PairReply{Session: id, MsgB: msgB})
}

func (s *Server) pairFinish(w http.ResponseWriter, r *http.Request, fp pair.Fingerprint) {
	var req api.PairFinish
	if !decode(w, r, &req) {
		return
	}
	now := s.cfg.Now()
	s.mu.Lock()
	ss, ok := s.sessions[req.Session]
	delete(s.sessions, req.Session)
	if !ok || ss.device != fp || now.After(ss.expires) || s.code == nil {
		s.mu.Unlock()
		api.WriteError(w, &api.Error{Code: api.CodePairFailed, Message: "no such pairing in progress (it lasts 30 seconds): run `openclaw pair` again"})
		return
	}
	confirm, err := ss.st.Check(req.Confirm)
	if err != nil {
		left := MaxTries - s.code.tries
		s.mu.Unlock()
		s.cfg.Log.Warn("pairing failed: wrong code or a relay in the middle", "remote", r.RemoteAddr, "tries_left", left)
		api.WriteError(w, &api.Error{Code: api.CodePairFailed, Message: fmt.Sprintf("%v (%d tries left on this code)", pair.ErrMismatch, max(left, 0))})
		return
	}
	s.code = nil // single use
	clear(s.sessions)
	d := api.Device{ID: fp.ID(), Name: ss.name, Fingerprint: fp.String(), Role: api.RoleOperator, CreatedAt: now, LastSeen: now}
	if old, ok := s.devices[fp]; ok {
		d.CreatedAt, d.Role = old.CreatedAt, old.Role
	}
	s.mu.Unlock()
	// Write before we tell the device it is paired.
	err = s.cfg.Records.UpdateRecords(func(tx engine.RecordTx) error { return tx.Put(bucket, fp.String(), d) })
	if err != nil {
		api.WriteError(w, &api.Error{Code: api.CodeInternal, Message: "could not record the device: " + err.Error()})
		return
	}
	s.mu.Lock()
	s.devices[fp] = &d
	s.seen[fp] = now
	s.mu.Unlock()
	s.cfg.Log.Info("device paired", "device", d.ID, "name", d.Name, "remote", r.RemoteAddr)
	api.WriteJSON(w, http.StatusOK, api.PairDone{Confirm: confirm, Device: d, GatewayName: s.cfg.Name, GatewayID: s.cfg.Identity.Fingerprint.ID()})
}

// find resolves a device reference: its id (with or without dashes, any
// case), a unique prefix of it, its fingerprint, or its exact name.
func (s *Server) find(ref string) (pair.Fingerprint, *api.Device, error) {
	norm := func(x string) string { return strings.ToUpper(strings.ReplaceAll(x, "-", "")) }
	want := norm(strings.TrimSpace(ref))
	if want == "" {
		return pair.Fingerprint{}, nil, &api.Error{Code: api.CodeBadRequest, Message: "name a device by its id or name (see `openclaw devices list`)"}
	}
	var hits []pair.Fingerprint
	for fp, d := range s.devices {
		if norm(d.ID) == want || strings.EqualFold(fp.String(), ref) || d.Name == ref || (len(want) >= 4 && strings.HasPrefix(norm(d.ID), want)) {
			hits = append(hits, fp)
		}
	}
	switch len(hits) {
	case 0:
		return pair.Fingerprint{}, nil, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no paired device %q (see `openclaw devices list`)", ref)}
	case 1:
		return hits[0], s.devices[hits[0]], nil
	}
	return pair.Fingerprint{}, nil, &api.Error{Code: api.CodeBadRequest, Message: fmt.Sprintf("%q matches %d devices: give more of the id", ref, len(hits))}
}

// Revoke forgets a device and closes its connections: it is refused from
// this moment on.
func (s *Server) Revoke(ref string) (api.Device, error) {
	s.mu.Lock()
	fp, d, err := s.find(ref)
	var out api.Device
	if err == nil {
		out = *d
	}
	s.mu.Unlock()
	if err != nil {
		return api.Device{}, err
	}
	if err := s.cfg.Records.UpdateRecords(func(tx engine.RecordTx) error { return tx.Delete(bucket, fp.String()) }); err != nil {
		return api.Device{}, fmt.Errorf("revoke %s: %w", out.ID, err)
	}
	s.mu.Lock()
	if cur, ok := s.devices[fp]; ok { // else a revocation at the same time was first
		out = *cur
	}
	delete(s.devices, fp)
	delete(s.seen, fp)
	conns := s.conns[fp]
	delete(s.conns, fp)
	s.mu.Unlock()
	for c := range conns {
		_ = c.Close() // already closing is fine: either way it is gone
	}
	s.cfg.Log.Info("device revoked", "device", out.ID, "name", out.Name, "connections_closed", len(conns))
	return out, nil
}

// Rename gives a device a new name.
func (s *Server) Rename(ref, name string) (api.Device, error) {
	if strings.TrimSpace(name) == "" {
		return api.Device{}, &api.Error{Code: api.CodeBadRequest, Message: "the new name is empty"}
	}
	return s.change(ref, "rename", func(fp pair.Fingerprint, d *api.Device) { d.Name = cleanName(name, fp) })
}

// SetRole sets a device's role (operator or viewer), as the local socket
// does: the box itself is always an operator, so demoting the last
// operator device locks nobody out.
func (s *Server) SetRole(ref, role string) (api.Device, error) { return s.setRole(ref, role, nil) }

// SetRoleFor is SetRole asked by the device in ctx (Handler's; none: the
// local socket).
func (s *Server) SetRoleFor(ctx context.Context, ref, role string) (api.Device, error) {
	return s.setRole(ref, role, caller(ctx))
}

// setRole is SetRole asked by caller (nil: the local socket). A device
// never changes its own role: a viewer cannot make itself an operator
// (it cannot reach this route at all: api.Routes), and an operator
// demoting itself by mistake would need the box to undo it.
func (s *Server) setRole(ref, role string, caller *api.Device) (api.Device, error) {
	if role != api.RoleOperator && role != api.RoleViewer {
		return api.Device{}, &api.Error{Code: api.CodeBadRequest, Message: fmt.Sprintf("role %q: want operator or viewer", api.EscapeControl(role))}
	}
	if caller != nil {
		s.mu.Lock()
		fp, _, err := s.find(ref)
		s.mu.Unlock()
		if err == nil && fp.String() == caller.Fingerprint {
			return api.Device{}, &api.Error{Code: api.CodeForbidden, Message: fmt.Sprintf("device %q cannot change its own role: ask another operator, or run `openclaw devices role %s %s` on the box", caller.Name, caller.ID, role)}
		}
	}
	d, err := s.change(ref, "set the role of", func(_ pair.Fingerprint, d *api.Device) { d.Role = role })
	if err != nil {
		return api.Device{}, err
	}
	s.cfg.Log.Info("device role changed", "device", d.ID, "name", d.Name, "role", role, "by", callerName(caller))
	return d, nil
}

// callerName names who asked, for the log.
func callerName(caller *api.Device) string {
	if caller == nil {
		return "local socket"
	}
	return "device " + caller.ID
}

// change applies fn to the device ref names: in the store first (one
// transaction, only that field: see update), then in memory. It returns
// the device as changed.
func (s *Server) change(ref, what string, fn func(pair.Fingerprint, *api.Device)) (api.Device, error) {
	s.mu.Lock()
	fp, d, err := s.find(ref)
	var nd api.Device
	if err == nil {
		nd = *d
		fn(fp, &nd)
	}
	s.mu.Unlock()
	if err != nil {
		return api.Device{}, err
	}
	if err := s.update(fp, func(d *api.Device) { fn(fp, d) }); err != nil {
		return api.Device{}, fmt.Errorf("%s %s: %w", what, nd.ID, err)
	}
	s.mu.Lock()
	if cur, ok := s.devices[fp]; ok {
		fn(fp, cur)
	}
	s.mu.Unlock()
	return nd, nil
}

// cleanName keeps a device's name printable and short; empty becomes
// "device-<id prefix>".
func cleanName(name string, fp pair.Fingerprint) string {
	n := strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return -1
	}, strings.TrimSpace(name))
	if r := []rune(n); len(r) > maxNameLen {
		n = string(r[:maxNameLen])
	}
	if n == "" {
		n = "device-" + fp.ID()[:4]
	}
	return n
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if r.Method != http.MethodPost {
		api.WriteError(w, &api.Error{Code: api.CodeBadRequest, Message: "POST " + r.URL.Path})
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		api.WriteError(w, &api.Error{Code: api.CodeBadRequest, Message: "request body: " + err.Error()})
		return false
	}
	return true
}

func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go ≥ 1.24)
	return hex.EncodeToString(b)
}
