package api

import (
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// pathConsts maps the Path* constants of this package to their values, read
// from the source.
func pathConsts(t *testing.T) map[string]string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^\s*(?:const\s+)?(Path\w+)\s*=\s*"(/[^"]*)"`)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			out[m[1]] = m[2]
		}
	}
	if len(out) < 30 {
		t.Fatalf("found only %d Path constants: %v", len(out), out)
	}
	return out
}

// Routes is complete: every Path constant is in it, and every handler
// registration in the module — a pattern ("METHOD "+api.PathX[+"/{id}"]) or
// an entry of engine/localapi's route table ({http.MethodX or "METHOD",
// api.PathX[+"/{id}"], …}) — is a route it lists, so no endpoint is served
// that the viewer check does not know. (engine/localapi's own test checks
// its assembled table too.)
func TestRoutesComplete(t *testing.T) {
	consts := pathConsts(t)
	listed := map[string]bool{}
	for _, r := range Routes {
		listed[r.Path] = true
		if r.Access != Read && r.Access != Write {
			t.Errorf("%s %s: no access class", r.Method, r.Path)
		}
	}
	for name, p := range consts {
		if !listed[p] && !listed[p+"/{id}"] {
			t.Errorf("%s (%s) is not in Routes: classify it (Read or Write)", name, p)
		}
	}
	reg := regexp.MustCompile(`(?:"(GET|HEAD|POST|PUT|PATCH|DELETE) "\s*\+|\{\s*(?:http\.Method(Get|Head|Post|Put|Patch|Delete)|"(GET|HEAD|POST|PUT|PATCH|DELETE)")\s*,)\s*(?:api\.)?(Path\w+)(?:\s*\+\s*"([^"]*)")?`)
	found := 0
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range reg.FindAllStringSubmatch(string(b), -1) {
			method := strings.ToUpper(m[1] + m[2] + m[3]) // one of the three forms matched
			p, ok := consts[m[4]]
			if !ok {
				t.Errorf("%s: %s is not a Path constant of engine/api", path, m[4])
				continue
			}
			found++
			if _, ok := RouteAccess(method, strings.Replace(p+m[5], "{id}", "x", 1)); !ok {
				t.Errorf("%s registers %s %s%s, which Routes does not list", path, method, p, m[5])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 30 {
		t.Errorf("found only %d handler registrations: did the pattern change?", found)
	}
}

func TestViewerMay(t *testing.T) {
	tests := []struct {
		method, path string
		want         bool
	}{
		{http.MethodGet, PathStatus, true},
		{http.MethodHead, PathStatus, true},
		{http.MethodPost, PathStatus, false},
		{http.MethodPost, PathMemorySearch, true},
		{http.MethodPost, PathMemoryIndex, false},
		{http.MethodPost, PathConfigValidate, true},
		{http.MethodPost, PathConfigSet, false},
		{http.MethodGet, PathConfigSet, false},
		{http.MethodPost, PathMessages, false},
		{http.MethodGet, PathApprovals, true},
		{http.MethodPost, PathApprovals + "/abc", false},
		{http.MethodGet, PathApprovals + "/abc", false},
		{http.MethodPost, PathPairingApprove, false},
		{http.MethodPost, PathSessionImport, false},
		{http.MethodPost, PathModelPull, false},
		{http.MethodPost, PathDeviceRole, false},
		{http.MethodGet, PathDevices, true},
		{http.MethodGet, "/v1/unknown", false},
		{http.MethodGet, PathStatus + "/", false},
		{"get", PathStatus, false},
		{"", PathStatus, false},
	}
	for _, tt := range tests {
		if got := ViewerMay(tt.method, tt.path); got != tt.want {
			t.Errorf("ViewerMay(%q, %q) = %v, want %v", tt.method, tt.path, got, tt.want)
		}
	}
}
