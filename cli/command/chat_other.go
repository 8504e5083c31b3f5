//go:build !unix

package command

import (
	"io"
	"os"
)

const oNoFollow = 0 // the Lstat check before opening stands alone here

// openKeyboard: here readline reads the terminal itself, and keys typed
// during a turn are not read then (Ctrl-C still stops it, as SIGINT).
func openKeyboard(*os.File, io.Writer, func()) (*keyboard, error) { return nil, nil }

// termWidth is not needed without a keyboard.
func termWidth(io.Writer) int { return 80 }
