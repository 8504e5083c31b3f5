package mdns

import (
	"net"
	"strings"
	"testing"

	"github.com/brutella/dnssd"
)

// Anyone on the LAN answers mDNS, and `openclaw pair` prints what it
// found: escape sequences and newlines must not reach the terminal, and
// sizes are bounded.
func TestGatewayOfUntrustedAnswer(t *testing.T) {
	var ips []net.IP
	for i := range 100 {
		ips = append(ips, net.IPv4(192, 168, 1, byte(i)))
	}
	g, ok := gatewayOf(dnssd.BrowseEntry{
		Name: "box\x1b]52;c;ZXZpbA==\x07\x1b[2J\nfake line" + strings.Repeat("x", 1000),
		Host: "h\x1b[1A.local.", Port: 18789, IPs: ips,
		Text: map[string]string{"id": "ABCD\x1b[31m", "api": "v1\r"},
	})
	if !ok {
		t.Fatal("answer dropped")
	}
	for _, s := range []string{g.Name, g.Host, g.ID, g.API} {
		if strings.ContainsAny(s, "\x1b\x07\n\r") || len([]rune(s)) > maxField {
			t.Errorf("field %q reaches the terminal", s)
		}
	}
	if len(g.Addrs) > maxAddrs {
		t.Errorf("%d addresses kept", len(g.Addrs))
	}
	if _, ok := gatewayOf(dnssd.BrowseEntry{Name: "\x1b", Port: 1, IPs: ips[:1]}); ok {
		t.Error("an answer with no printable name was kept")
	}
}
