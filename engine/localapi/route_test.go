package localapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine/api"
)

// allParts is a Config with every part set, to fakes.
func allParts() Config {
	return Config{Memory: fakeLookup(&fakeIndex{}), Models: &fakeModels{}, Devices: &fakeDevices{}, Cron: &fakeCron{}}
}

// Every route of the assembled table is classified in api.Routes (so the
// LAN layer's viewer check knows it), is registered once (ServeMux panics
// on a duplicate), and every route api.Routes lists is served here — but
// the pairing handshake, which is the LAN layer's own (engine/pair/lan).
func TestRouteTableClassified(t *testing.T) {
	routes := (&handler{cfg: allParts()}).routes()
	served := map[string]bool{}
	for _, rt := range routes {
		path := strings.Replace(rt.Path, "{id}", "x", 1)
		if _, ok := api.RouteAccess(rt.Method, path); !ok {
			t.Errorf("%s %s is served but not classified in api.Routes (Read or Write)", rt.Method, rt.Path)
		}
		if rt.Handler == nil {
			t.Errorf("%s %s has no handler", rt.Method, rt.Path)
		}
		served[rt.Method+" "+rt.Path] = true
	}
	Register(http.NewServeMux(), routes)
	lanOwn := map[string]bool{api.PathPairStart: true, api.PathPairFinish: true}
	for _, r := range api.Routes {
		if !served[r.Method+" "+r.Path] && !lanOwn[r.Path] {
			t.Errorf("api.Routes lists %s %s, which nothing here serves", r.Method, r.Path)
		}
	}
	if len(routes) < 35 {
		t.Errorf("only %d routes: is a part missing?", len(routes))
	}
}

// A part left nil is not served: its paths answer like any unknown one.
// A known path with a method it does not take is unknown too.
func TestNilPartsNotServed(t *testing.T) {
	h := New(nil, nil, Config{})
	for _, tc := range []struct{ method, path string }{
		{"GET", api.PathMemoryStatus},
		{"POST", api.PathMemorySearch},
		{"GET", api.PathModels},
		{"POST", api.PathModelPull},
		{"GET", api.PathDevices},
		{"GET", api.PathWhoAmI},
		{"POST", api.PathPairCode},
	} {
		code, ae := do(t, h, tc.method, tc.path, "")
		if code != http.StatusNotFound || ae.Code != api.CodeNotFound || ae.Message != "no such endpoint: "+tc.method+" "+tc.path {
			t.Errorf("%s %s without its part: %d %+v", tc.method, tc.path, code, ae)
		}
	}
	h = New(nil, nil, allParts())
	for _, tc := range []struct{ method, path string }{
		{"GET", api.PathMemorySearch},
		{"GET", api.PathDeviceRevoke},
		{"DELETE", api.PathModels},
		{"GET", "/v1/models/frob"},
	} {
		if code, ae := do(t, h, tc.method, tc.path, ""); code != http.StatusNotFound || !strings.HasPrefix(ae.Message, "no such endpoint: ") {
			t.Errorf("%s %s: %d %+v", tc.method, tc.path, code, ae)
		}
	}
}

type target struct {
	Name  string `json:"name"`
	Count int    `json:"count,omitempty"`
}

