//go:build unix

package config

import "golang.org/x/sys/unix"

// writable reports (as nil) whether this process may create entries in dir:
// access(2) with W_OK, which also sees a read-only mount.
func writable(dir string) error { return unix.Access(dir, unix.W_OK) }
