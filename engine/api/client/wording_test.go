package client_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/pair"
)

// TestErrorsSayItOnce: an error names the socket, the request and the
// cause once each (no "GET /v1/status: …: Get "http://openclaw/v1/status"",
// no "at ADDR … (dial tcp ADDR: …)"), and still unwraps to its kind.
func TestErrorsSayItOnce(t *testing.T) {
	// A gateway that hangs up on every request.
	sock := filepath.Join(shortDir(t), "gw.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, err = client.New(sock).Status(context.Background())
	if !errors.Is(err, client.ErrConnectionLost) || strings.Contains(err.Error(), "http://openclaw") || strings.Count(err.Error(), "/v1/status") != 1 {
		t.Errorf("connection lost: %v", err)
	}

	// A paired gateway that is not listening.
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := dead.Addr().String()
	dead.Close()
	_, err = client.NewTLS(addr, tls.Certificate{}, pair.Fingerprint{}).Status(context.Background())
	if !errors.Is(err, client.ErrGatewayDown) || strings.Count(err.Error(), addr) != 1 || !strings.HasSuffix(err.Error(), "(connection refused)") {
		t.Errorf("remote down: %v", err)
	}
}
