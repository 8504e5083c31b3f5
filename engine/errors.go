package engine

import (
	"context"
	"errors"
	"net"
)

var errCanceled = context.Canceled

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
