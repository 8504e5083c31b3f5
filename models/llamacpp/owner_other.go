//go:build !unix

package llamacpp

import "io/fs"

// ownedSafely: no owner check outside Unix.
func ownedSafely(fs.FileInfo) error { return nil }
