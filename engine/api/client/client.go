// Package client is the Go client of the gateway's control API (engine/api):
// HTTP/1.1 over the gateway's Unix socket. The openclaw CLI is its main user;
// it links only this package, the wire types and the engine vocabulary.
//
// Choices where the spec was silent:
//   - Every request goes to the host "openclaw"; the transport ignores it and
//     dials the socket. Proxy settings from the environment are never used.
//   - A socket that is missing, not a socket, or refusing connections wraps
//     ErrGatewayDown with a message that says how to start the gateway; a
//     socket we may not open says so (permission), anything else is reported
//     as it is.
//   - Client methods return *api.Error unwrapped for gateway-reported
//     failures, so callers can errors.As on the stable Code and print Message
//     as it is (it is written to be shown to a user).
//   - The message stream is read as Server-Sent Events with "\n" or "\r\n"
//     line endings (the gateway writes "\n"); one event may be at most
//     MaxEventBytes. A done event without a result is a protocol error.
//   - There is no overall request timeout: a turn may run for minutes. Use
//     the context to bound or cancel a call.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/openclaw-edge/edge/engine/api"
)

// ErrGatewayDown is wrapped by every error that means nothing answers on the
// socket: it is missing or refuses connections.
var ErrGatewayDown = errors.New("cannot reach the gateway")

// ErrStreamEnded is returned by Send when the gateway closed the event
// stream before a done or error event.
var ErrStreamEnded = errors.New("gateway closed the stream early")

// ErrConnectionLost is wrapped by errors that mean the connection to the
// gateway broke after it was made (the gateway stopped mid-request).
var ErrConnectionLost = errors.New("connection to the gateway lost")

// DefaultSocket returns the socket the CLI talks to when none is given:
// $OPENCLAW_SOCKET, else $OPENCLAW_STATE_DIR/gateway.sock, else
// ~/.openclaw-edge/gateway.sock (".openclaw-edge/gateway.sock" when there is
// no home directory). ".openclaw-edge" is config.DefaultStateDirName, the
// gateway's default state dir (not imported: this package stays small).
func DefaultSocket() string {
	if s := os.Getenv("OPENCLAW_SOCKET"); s != "" {
		return s
	}
	if d := os.Getenv("OPENCLAW_STATE_DIR"); d != "" {
		return filepath.Join(d, "gateway.sock")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = ""
	}
	return filepath.Join(home, ".openclaw-edge", "gateway.sock")
}

// Client talks to one gateway over its Unix socket. It is safe for
// concurrent use; Send may run while other calls (an /approve) are made.
type Client struct {
	socket string // the Unix socket, or host:port for a remote gateway
	remote bool   // over TLS (NewTLS)
	// maxReply bounds a JSON reply (0: unbounded); set while pairing, when
	// the other end is not authenticated yet.
	maxReply int64
	http     *http.Client
}

// New returns a client for the gateway listening on socket. It does not
// connect until the first call.
func New(socket string) *Client {
	tr := &http.Transport{
		Proxy: nil, // a Unix socket is never proxied
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "unix", socket)
			if err != nil {
				return nil, &dialError{socket: socket, err: err}
			}
			return conn, nil
		},
		MaxIdleConns: 4,
	}
	return &Client{socket: socket, http: &http.Client{Transport: tr}}
}

// Socket returns the socket path the client dials.
func (c *Client) Socket() string { return c.socket }

// dialError marks a failure to connect, so do can tell it from a failure
// after the request was sent.
type dialError struct {
	socket string
	remote bool
	err    error
}

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// downError is what a caller sees when the gateway is not running.
type downError struct {
	socket string
	remote bool
	err    error // the dial error, for %+v and errors.Is
}

func (e *downError) Error() string {
	if e.remote {
		return fmt.Sprintf("%v at %s: is it running, with gateway.bind set to \"lan\" (or this address), and is the address right? (%v)", ErrGatewayDown, e.socket, cause(e.err))
	}
	return fmt.Sprintf("%v at %s: is it running? Start it with `openclaw-gateway run` (or `make run`)", ErrGatewayDown, e.socket)
}

func (e *downError) Unwrap() []error { return []error{ErrGatewayDown, e.err} }

// quietError says msg and unwraps to err, whose own text would repeat
// what msg says (the socket, "permission denied").
type quietError struct {
	msg string
	err error
}

func (e *quietError) Error() string { return e.msg }
func (e *quietError) Unwrap() error { return e.err }

// cause is err without the wrappers that repeat what the message around
// it names: *net.OpError's "dial tcp ADDR: " and *os.SyscallError's
// "connect: ".
func cause(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		err = op.Err
	}
	var se *os.SyscallError
	if errors.As(err, &se) && se.Err != nil {
		err = se.Err
	}
	return err
}

// connectError classifies a dial failure.
func connectError(de *dialError) error {
	if de.remote {
		return remoteConnectError(de)
	}
	switch {
	case errors.Is(de.err, syscall.ENOENT), errors.Is(de.err, syscall.ECONNREFUSED),
		errors.Is(de.err, syscall.ENOTSOCK), errors.Is(de.err, syscall.ENOTDIR):
		return &downError{socket: de.socket, err: de.err}
	case errors.Is(de.err, syscall.EACCES), errors.Is(de.err, syscall.EPERM):
		return &quietError{msg: fmt.Sprintf("permission denied on the gateway socket %s: run as the gateway's user or a member of its group", de.socket), err: de.err}
	}
	return &quietError{msg: fmt.Sprintf("connect to the gateway at %s: %v", de.socket, cause(de.err)), err: de.err}
}

