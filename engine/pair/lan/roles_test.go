package lan_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/pair"
	"github.com/openclaw-edge/edge/engine/pair/lan"
	"github.com/openclaw-edge/edge/engine/store/bolt"
)

// passBox is startBox whose control API answers every request "passed"
// and counts them: what the device check lets through reaches it.
func passBox(t *testing.T) (*box, *atomic.Int64) {
	t.Helper()
	dir := t.TempDir()
	db, err := bolt.Open(filepath.Join(dir, "state.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	id, err := pair.LoadOrCreate(filepath.Join(dir, "identity"), "gateway", "box")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := lan.New(lan.Config{Identity: id, Name: "box", Records: db})
	if err != nil {
		t.Fatal(err)
	}
	var passed atomic.Int64
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		passed.Add(1)
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, `{"passed":true}`)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler(next), ConnContext: srv.ConnContext, ConnState: srv.ConnState}
	go hs.Serve(tls.NewListener(ln, srv.TLSConfig()))
	t.Cleanup(func() { hs.Close(); db.Close() })
	return &box{srv: srv, addr: ln.Addr().String(), id: id, db: db}, &passed
}

// rawClient speaks HTTPS to the box as the device cert, any method, any
// path.
func rawClient(cert tls.Certificate) *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}}}
}

func call(t *testing.T, c *http.Client, addr, method, path, body string) (int, api.Error) {
	t.Helper()
	req, err := http.NewRequest(method, "https://"+addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ae api.Error
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &ae) // a read's body is not an error
	return resp.StatusCode, ae
}

