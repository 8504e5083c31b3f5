package command

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
)

// watchWriter remembers whether anything was written through it.
type watchWriter struct {
	w     io.Writer
	wrote bool
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.wrote = w.wrote || len(p) > 0
	return w.w.Write(p)
}

// jsonArg says whether the command line asks for --json (before a "--",
// after which words are a command's own arguments). It is read from the
// words because a usage error can stop flag parsing before --json is set.
func jsonArg(args []string) bool {
	for _, a := range args {
		switch {
		case a == "--":
			return false
		case a == "--json", a == "--json=true", a == "--json=1":
			return true
		}
	}
	return false
}

// errorCode is the "code" of a failure printed as JSON.
func errorCode(err error) string {
	var ae *api.Error
	var ue *usageError
	switch {
	case errors.As(err, &ae) && ae.Code != "":
		return ae.Code
	case errors.As(err, &ue):
		return api.CodeBadRequest
	case errors.Is(err, client.ErrGatewayDown):
		return "gateway_down"
	case errors.As(err, new(*notInstalledError)):
		return "not_installed"
	case interrupted(err):
		return "interrupted"
	}
	return "error"
}

// interrupted reports whether err is the user's Ctrl-C (exit 130).
func interrupted(err error) bool {
	ee, ok := exitCode(err)
	return ok && ee.code == 130 || errors.Is(err, context.Canceled)
}

// failure is the object a --json command prints when it fails.
type failure struct {
	OK    bool      `json:"ok"`
	Error api.Error `json:"error"`
}

// writeFailure prints err as {"ok":false,"error":{"code","message"}}.
func writeFailure(w io.Writer, err error) {
	msg := strings.TrimSpace(err.Error())
	if interrupted(err) {
		msg = "interrupted"
	}
	_ = writeJSON(w, failure{Error: api.Error{Code: errorCode(err), Message: msg}}) // the error is reported on stderr either way
}
