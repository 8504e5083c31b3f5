//go:build !unix

package command

import (
	"context"
	"os"
)

const oNoFollow = 0 // the Lstat check before opening stands alone here

// pollLines: no reading during a turn here (Ctrl-C still stops it).
func pollLines(ctx context.Context, in *os.File) (<-chan string, <-chan struct{}) {
	ch, done := make(chan string), make(chan struct{})
	close(ch)
	close(done)
	return ch, done
}
