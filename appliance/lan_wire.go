package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/config"
	"github.com/openclaw-edge/edge/engine/pair"
	"github.com/openclaw-edge/edge/engine/pair/lan"
	"github.com/openclaw-edge/edge/engine/pair/mdns"
	"github.com/openclaw-edge/edge/engine/store/bolt"
)

// preseedFile is where a pairing code preseeded on the boot partition
// (openclaw-pair.txt, moved by the image's first-boot service) waits for
// the gateway; it is used once and deleted.
const preseedFile = "pair-code"

// gatewayIdentity loads (or makes, at first start) the gateway's TLS
// identity in <state>/identity.
func gatewayIdentity(stateDir string) (*pair.Identity, error) {
	return pair.LoadOrCreate(filepath.Join(stateDir, "identity"), "gateway", boxName())
}

// boxName is the name the box is shown under: its host name.
func boxName() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "openclaw"
	}
	h, _, _ = strings.Cut(h, ".")
	return h
}

// lanAPI is the running LAN side: the TLS server and what status shows.
type lanAPI struct {
	mu     sync.Mutex // guards status
	id     *pair.Identity
	srv    *lan.Server
	http   *http.Server
	status api.LANStatus
}

// newLAN loads the gateway's identity and paired devices and sets up the
// pairing code (preseeded, or a new one for a box nobody paired yet).
func newLAN(cfg *config.Config, stateDir string, db *bolt.DB, log *slog.Logger) (*lanAPI, error) {
	id, err := gatewayIdentity(stateDir)
	if err != nil {
		return nil, fmt.Errorf("gateway identity: %w", err)
	}
	srv, err := lan.New(lan.Config{Identity: id, Name: boxName(), Records: db, Log: log})
	if err != nil {
		return nil, err
	}
	l := &lanAPI{srv: srv, id: id, status: api.LANStatus{GatewayID: id.Fingerprint.ID(), Name: boxName(), Bind: cfg.Gateway.Bind}}

	// A code preseeded at flash time, else one for a box nobody paired yet.
	preseed := filepath.Join(stateDir, preseedFile)
	if data, err := os.ReadFile(preseed); err == nil {
		// Delete first: a code file that stays would come back with fresh
		// tries at every start, so one that cannot be deleted is not used.
		if err := os.Remove(preseed); err != nil {
			log.Error("the preseeded pairing code is not used: its file cannot be deleted; make a code with `openclaw-gateway pair-code`", "file", preseed, "err", err)
		} else if c, err := srv.SetCode(strings.TrimSpace(string(data))); err != nil {
			log.Error("the preseeded pairing code is not valid; make one with `openclaw-gateway pair-code`", "file", preseed, "err", err)
		} else {
			log.Info("pairing code from the boot partition is active", "expires", c.ExpiresAt.Format("15:04"))
		}
	} else if len(srv.Devices()) == 0 && cfg.Gateway.Bind != "loopback" {
		if c, err := srv.NewCode(); err == nil {
			log.Warn("no device is paired yet: pair one with `openclaw pair` and this code", "code", pair.FormatCode(c.Code), "expires", c.ExpiresAt.Format("15:04"), "gateway_id", id.Fingerprint.ID())
		}
	}

	return l, nil
}

// listen opens the TLS listener of gateway.bind/port serving h (the
// control API) to paired devices and announces the gateway over mDNS. A
// listener that cannot open is logged and shown in status, never fatal:
// the local socket still works.
func (l *lanAPI) listen(ctx context.Context, cfg *config.Config, h http.Handler, log *slog.Logger, base context.Context) {
	srv, id := l.srv, l.id
	addrs := bindAddrs(cfg.Gateway.Bind, cfg.Gateway.Port)
	l.http = apiServer(srv.Handler(h), log, base)
	l.http.ConnContext = srv.ConnContext
	l.http.ConnState = srv.ConnState
	st := l.snapshot()
	defer func() { l.mu.Lock(); l.status = st; l.mu.Unlock() }() // status is read by API requests meanwhile
	var errs []string
	for _, a := range addrs {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		st.Addrs = append(st.Addrs, ln.Addr().String())
		tl := tls.NewListener(lanListener(ln, maxConns, maxConnsPerHost), srv.TLSConfig())
		go func() { _ = l.http.Serve(tl) }() // ends with Shutdown
	}
	if len(st.Addrs) == 0 {
		st.Error = strings.Join(errs, "; ")
		log.Error("the LAN API for paired devices is not listening; the local socket still works", "bind", cfg.Gateway.Bind, "err", st.Error)
		return
	}
	log.Info("LAN API for paired devices listening", "addrs", strings.Join(st.Addrs, ","), "gateway_id", id.Fingerprint.ID())

	if cfg.Gateway.Bind != "loopback" && cfg.Discovery.MDNSEnabled() {
		_, port, _ := net.SplitHostPort(st.Addrs[0])
		p, _ := strconv.Atoi(port)
		a := mdns.Announcement{Name: boxName(), Port: p, ID: id.Fingerprint.ID()}
		if ip := net.ParseIP(cfg.Gateway.Bind); ip != nil {
			if ifc := ifaceOf(ip); ifc != "" {
				a.Ifaces = []string{ifc}
			}
		}
		st.MDNS = true
		go mdns.Announce(ctx, a, log)
	}
}

// bindAddrs are the listen addresses of gateway.bind: loopback →
// 127.0.0.1 (and ::1 when the box has IPv6), lan → every address, or the
// one address given.
func bindAddrs(bind string, port int) []string {
	p := strconv.Itoa(port)
	switch bind {
	case "loopback":
		out := []string{net.JoinHostPort("127.0.0.1", p)}
		if port != 0 && hasIPv6Loopback() {
			out = append(out, net.JoinHostPort("::1", p))
		}
		return out
	case "lan":
		return []string{net.JoinHostPort("", p)}
	}
	return []string{net.JoinHostPort(bind, p)}
}

func hasIPv6Loopback() bool {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// ifaceOf names the interface that has ip.
func ifaceOf(ip net.IP) string {
	ifs, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return ifc.Name
			}
		}
	}
	return ""
}

// snapshot is a copy of the LAN status.
func (l *lanAPI) snapshot() api.LANStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.status
	s.Addrs = slices.Clone(s.Addrs)
	return s
}

// Status fills st.LAN.
func (l *lanAPI) Status(st *api.Status) {
	s := l.snapshot()
	s.Devices = len(l.srv.Devices())
	st.LAN = &s
}

// shutdown stops the TLS server.
func (l *lanAPI) shutdown(ctx context.Context) error {
	if l == nil || l.http == nil {
		return nil
	}
	if err := l.http.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
