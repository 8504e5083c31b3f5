package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/pair"
)

// ErrKeyChanged is wrapped when a remote gateway shows a key other than the
// one pinned at pairing.
var ErrKeyChanged = errors.New("the gateway's key is not the one paired with")

// NewTLS returns a client for a paired gateway at addr (host:port): mutual
// TLS with the device's own identity, and the gateway's key pinned. No CA
// and no host name are involved; the pin is the whole check.
func NewTLS(addr string, id tls.Certificate, pin pair.Fingerprint) *Client {
	cfg := tlsConfig(id, func(fp pair.Fingerprint) error {
		if fp != pin {
			return fmt.Errorf("%w: it shows %s, paired with %s. Someone may be in the middle; if the box was reset, pair it again with `openclaw pair`", ErrKeyChanged, fp.ID(), pin.ID())
		}
		return nil
	})
	tr := &http.Transport{
		Proxy: nil, // a paired LAN gateway is never reached through a proxy
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialTLS(ctx, addr, cfg)
		},
		// DialTLSContext is not used: the transport speaks plain HTTP/1.1
		// over the conn DialContext returns, already TLS.
		MaxIdleConns: 4,
	}
	return &Client{socket: addr, remote: true, http: &http.Client{Transport: tr}}
}

// Remote says whether the client talks to a gateway over TLS.
func (c *Client) Remote() bool { return c.remote }

func tlsConfig(id tls.Certificate, check func(pair.Fingerprint) error) *tls.Config {
	return &tls.Config{
		Certificates:       []tls.Certificate{id},
		MinVersion:         tls.VersionTLS13,
		InsecureSkipVerify: true, // self-signed on purpose: VerifyConnection checks the pinned key
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the gateway sent no certificate")
			}
			return check(pair.Of(cs.PeerCertificates[0]))
		},
	}
}

func dialTLS(ctx context.Context, addr string, cfg *tls.Config) (*tls.Conn, error) {
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}, Config: cfg}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, &dialError{socket: addr, remote: true, err: err}
	}
	return c.(*tls.Conn), nil
}

func remoteConnectError(de *dialError) error {
	switch {
	case errors.Is(de.err, ErrKeyChanged):
		return fmt.Errorf("gateway at %s: %w", de.socket, de.err)
	case errors.Is(de.err, syscall.ECONNREFUSED), errors.Is(de.err, syscall.EHOSTUNREACH),
		errors.Is(de.err, syscall.ENETUNREACH), errors.Is(de.err, syscall.ETIMEDOUT):
		return &downError{socket: de.socket, remote: true, err: de.err}
	}
	var ne net.Error
	if errors.As(de.err, &ne) && ne.Timeout() {
		return &downError{socket: de.socket, remote: true, err: de.err}
	}
	return fmt.Errorf("connect to the gateway at %s: %w", de.socket, de.err)
}

// Paired is the result of a successful pairing: what the device keeps.
type Paired struct {
	Addr        string
	Fingerprint pair.Fingerprint // the gateway's key, to pin
	Done        api.PairDone
}

