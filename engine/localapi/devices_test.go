package localapi

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine/api"
)

// askerKey carries the asker, as the LAN layer's context does; the fake
// reads it back, this package never does.
type askerKey struct{}

// fakeDevices records what it was asked, and by whom.
type fakeDevices struct {
	calls []string
}

func asker(ctx context.Context) string {
	if s, ok := ctx.Value(askerKey{}).(string); ok {
		return s
	}
	return "socket"
}

func (f *fakeDevices) Devices() []api.Device { return []api.Device{{ID: "AAAA", Name: "laptop"}} }

func (f *fakeDevices) LocalCode() (api.PairCode, error) {
	f.calls = append(f.calls, "code")
	return api.PairCode{Code: "ABCD2345"}, nil
}

func (f *fakeDevices) Revoke(ref string) (api.Device, error) {
	f.calls = append(f.calls, "revoke "+ref)
	return api.Device{ID: ref}, nil
}

func (f *fakeDevices) Rename(ref, name string) (api.Device, error) {
	f.calls = append(f.calls, "rename "+ref+" "+name)
	return api.Device{ID: ref, Name: name}, nil
}

func (f *fakeDevices) SetRoleFor(ctx context.Context, ref, role string) (api.Device, error) {
	if asker(ctx) == ref {
		return api.Device{}, &api.Error{Code: api.CodeForbidden, Message: "cannot change its own role"}
	}
	f.calls = append(f.calls, "role "+ref+" "+role+" by "+asker(ctx))
	return api.Device{ID: ref, Role: role}, nil
}

func (f *fakeDevices) WhoAmI(ctx context.Context) api.WhoAmI {
	return api.WhoAmI{Transport: asker(ctx)}
}

func TestDeviceRoutes(t *testing.T) {
	ds := &fakeDevices{}
	h := New(nil, nil, Config{Devices: ds})
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"list", "GET", api.PathDevices, "", 200, ""},
		{"code", "POST", api.PathPairCode, "", 200, ""},
		{"revoke", "POST", api.PathDeviceRevoke, `{"id":"AAAA"}`, 200, ""},
		{"rename", "POST", api.PathDeviceRename, `{"id":"AAAA","name":"work"}`, 200, ""},
		{"role", "POST", api.PathDeviceRole, `{"id":"AAAA","role":"viewer"}`, 200, ""},
		{"role, unknown field", "POST", api.PathDeviceRole, `{"id":"AAAA","admin":true}`, 400, api.CodeBadRequest},
		{"revoke, empty", "POST", api.PathDeviceRevoke, ``, 400, api.CodeBadRequest},
		{"revoke, too large", "POST", api.PathDeviceRevoke, `{"id":"` + strings.Repeat("A", 17<<10) + `"}`, 400, api.CodeBadRequest},
		{"revoke by GET", "GET", api.PathDeviceRevoke, ``, 404, api.CodeNotFound},
	} {
		code, ae := do(t, h, tc.method, tc.path, tc.body)
		if code != tc.status || (tc.status != 200 && ae.Code != tc.code) { // a PairCode has a "code" too
			t.Errorf("%s: %d %+v; want %d %s", tc.name, code, ae, tc.status, tc.code)
		}
	}
	if got := strings.Join(ds.calls, "; "); got != "code; revoke AAAA; rename AAAA work; role AAAA viewer by socket" {
		t.Errorf("calls: %s", got)
	}
}

// Who asks reaches the record through the request's context, untouched:
// the LAN layer decides what a device may do to itself.
func TestDeviceAskerInContext(t *testing.T) {
	h := New(nil, nil, Config{Devices: &fakeDevices{}})
	r := httptest.NewRequest("GET", api.PathWhoAmI, nil)
	r = r.WithContext(context.WithValue(r.Context(), askerKey{}, "BBBB"))
	var who api.WhoAmI
	if w := serve(h, r); w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &who) != nil || who.Transport != "BBBB" {
		t.Errorf("whoami: %d %s", w.Code, w.Body)
	}
	r = httptest.NewRequest("POST", api.PathDeviceRole, strings.NewReader(`{"id":"BBBB","role":"operator"}`))
	r = r.WithContext(context.WithValue(r.Context(), askerKey{}, "BBBB"))
	if w := serve(h, r); w.Code != 403 || !strings.Contains(w.Body.String(), "cannot change its own role") {
		t.Errorf("own role: %d %s", w.Code, w.Body)
	}
}
