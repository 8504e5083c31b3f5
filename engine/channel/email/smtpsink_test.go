package email

import (
	"crypto/tls"
	"testing"

	"github.com/openclaw-edge/edge/engine/channel/email/emailtest"
)

// sink is emailtest's SMTP sink on loopback, which records what it is
// sent.
type sink struct {
	*emailtest.Sink
	addr string
	port int
}

type sunk struct {
	from string
	to   []string
	data string
}

func startSink(t testing.TB, tlsCfg *tls.Config) *sink {
	t.Helper()
	s := emailtest.StartSink(t, tlsCfg)
	return &sink{Sink: s, addr: s.Addr, port: s.Port}
}

func (s *sink) messages() []sunk {
	var out []sunk
	for _, m := range s.Messages() {
		out = append(out, sunk{from: m.From, to: m.To, data: m.Data})
	}
	return out
}
