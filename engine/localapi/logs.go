package localapi

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
)

// serveLogs is GET /v1/logs: the tail of the gateway's log file and, with
// follow=1, what is logged after it, until the client hangs up or the
// gateway stops.
func (h *handler) serveLogs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	n := api.DefaultLogLines
	if s := q.Get("lines"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			api.WriteError(w, badRequest(fmt.Sprintf("lines=%q: want a number of lines, 0 to %d", s, api.MaxLogLines)))
			return
		}
		n = min(v, api.MaxLogLines)
	}
	follow := q.Get("follow") == "1" || q.Get("follow") == "true"
	if h.cfg.Logs == nil {
		api.WriteError(w, &api.Error{Code: api.CodeNotFound, Message: "this gateway keeps no log file (see its start-up warning); under systemd read `journalctl -u openclaw-gateway`"})
		return
	}
	tail, sub, err := h.cfg.Logs.Tail(n, follow)
	if err != nil {
		api.WriteError(w, asAPIError(h.gw.Internal("read the log file", err)))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	write := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout)) // unsupported: a test recorder
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write(tail) || sub == nil {
		if sub != nil {
			sub.Close()
		}
		return
	}
	defer sub.Close()
	var lost int64
	for {
		select {
		case <-r.Context().Done():
			return
		case b, ok := <-sub.C:
			if !ok {
				return // the log file was closed: the gateway stops
			}
			if l := sub.Lost(); l > lost {
				note := fmt.Sprintf("… %d log write(s) skipped here: this client read too slowly\n", l-lost)
				lost = l
				if !write([]byte(note)) {
					return
				}
			}
			if !write(b) {
				return
			}
		}
	}
}
