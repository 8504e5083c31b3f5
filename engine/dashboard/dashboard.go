// Package dashboard is the web dashboard's assets (docs/dashboard.md):
// plain HTML, CSS and ES modules embedded in the gateway and served under
// /ui/ by the same mux as the control API, so the Unix socket and the
// paired TLS listener both carry it. The pages call the control API
// (/v1/…) from the browser; nothing is fetched from anywhere else.
//
// A browser cannot hold a paired device's key, so it never talks to the
// gateway itself: `openclaw dashboard` (cli/dashboard) listens on
// 127.0.0.1, checks the browser's one-time token, cookie, Host and Origin,
// and forwards to the gateway over its own socket or mutual-TLS
// connection. The gateway serves the assets to any caller that may read
// (a viewer device too); what the pages may change is the device's role.
//
// Choices where the spec was silent:
//   - No build step: the files under assets/ are what the browser gets.
//     One third-party file, qrcode.js (Kazuhiko Arase's QR code generator,
//     MIT; the licence is at its top), draws WhatsApp's login QR code.
//   - The assets are flat (one path segment under /ui/), so the route
//     table's "/ui/{id}" classifies them all as reads.
//   - Every answer carries a Content-Security-Policy that allows only this
//     origin (no inline script, no framing) and a validator, so a gateway
//     upgrade is picked up on the next load without a stale cache.
//   - Gzip is done once per file on first request (a Pi sends ~5× fewer
//     bytes over the LAN) and kept; nothing is done at start-up.
package dashboard

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/openclaw-edge/edge/engine/api"
)

// Path is where the dashboard is served (api.PathDashboard).
const Path = api.PathDashboard

//go:embed assets
var assets embed.FS

// CSP is the Content-Security-Policy of every dashboard answer: this
// origin only, images also as data: URLs (the QR code), no framing.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// file is one asset, read and compressed on first use.
type file struct {
	once  sync.Once
	raw   []byte
	gz    []byte
	etag  string
	ctype string
}

// files is one entry per embedded asset, made on the first request (the
// set is fixed at build time): a request for any other name finds nothing
// and adds nothing.
var files = sync.OnceValue(func() map[string]*file {
	m := map[string]*file{}
	for _, name := range Names() {
		m[name] = &file{}
	}
	return m
})

func (f *file) load(name string) bool {
	f.once.Do(func() {
		raw, err := fs.ReadFile(assets, "assets/"+name)
		if err != nil {
			return
		}
		sum := sha256.Sum256(raw)
		f.raw = raw
		f.etag = `"` + hex.EncodeToString(sum[:8]) + `"`
		f.ctype = mime.TypeByExtension(path.Ext(name))
		if f.ctype == "" || strings.HasSuffix(name, ".js") {
			// Module scripts must be served as JavaScript; some
			// systems' mime tables say text/plain.
			f.ctype = map[string]string{".js": "text/javascript; charset=utf-8", ".svg": "image/svg+xml"}[path.Ext(name)]
			if f.ctype == "" {
				f.ctype = "application/octet-stream"
			}
		}
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		if _, err := zw.Write(raw); err == nil && zw.Close() == nil && b.Len() < len(raw) {
			f.gz = b.Bytes()
		}
	})
	return f.raw != nil
}

// setHeaders sets the headers every dashboard answer carries.
func setHeaders(h http.Header) {
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// Serve answers GET /ui/ (the page) and GET /ui/{file}.
func Serve(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, Path)
	if name == "" {
		name = "index.html"
	}
	setHeaders(w.Header())
	f := files()[name]
	if f == nil || !f.load(name) {
		http.Error(w, "no such file", http.StatusNotFound)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.ctype)
	h.Set("ETag", f.etag)
	h.Set("Cache-Control", "no-cache") // revalidate: an upgrade shows at once
	h.Add("Vary", "Accept-Encoding")
	if match := r.Header.Get("If-None-Match"); match != "" && match == f.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := f.raw
	if f.gz != nil && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		body = f.gz
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body) //nolint:errcheck // the client went away: nothing to do
	}
}

func acceptsGzip(ae string) bool {
	for _, part := range strings.Split(ae, ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			q = strings.ReplaceAll(q, " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}

// Names lists the asset files (for tests and the size budget).
func Names() []string {
	ents, _ := fs.ReadDir(assets, "assets")
	out := make([]string, 0, len(ents))
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}
