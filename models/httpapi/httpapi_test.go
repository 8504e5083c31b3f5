package httpapi

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/openclaw-edge/edge/engine"
)

func TestNetKind(t *testing.T) {
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	tests := []struct {
		ctx  context.Context
		err  error
		want engine.ErrorKind
	}{
		{ctx, &net.DNSError{Err: "no such host", Name: "api.anthropic.com", IsNotFound: true}, engine.ErrUnreachable},
		{ctx, &net.DNSError{Err: "i/o timeout", Name: "api.example", IsTimeout: true}, engine.ErrUnreachable},
		{ctx, &net.OpError{Op: "dial", Err: errors.New("connection refused")}, engine.ErrUnreachable},
		{ctx, &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}, engine.ErrUnreachable},
		{ctx, &net.OpError{Op: "dial", Err: timeoutErr{}}, engine.ErrTimeout},
		{ctx, timeoutErr{}, engine.ErrTimeout},
		{cancelled, context.Canceled, engine.ErrAborted},
	}
	for _, tt := range tests {
		if got, _ := NetKind(tt.ctx, tt.err); got != tt.want {
			t.Errorf("NetKind(%v) = %s, want %s", tt.err, got, tt.want)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "dial tcp: i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }
