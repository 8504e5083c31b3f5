package main

import (
	"io"
	"path/filepath"

	"github.com/openclaw-edge/edge/engine/logfile"
)

// logFileName is the gateway's own log, under the state dir: what
// `openclaw logs` reads through the control API (GET /v1/logs).
const logFileName = "logs/gateway.log"

// openLogFile opens <stateDir>/logs/gateway.log and returns the writer the
// logger writes to: stderr (the journal under systemd) and the file. When
// the file cannot be opened the writer is stderr alone and the error says
// why (the gateway runs anyway).
func openLogFile(stateDir string, stderr io.Writer) (io.Writer, *logfile.File, error) {
	f, err := logfile.Open(filepath.Join(stateDir, logFileName), logfile.DefaultMaxSize)
	if err != nil {
		return stderr, nil, err
	}
	return tee{stderr, f}, f, nil
}

// tee writes to both writers whatever the first answers (io.MultiWriter
// would stop at a failing stderr); the log file never fails.
type tee struct{ a, b io.Writer }

func (t tee) Write(p []byte) (int, error) {
	n, err := t.a.Write(p)
	_, _ = t.b.Write(p) // counts its own failures (logfile.File.Dropped)
	return n, err
}
