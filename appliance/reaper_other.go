//go:build !linux

package main

import (
	"errors"
	"log/slog"
)

// becomeSubreaper: only Linux has child subreapers; elsewhere the control
// socket checks the peer's uid only (peer_darwin.go, peer_other.go).
func becomeSubreaper(*slog.Logger) error {
	return errors.New("child subreapers are Linux only")
}