// Over every route of the control API (api.Routes, which a test in
// engine/api keeps complete): a viewer is refused every write — turns,
// approvals decisions, config set, channel pairing approvals, session
// import and reset, the memory index, model pulls, device changes — before
// it reaches a handler, and gets every read; an operator gets both.
// Anything not in the table is refused to a viewer.
func TestViewerRefusedEveryWrite(t *testing.T) {
	ctx := context.Background()
	b, passed := passBox(t)
	viewer, operator := device(t, "tablet"), device(t, "laptop")
	pv, err := client.Pair(ctx, b.addr, viewer, code(t, b), "tablet")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Pair(ctx, b.addr, operator, code(t, b), "laptop"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.srv.SetRole(pv.Done.Device.ID, api.RoleViewer); err != nil {
		t.Fatal(err)
	}
	vc, oc := rawClient(viewer), rawClient(operator)
	lanServed := map[string]bool{api.PathDevices: true, api.PathWhoAmI: true, api.PathDeviceRevoke: true, api.PathDeviceRename: true, api.PathDeviceRole: true, api.PathPairCode: true, api.PathPairStart: true, api.PathPairFinish: true}
	writes := 0
	for _, r := range api.Routes {
		path := strings.Replace(r.Path, "{id}", "a1b2c3", 1)
		methods := []string{r.Method}
		if r.Method == http.MethodGet {
			methods = append(methods, http.MethodHead)
		}
		for _, m := range methods {
			name := m + " " + path
			if r.Path == api.PathPairStart || r.Path == api.PathPairFinish {
				continue // strangers' endpoints, before any role: TestPair*
			}
			before := passed.Load()
			status, ae := call(t, vc, b.addr, m, path, `{}`)
			reached := passed.Load() != before
			switch r.Access {
			case api.Write:
				writes++
				if status != http.StatusForbidden || ae.Code != api.CodeForbidden || reached {
					t.Errorf("viewer %s: %d %+v (reached the handler: %v); want refused", name, status, ae, reached)
				}
				if m == http.MethodPost && !strings.Contains(ae.Message, "is a viewer") && r.Path != api.PathPairCode {
					t.Errorf("viewer %s: refusal %q does not say why", name, ae.Message)
				}
			case api.Read:
				if status == http.StatusForbidden || (!lanServed[r.Path] && !reached) {
					t.Errorf("viewer %s: %d %+v (reached: %v); want it served", name, status, ae, reached)
				}
			default:
				t.Errorf("%s: no access class", name)
			}
			if r.Path == api.PathPairCode || lanServed[r.Path] {
				continue // the operator's device endpoints: TestDeviceRole
			}
			before = passed.Load()
			if status, ae := call(t, oc, b.addr, m, path, `{}`); status == http.StatusForbidden || passed.Load() == before {
				t.Errorf("operator %s: %d %+v; want it served", name, status, ae)
			}
		}
	}
	if writes < 20 { // 21 today: an emptied table must not pass
		t.Errorf("only %d writes checked: is api.Routes complete?", writes)
	}
	// Outside the table: refused to a viewer whatever the method.
	for _, tc := range []struct{ method, path string }{
		{http.MethodPatch, api.PathStatus},
		{http.MethodPost, api.PathStatus},
		{http.MethodOptions, api.PathConfig},
		{http.MethodPut, api.PathConfigSet},
		{http.MethodGet, api.PathConfigSet},
		{http.MethodGet, "/v1/not-yet-classified"},
		{http.MethodPost, api.PathApprovals + "/a/b"},
		{http.MethodPost, api.PathApprovals + "/"},
		{http.MethodPost, api.PathConfigSet + "/"},
		{http.MethodPost, "/v1//config/set"},
		{http.MethodPost, "/v1/config/./set"},
		{"DELETE", api.PathSessions},
	} {
		before := passed.Load()
		if status, ae := call(t, vc, b.addr, tc.method, tc.path, `{}`); status != http.StatusForbidden || ae.Code != api.CodeForbidden || passed.Load() != before {
			t.Errorf("viewer %s %s: %d %+v; want refused", tc.method, tc.path, status, ae)
		}
	}
}

// `openclaw devices role`: the local socket and operators set roles, a
// device never its own, a viewer none; the change holds at once, on open
// connections too, and survives a restart.
func TestDeviceRole(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b := startBox(t, dir)
	a, v := device(t, "laptop"), device(t, "tablet")
	pa, err := client.Pair(ctx, b.addr, a, code(t, b), "laptop")
	if err != nil {
		t.Fatal(err)
	}
	pv, err := client.Pair(ctx, b.addr, v, code(t, b), "tablet")
	if err != nil {
		t.Fatal(err)
	}
	ac, vc := client.NewTLS(b.addr, a, pa.Fingerprint), client.NewTLS(b.addr, v, pv.Fingerprint)
	if _, err := vc.Reset(ctx, "agent:main:main"); err != nil { // an operator, as paired; keeps a connection open
		t.Fatalf("operator write: %v", err)
	}
	// An operator demotes another device: at once, on its open connection.
	d, err := ac.SetDeviceRole(ctx, "tablet", api.RoleViewer)
	if err != nil || d.Role != api.RoleViewer || d.ID != pv.Done.Device.ID {
		t.Fatalf("SetDeviceRole = %+v, %v", d, err)
	}
	if _, err := vc.Reset(ctx, "agent:main:main"); errCode(err) != api.CodeForbidden {
		t.Fatalf("viewer write: %v", err)
	}
	if _, err := vc.Status(ctx); err != nil {
		t.Fatalf("viewer read: %v", err)
	}
	// A viewer cannot promote itself, nor change anyone.
	if _, err := vc.SetDeviceRole(ctx, "tablet", api.RoleOperator); errCode(err) != api.CodeForbidden {
		t.Fatalf("viewer promotes itself: %v", err)
	}
	if _, err := vc.SetDeviceRole(ctx, "laptop", api.RoleViewer); errCode(err) != api.CodeForbidden {
		t.Fatalf("viewer demotes the operator: %v", err)
	}
	// An operator cannot change its own role.
	_, err = ac.SetDeviceRole(ctx, pa.Done.Device.ID[:6], api.RoleViewer)
	if errCode(err) != api.CodeForbidden || !strings.Contains(err.Error(), "cannot change its own role") {
		t.Fatalf("operator demotes itself: %v", err)
	}
	// Bad input changes nothing.
	for _, tc := range []struct{ ref, role, code string }{
		{"tablet", "admin", api.CodeBadRequest},
		{"tablet", "", api.CodeBadRequest},
		{"tablet", "Operator", api.CodeBadRequest},
		{"nobody", api.RoleOperator, api.CodeNotFound},
		{"", api.RoleOperator, api.CodeBadRequest},
	} {
		if _, err := ac.SetDeviceRole(ctx, tc.ref, tc.role); errCode(err) != tc.code {
			t.Errorf("SetDeviceRole(%q, %q) = %v; want %s", tc.ref, tc.role, err, tc.code)
		}
	}
	// The local socket (SetRole) may demote the last operator: the box
	// itself stays one.
	if _, err := b.srv.SetRole("laptop", api.RoleViewer); err != nil {
		t.Fatal(err)
	}
	for _, d := range b.srv.Devices() {
		if d.Role != api.RoleViewer {
			t.Errorf("%s is %s", d.Name, d.Role)
		}
	}
	// The roles are stored.
	srv2, err := lan.New(lan.Config{Identity: b.id, Name: "box", Records: b.db})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range srv2.Devices() {
		if d.Role != api.RoleViewer {
			t.Errorf("after a restart %s is %s", d.Name, d.Role)
		}
	}
}