// Pair pairs this device (identity id) with the gateway at addr using the
// code shown on the box. The gateway's key is learned from this connection
// and proven by the exchange: a relay in the middle makes it fail.
func Pair(ctx context.Context, addr string, id tls.Certificate, code, name string) (*Paired, error) {
	code, err := pair.NormalizeCode(code)
	if err != nil {
		return nil, &api.Error{Code: api.CodeBadRequest, Message: err.Error()}
	}
	self := pair.Of(id.Leaf)
	conn, err := dialTLS(ctx, addr, tlsConfig(id, func(pair.Fingerprint) error { return nil }))
	if err != nil {
		var de *dialError
		if errors.As(err, &de) {
			return nil, connectError(de)
		}
		return nil, err
	}
	defer conn.Close()
	cs := conn.ConnectionState()
	b, err := pair.BindingOf(&cs, self, true)
	if err != nil {
		return nil, err
	}
	// One connection for both requests: the binding is this TLS session.
	tr := &http.Transport{
		Proxy:             nil,
		DisableKeepAlives: false,
		DialContext: func(context.Context, string, string) (net.Conn, error) {
			if conn == nil {
				return nil, errors.New("the pairing connection closed")
			}
			c := conn
			conn = nil
			return c, nil
		},
	}
	defer tr.CloseIdleConnections()
	cl := &Client{socket: addr, remote: true, http: &http.Client{Transport: tr}, maxReply: 64 << 10}
	msgA, st, err := pair.Start(code, b)
	if err != nil {
		return nil, err
	}
	var reply api.PairReply
	if err := cl.postJSON(ctx, api.PathPairStart, api.PairStart{Name: name, MsgA: msgA}, &reply); err != nil {
		return nil, err
	}
	confirm, checkGateway, err := st.Finish(reply.MsgB)
	if err != nil {
		return nil, &api.Error{Code: api.CodePairFailed, Message: err.Error()}
	}
	var done api.PairDone
	if err := cl.postJSON(ctx, api.PathPairFinish, api.PairFinish{Session: reply.Session, Confirm: confirm}, &done); err != nil {
		return nil, err
	}
	if err := checkGateway(done.Confirm); err != nil {
		return nil, &api.Error{Code: api.CodePairFailed, Message: err.Error()}
	}
	// The gateway proved it knew the code; its name is still its own say.
	done.GatewayName = printable(done.GatewayName, 64)
	done.GatewayID = printable(done.GatewayID, 64)
	done.Device.Name = printable(done.Device.Name, 64)
	return &Paired{Addr: addr, Fingerprint: b.Gateway, Done: done}, nil
}

// printable drops control characters (terminal escapes) and cuts s to n runes.
func printable(s string, n int) string {
	r := []rune(strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return -1
	}, s))
	if len(r) > n {
		r = r[:n]
	}
	return string(r)
}

func (c *Client) postJSON(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encode request to %s: %w", path, err)
	}
	return c.callJSON(ctx, http.MethodPost, path, nil, bytes.NewReader(body), "application/json", out)
}

// WhoAmI asks how the gateway sees this client.
func (c *Client) WhoAmI(ctx context.Context) (*api.WhoAmI, error) {
	var w api.WhoAmI
	if err := c.callJSON(ctx, http.MethodGet, api.PathWhoAmI, nil, nil, "", &w); err != nil {
		return nil, err
	}
	return &w, nil
}

// PairCode asks the gateway (over its local socket) for a new pairing code.
func (c *Client) PairCode(ctx context.Context) (*api.PairCode, error) {
	var pc api.PairCode
	if err := c.callJSON(ctx, http.MethodPost, api.PathPairCode, nil, nil, "", &pc); err != nil {
		return nil, err
	}
	return &pc, nil
}

// Devices lists the paired devices.
func (c *Client) Devices(ctx context.Context) ([]api.Device, error) {
	var ds []api.Device
	if err := c.callJSON(ctx, http.MethodGet, api.PathDevices, nil, nil, "", &ds); err != nil {
		return nil, err
	}
	return ds, nil
}

// RevokeDevice revokes a paired device (by id, id prefix or name).
func (c *Client) RevokeDevice(ctx context.Context, ref string) (*api.Device, error) {
	var d api.Device
	if err := c.postJSON(ctx, api.PathDeviceRevoke, api.DeviceRef{ID: ref}, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// RenameDevice renames a paired device.
func (c *Client) RenameDevice(ctx context.Context, ref, name string) (*api.Device, error) {
	var d api.Device
	if err := c.postJSON(ctx, api.PathDeviceRename, api.DeviceRef{ID: ref, Name: name}, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// SetDeviceRole sets a paired device's role (api.RoleOperator or
// api.RoleViewer) and returns it as changed.
func (c *Client) SetDeviceRole(ctx context.Context, ref, role string) (*api.Device, error) {
	var d api.Device
	if err := c.postJSON(ctx, api.PathDeviceRole, api.DeviceRef{ID: ref, Role: role}, &d); err != nil {
		return nil, err
	}
	return &d, nil
}