func TestDecodeJSON(t *testing.T) {
	big := `{"name":"` + strings.Repeat("x", 100) + `"}`
	for _, tc := range []struct {
		name, body string
		optional   bool
		want       target
		err        string // "": no error; else a substring of the message
	}{
		{"one value", `{"name":"a","count":2}`, false, target{"a", 2}, ""},
		{"spaces around", " \n{\"name\":\"a\"}\n ", false, target{Name: "a"}, ""},
		{"empty", ``, false, target{}, "invalid JSON request body: EOF"},
		{"only spaces", " \n\t", false, target{}, "invalid JSON request body: EOF"},
		{"empty, optional", ``, true, target{}, ""},
		{"only spaces, optional", " \r\n\t", true, target{}, ""},
		{"cut short, optional", `{"name":`, true, target{}, "unexpected EOF"},
		{"unknown field", `{"name":"a","bogus":1}`, false, target{}, `unknown field "bogus"`},
		{"unknown field, optional", `{"bogus":1}`, true, target{}, `unknown field "bogus"`},
		{"two values", `{"name":"a"} {}`, false, target{}, "more than one value"},
		{"two values, optional", `{} {}`, true, target{}, "more than one value"},
		{"not JSON", `not json`, false, target{}, "invalid JSON request body: invalid character"},
		{"wrong type", `{"count":"2"}`, false, target{}, "cannot unmarshal string"},
		{"array", `[1]`, false, target{}, "cannot unmarshal array"},
		{"too large", big, false, target{}, "request body is larger than 64 bytes"},
		{"too large, optional", big, true, target{}, "request body is larger than 64 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/x", strings.NewReader(tc.body))
			var got target
			var err error
			if tc.optional {
				err = decodeOptionalJSON(httptest.NewRecorder(), r, 64, &got)
			} else {
				err = decodeJSON(httptest.NewRecorder(), r, 64, &got)
			}
			if tc.err == "" {
				if err != nil || got != tc.want {
					t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
				}
				return
			}
			ae := asAPIError(err)
			if err == nil || ae.Code != api.CodeBadRequest || !strings.Contains(ae.Message, tc.err) {
				t.Fatalf("err %v (%+v); want bad_request with %q", err, ae, tc.err)
			}
		})
	}
}

// FuzzDecodeJSON: any body is a value or a bad_request, never a panic
// nor an error of another kind; what decodes fits the limit.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"name":"a"}`, `{"name":"a"} {}`, `{"bogus":1}`, `[`, "\x00", ` `, `{"count":1e309}`} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, body string, optional bool) {
		r := httptest.NewRequest("POST", "/x", strings.NewReader(body))
		var v target
		var err error
		if optional {
			err = decodeOptionalJSON(httptest.NewRecorder(), r, 256, &v)
		} else {
			err = decodeJSON(httptest.NewRecorder(), r, 256, &v)
		}
		if err != nil {
			if ae := asAPIError(err); ae.Code != api.CodeBadRequest || ae.Message == "" {
				t.Fatalf("body %q: %+v", body, ae)
			}
			return
		}
		if len(body) > 256 {
			t.Fatalf("a %d-byte body decoded under a 256-byte limit", len(body))
		}
	})
}

func TestAsAPIError(t *testing.T) {
	ae := &api.Error{Code: api.CodeNotFound, Message: "no model x"}
	if got := asAPIError(fmt.Errorf("describe: %w", ae)); got != ae {
		t.Errorf("a wrapped *api.Error: %+v", got)
	}
	if got := asAPIError(errors.New("disk on fire")); got.Code != api.CodeInternal || got.Message != "disk on fire" {
		t.Errorf("a plain error: %+v", got)
	}
	// A domain's sentinel means nothing here: its adapter classifies it.
	if got := asAPIError(fmt.Errorf("open: %w", context.Canceled)); got.Code != api.CodeInternal {
		t.Errorf("an unclassified sentinel: %+v", got)
	}
}

// do serves one request and returns the status and the api.Error body (a
// zero one when the body is not an error).
func do(t *testing.T, h http.Handler, method, path, body string) (int, api.Error) {
	t.Helper()
	w := serve(h, httptest.NewRequest(method, path, strings.NewReader(body)))
	var ae api.Error
	_ = json.Unmarshal(w.Body.Bytes(), &ae) // a success's body is not an error
	return w.Code, ae
}

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// events splits a text/event-stream body into its events' names and data.
func events(t *testing.T, body io.Reader) [][2]string {
	t.Helper()
	b, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	for _, block := range strings.Split(strings.TrimSpace(string(b)), "\n\n") {
		name, data, ok := strings.Cut(block, "\ndata: ")
		if !ok || !strings.HasPrefix(name, "event: ") {
			t.Fatalf("not an event: %q", block)
		}
		out = append(out, [2]string{strings.TrimPrefix(name, "event: "), data})
	}
	return out
}
