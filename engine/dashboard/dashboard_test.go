package dashboard

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, path string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest("GET", path, nil)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	Serve(w, r)
	return w
}

func TestServe(t *testing.T) {
	tests := []struct {
		path, ctype string
		code        int
	}{
		{"/ui/", "text/html", 200},
		{"/ui/index.html", "text/html", 200},
		{"/ui/app.js", "text/javascript", 200},
		{"/ui/style.css", "text/css", 200},
		{"/ui/missing.js", "", 404},
		{"/ui/.hidden", "", 404},
		{"/ui/../dashboard.go", "", 404},
		{"/ui/assets/app.js", "", 404},
	}
	for _, tt := range tests {
		w := get(t, tt.path, nil)
		if w.Code != tt.code {
			t.Errorf("%s: %d, want %d", tt.path, w.Code, tt.code)
			continue
		}
		if w.Header().Get("Content-Security-Policy") != CSP || w.Header().Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: headers %v", tt.path, w.Header())
		}
		if tt.code == 200 && !strings.HasPrefix(w.Header().Get("Content-Type"), tt.ctype) {
			t.Errorf("%s: Content-Type %q", tt.path, w.Header().Get("Content-Type"))
		}
	}
	// Gzip when asked, the same bytes once unpacked; 304 for a known ETag.
	plain := get(t, "/ui/app.js", nil)
	gz := get(t, "/ui/app.js", map[string]string{"Accept-Encoding": "gzip, deflate"})
	if gz.Header().Get("Content-Encoding") != "gzip" {
		t.Fatal("no gzip")
	}
	zr, err := gzip.NewReader(gz.Body)
	if err != nil {
		t.Fatal(err)
	}
	unpacked, _ := io.ReadAll(zr)
	if !bytes.Equal(unpacked, plain.Body.Bytes()) {
		t.Error("gzip differs")
	}
	if w := get(t, "/ui/app.js", map[string]string{"Accept-Encoding": "gzip;q=0"}); w.Header().Get("Content-Encoding") != "" {
		t.Error("gzip;q=0 got gzip")
	}
	if w := get(t, "/ui/app.js", map[string]string{"If-None-Match": plain.Header().Get("ETag")}); w.Code != http.StatusNotModified {
		t.Errorf("If-None-Match: %d", w.Code)
	}
}

// TestAssetsBudget: everything the browser can load fits the Pi budget
// (≤ 250 KB gzipped) and nothing is fetched from another origin.
func TestAssetsBudget(t *testing.T) {
	total := 0
	external := regexp.MustCompile(`(?i)(src|href|import|from|url)\s*[=(]?\s*["'(]\s*(https?:)?//`)
	for _, name := range Names() {
		raw, err := fs.ReadFile(assets, "assets/"+name)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		zw.Write(raw)
		zw.Close()
		total += b.Len()
		if m := external.Find(raw); m != nil {
			t.Errorf("%s loads something from elsewhere: %s", name, m)
		}
		if strings.HasSuffix(name, ".js") && bytes.Contains(raw, []byte(".innerHTML")) && name != "qrcode.js" {
			t.Errorf("%s sets innerHTML: gateway text must go in as text (app.js h())", name)
		}
	}
	t.Logf("%d files, %d bytes gzipped", len(Names()), total)
	if total > 250<<10 {
		t.Errorf("assets are %d bytes gzipped, over the 250 KB budget", total)
	}
}
