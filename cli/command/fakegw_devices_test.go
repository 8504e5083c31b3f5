package command

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
)

// fakeDevice is the one paired device of the fake gateway; its role
// changes with POST /v1/devices/role as the real one's (engine/pair/lan).
var fakeDevice = api.Device{ID: "7KQ2-M4PX-9ZTR", Name: "tablet\x1b[2J", Fingerprint: "ab12", Role: api.RoleOperator, CreatedAt: time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)}

func init() {
	fakeRoutes["GET "+api.PathDevices] = func(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		defer g.mu.Unlock()
		fakeJSON(w, 200, []api.Device{fakeDevice})
	}
	fakeRoutes["POST "+api.PathDeviceRole] = func(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
		var ref api.DeviceRef
		if err := json.NewDecoder(r.Body).Decode(&ref); err != nil {
			fakeJSON(w, 400, api.Error{Code: api.CodeBadRequest, Message: "request body: " + err.Error()})
			return
		}
		if ref.ID != "tablet" && ref.ID != "7KQ2" {
			fakeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: `no paired device "` + ref.ID + "\" (see `openclaw devices list`)"})
			return
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		fakeDevice.Role = ref.Role
		fakeJSON(w, 200, fakeDevice)
	}
}
