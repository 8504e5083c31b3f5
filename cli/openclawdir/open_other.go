//go:build !unix

package openclawdir

import "io/fs"

// openNonblock: no FIFOs to guard against here.
const openNonblock = 0

// ownedByMe cannot tell without Unix owners, so stale copies are left to
// the system's temp cleaning.
func ownedByMe(fs.FileInfo) bool { return false }
