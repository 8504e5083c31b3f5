// Package mdns announces a gateway's LAN API over multicast DNS and finds
// gateways on the LAN (docs/design.md §9), wrapping github.com/brutella/dnssd.
// The gateway announces; `openclaw pair` browses.
//
// The service type is OpenClaw's, _openclaw-gw._tcp; the instance name is
// the box's name; TXT holds hints only (a prefix of the gateway's device
// id, the API version, the port) — never a secret: the pairing code and
// keys are checked by the PAKE, not by anything mDNS says.
//
// mDNS is best effort: a responder that fails is logged and started again
// with backoff, never fatal (it crashed OpenClaw gateways on Raspberry Pis).
// dnssd follows address changes itself (netlink on Linux) and announces
// again on every interface that gains one.
package mdns

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/brutella/dnssd"
	dnssdlog "github.com/brutella/dnssd/log"
)

// ServiceType is OpenClaw's mDNS service type for gateways.
const ServiceType = "_openclaw-gw._tcp"

// APIVersion is announced in TXT "api".
const APIVersion = "v1"

func init() {
	// dnssd logs to stdout by default; the gateway logs through slog.
	dnssdlog.Info.Disable()
}

// Announcement is what the gateway says about itself.
type Announcement struct {
	Name   string   // instance name: the box's name
	Port   int      // the TLS API's port
	ID     string   // the gateway's device id (only a prefix is sent)
	Ifaces []string // announce only on these; nil: every multicast interface
}

// Text is the TXT record of a: device-id prefix, API version, port.
func (a Announcement) Text() map[string]string {
	id := a.ID
	if len(id) > 9 {
		id = id[:9] // XXXX-XXXX: enough to tell boxes apart, checked again by pairing
	}
	return map[string]string{"id": id, "api": APIVersion, "port": strconv.Itoa(a.Port)}
}

// Announce answers mDNS queries for a until ctx ends, restarting the
// responder with backoff (1 s doubling to 5 min) when it fails.
func Announce(ctx context.Context, a Announcement, log *slog.Logger) {
	backoff := time.Second
	for ctx.Err() == nil {
		start := time.Now()
		err := announceOnce(ctx, a)
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > 5*time.Minute {
			backoff = time.Second
		}
		log.Warn("mDNS announcement failed; the gateway still answers on its address, and mDNS retries", "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Minute)
	}
}

func announceOnce(ctx context.Context, a Announcement) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("mDNS responder panicked: %v", r)
		}
	}()
	sv, err := dnssd.NewService(dnssd.Config{Name: a.Name, Type: ServiceType, Port: a.Port, Text: a.Text(), Ifaces: a.Ifaces})
	if err != nil {
		return fmt.Errorf("mDNS service: %w", err)
	}
	rp, err := dnssd.NewResponder()
	if err != nil {
		return fmt.Errorf("mDNS responder: %w", err)
	}
	if _, err := rp.Add(sv); err != nil {
		return fmt.Errorf("mDNS responder: %w", err)
	}
	err = rp.Respond(ctx)
	if ctx.Err() != nil {
		return nil
	}
	if err == nil {
		err = fmt.Errorf("mDNS responder stopped")
	}
	return err
}

// Gateway is a gateway found on the LAN.
type Gateway struct {
	Name  string   `json:"name"`
	Host  string   `json:"host"`
	Addrs []string `json:"addrs"` // host:port, IPv4 first
	ID    string   `json:"id"`    // device-id prefix from TXT (a hint)
	API   string   `json:"api"`
}

// Browse looks for gateways for d and returns what it found, sorted by
// name. Instances without an address are left out.
func Browse(ctx context.Context, d time.Duration) ([]Gateway, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var mu sync.Mutex
	found := map[string]Gateway{}
	add := func(e dnssd.BrowseEntry) {
		g, ok := gatewayOf(e)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if old, ok := found[g.Name]; ok {
			for _, a := range g.Addrs {
				if !slices.Contains(old.Addrs, a) && len(old.Addrs) < maxAddrs {
					old.Addrs = append(old.Addrs, a)
				}
			}
			g.Addrs = old.Addrs
		} else if len(found) >= maxFound {
			return
		}
		found[g.Name] = g
	}
	err := dnssd.LookupType(ctx, ServiceType+".local.", add, func(dnssd.BrowseEntry) {})
	if err != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("browse mDNS for %s: %w", ServiceType, err)
	}
	mu.Lock()
	defer mu.Unlock()
	out := make([]Gateway, 0, len(found))
	for _, g := range found {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b Gateway) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Bounds on what Browse keeps of answers: anyone on the LAN can send them.
const (
	maxFound = 32 // gateways
	maxAddrs = 8  // addresses of one gateway
	maxField = 64 // characters of a name, host, id or api version
)

// gatewayOf reads a browse answer. Its strings are untrusted (any host on
// the LAN answers mDNS) and end up on a terminal: control characters are
// dropped, lengths bounded. Nothing here is trusted for security: pairing
// checks the gateway's key by the PAKE, not by its name.
func gatewayOf(e dnssd.BrowseEntry) (Gateway, bool) {
	g := Gateway{Name: printable(e.Name), Host: printable(e.Host), ID: printable(e.Text["id"]), API: printable(e.Text["api"])}
	if g.Name == "" || e.Port <= 0 || e.Port > 65535 {
		return g, false
	}
	ips := slices.Clone(e.IPs)
	slices.SortStableFunc(ips, func(a, b net.IP) int {
		a4, b4 := a.To4() != nil, b.To4() != nil
		switch {
		case a4 && !b4:
			return -1
		case b4 && !a4:
			return 1
		}
		return 0
	})
	for _, ip := range ips {
		if len(g.Addrs) >= maxAddrs {
			break
		}
		if ip.IsLinkLocalUnicast() && ip.To4() == nil {
			if e.IfaceName == "" {
				continue
			}
			g.Addrs = append(g.Addrs, net.JoinHostPort(ip.String()+"%"+e.IfaceName, strconv.Itoa(e.Port)))
			continue
		}
		g.Addrs = append(g.Addrs, net.JoinHostPort(ip.String(), strconv.Itoa(e.Port)))
	}
	return g, len(g.Addrs) > 0
}

// printable drops what is not printable (escape sequences, newlines) and
// keeps at most maxField characters.
func printable(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return -1
	}, s)
	if r := []rune(s); len(r) > maxField {
		s = string(r[:maxField])
	}
	return s
}