// do sends a request and returns the response when it is 2xx; otherwise the
// gateway's *api.Error.
// postStream POSTs v as JSON to path and returns the reply, which must be
// an event stream.
func (c *Client) postStream(ctx context.Context, path string, v any) (*http.Response, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode request to %s: %w", path, err)
	}
	resp, err := c.do(ctx, http.MethodPost, path, nil, bytes.NewReader(body), "application/json")
	if err != nil {
		return nil, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		resp.Body.Close()
		return nil, fmt.Errorf("gateway answered %s with %q, want text/event-stream", path, resp.Header.Get("Content-Type"))
	}
	return resp, nil
}

func (c *Client) do(ctx context.Context, method, path string, query url.Values, body io.Reader, contentType string) (*http.Response, error) {
	u := "http://openclaw" + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, fmt.Errorf("build %s %s: %w", method, path, err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var de *dialError
		if errors.As(err, &de) {
			return nil, connectError(de)
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		var ue *url.Error // "Get "http://openclaw/v1/…": …" would repeat the request
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%s %s: %w: %w", method, path, ErrConnectionLost, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, readError(resp)
	}
	return resp, nil
}

// maxErrorBody bounds how much of an error reply is read.
const maxErrorBody = 1 << 20

// readError turns a non-2xx reply into an *api.Error: the JSON body when it
// is one, else the status text.
func readError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var e api.Error
	if json.Unmarshal(body, &e) == nil && e.Message != "" {
		if e.Code == "" {
			e.Code = codeForStatus(resp.StatusCode)
		}
		return &e
	}
	msg := fmt.Sprintf("gateway answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	if t := strings.TrimSpace(string(body)); t != "" && len(t) < 200 && !bytes.ContainsAny(body, "\x00") {
		msg += ": " + t
	}
	return &api.Error{Code: codeForStatus(resp.StatusCode), Message: msg}
}

func codeForStatus(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusRequestEntityTooLarge:
		return api.CodeBadRequest
	case http.StatusNotFound:
		return api.CodeNotFound
	case http.StatusForbidden, http.StatusUnauthorized:
		return api.CodeForbidden
	}
	return api.CodeInternal
}

// callJSON sends a request and decodes its JSON reply into v.
func (c *Client) callJSON(ctx context.Context, method, path string, query url.Values, body io.Reader, contentType string, v any) error {
	resp, err := c.do(ctx, method, path, query, body, contentType)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var reply io.Reader = resp.Body
	if c.maxReply > 0 {
		reply = io.LimitReader(resp.Body, c.maxReply)
	}
	if err := json.NewDecoder(reply).Decode(v); err != nil {
		return fmt.Errorf("decode the gateway's reply to %s %s: %w", method, path, err)
	}
	return nil
}

func keyQuery(key string) url.Values { return url.Values{"key": {key}} }

// Status returns the gateway's health and identity.
func (c *Client) Status(ctx context.Context) (*api.Status, error) {
	var s api.Status
	if err := c.callJSON(ctx, http.MethodGet, api.PathStatus, nil, nil, "", &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// Sessions lists the sessions of agentID, or of every agent when it is "".
func (c *Client) Sessions(ctx context.Context, agentID string) ([]api.SessionInfo, error) {
	var q url.Values
	if agentID != "" {
		q = url.Values{"agent": {agentID}}
	}
	var list []api.SessionInfo
	if err := c.callJSON(ctx, http.MethodGet, api.PathSessions, q, nil, "", &list); err != nil {
		return nil, err
	}
	return list, nil
}

// History returns the current transcript of the session key.
func (c *Client) History(ctx context.Context, key string) (*api.History, error) {
	var h api.History
	if err := c.callJSON(ctx, http.MethodGet, api.PathSessionHistory, keyQuery(key), nil, "", &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// Reset starts a new session under key and returns it.
func (c *Client) Reset(ctx context.Context, key string) (*api.SessionInfo, error) {
	var s api.SessionInfo
	if err := c.callJSON(ctx, http.MethodPost, api.PathSessionReset, keyQuery(key), nil, "", &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// Delete removes the session under key and its current transcript, and
// returns the session as it was. The gateway waits for a running turn of
// the session to end first.
func (c *Client) Delete(ctx context.Context, key string) (*api.SessionInfo, error) {
	var s api.SessionInfo
	if err := c.callJSON(ctx, http.MethodPost, api.PathSessionDelete, keyQuery(key), nil, "", &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// Export writes the session's transcript as OpenClaw JSONL to w.
func (c *Client) Export(ctx context.Context, key string, w io.Writer) error {
	resp, err := c.do(ctx, http.MethodGet, api.PathSessionExport, keyQuery(key), nil, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("export %s: %w", key, err)
	}
	return nil
}

// Import streams an OpenClaw JSONL transcript from r (never held in
// memory whole) as the session key. With an empty key the gateway picks
// agent:<default agent>:import-<first 8 of the session id>; the result
// names the key, and RenamedFrom says when the session id was taken.
func (c *Client) Import(ctx context.Context, key string, r io.Reader) (*api.ImportResult, error) {
	var q url.Values
	if key != "" {
		q = keyQuery(key)
	}
	var res api.ImportResult
	if err := c.callJSON(ctx, http.MethodPost, api.PathSessionImport, q, r, "application/x-ndjson", &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Send runs one message through the gateway and follows its event stream:
// on (if not nil) gets every event in order, including the last. Send
// returns the done event's Result, the error event's *api.Error, or
// ErrStreamEnded when the stream stops before either.
func (c *Client) Send(ctx context.Context, req api.SendRequest, on func(api.Event)) (*api.Result, error) {
	resp, err := c.postStream(ctx, api.PathMessages, req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	res, err := ReadStream(resp.Body, on)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return res, err
}
