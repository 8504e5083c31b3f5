package localapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/openclaw-edge/edge/engine/api"
)

// Route is one endpoint of the control API: a method, a path (an
// engine/api Path constant, optionally + "/{id}") and the handler that
// translates it. Every route is classified in api.Routes (Read or Write),
// which the LAN layer decides a viewer's access from; a test walks the
// tables here to keep the two in step.
type Route struct {
	Method, Path string
	Handler      http.HandlerFunc
}

// Register adds routes to mux as "METHOD path" patterns. A request whose
// path is known but whose method is not falls to the mux's catch-all (New:
// "no such endpoint").
func Register(mux *http.ServeMux, routes []Route) {
	for _, rt := range routes {
		mux.HandleFunc(rt.Method+" "+rt.Path, rt.Handler)
	}
}

// notFound answers a request no route matched.
func notFound(w http.ResponseWriter, r *http.Request) {
	api.WriteError(w, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path)})
}

// decodeJSON reads r's body as exactly one JSON value into v: at most
// limit bytes, no field v does not have, nothing after the value. Each of
// those is a bad_request that says which.
func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	return decodeBody(w, r, limit, v, false)
}

// decodeOptionalJSON is decodeJSON where a body with no value at all
// (empty, or only whitespace) is the zero request, as the memory routes
// have always taken it (`curl -X POST …/v1/memory/index` reindexes).
func decodeOptionalJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	return decodeBody(w, r, limit, v, true)
}

// decodeBody is the one body decoder; optional: no value is no error.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any, optional bool) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		// Decode returns io.EOF itself only when the input held no value;
		// a value cut short is io.ErrUnexpectedEOF.
		if optional && err == io.EOF { //nolint:errorlint // the exact sentinel, see above
			return nil
		}
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return badRequest(fmt.Sprintf("request body is larger than %d bytes", limit))
		}
		return badRequest("invalid JSON request body: " + err.Error())
	}
	if dec.More() {
		return badRequest("invalid JSON request body: more than one value")
	}
	return nil
}

// asAPIError is the one error mapper of the control API: an *api.Error
// (anywhere in err's chain) is the answer as it is; anything else is
// internal. What a domain error means on the wire (not found, bad
// request) is decided where the domain's types meet the wire's — the
// wiring's adapters (appliance, models/catalog/catalogapi) — so this
// package never learns another package's sentinel errors.
func asAPIError(err error) *api.Error {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae
	}
	return &api.Error{Code: api.CodeInternal, Message: err.Error()}
}

func badRequest(msg string) *api.Error { return &api.Error{Code: api.CodeBadRequest, Message: msg} }

// jsonBody serves a request whose JSON body (decodeJSON, at most limit
// bytes) call answers: the one decoder, the one error mapper, the answer
// as JSON. Most write routes are this and nothing more.
func jsonBody[Req, Resp any](limit int64, call func(r *http.Request, req Req) (Resp, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if err := decodeJSON(w, r, limit, &req); err != nil {
			api.WriteError(w, asAPIError(err))
			return
		}
		reply(w, call, r, req)
	}
}

// jsonQuery serves a request call answers from its URL alone.
func jsonQuery[Resp any](call func(r *http.Request) (Resp, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		reply(w, func(r *http.Request, _ struct{}) (Resp, error) { return call(r) }, r, struct{}{})
	}
}

// reply writes call's answer, or its error through asAPIError.
func reply[Req, Resp any](w http.ResponseWriter, call func(*http.Request, Req) (Resp, error), r *http.Request, req Req) {
	resp, err := call(r, req)
	if err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	api.WriteJSON(w, http.StatusOK, resp)
}

// startStream starts a text/event-stream reply; the flusher is nil where
// w cannot flush.
func startStream(w http.ResponseWriter) http.Flusher {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return flusher
}
