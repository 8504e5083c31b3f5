package localapi

import (
	"context"
	"net/http"

	"github.com/openclaw-edge/edge/engine/api"
)

// Devices is the record of paired devices and the pairing code
// (engine/pair/lan's Server). Who asks comes in the request's context: the
// LAN layer puts the paired device it admitted there, so a device's own
// role is refused by the layer that knows it; a request without one came
// over the local socket (always an operator). This package never looks.
type Devices interface {
	// Devices lists the paired devices, oldest first.
	Devices() []api.Device
	// LocalCode makes a new pairing code at the local socket's request
	// (the LAN layer refuses the route to devices).
	LocalCode() (api.PairCode, error)
	Revoke(ref string) (api.Device, error)
	Rename(ref, name string) (api.Device, error)
	// SetRoleFor sets a device's role as the asker in ctx may.
	SetRoleFor(ctx context.Context, ref, role string) (api.Device, error)
	// WhoAmI is how the gateway sees the asker in ctx.
	WhoAmI(ctx context.Context) api.WhoAmI
}

// Request body limit of the device routes.
const maxDeviceBody = 16 << 10

// deviceRoutes are the endpoints of paired devices (docs/design.md §9); the
// pairing handshake itself (PathPairStart, PathPairFinish) is the LAN
// layer's, as it is the authentication.
func deviceRoutes(ds Devices) []Route {
	h := devicesAPI{ds}
	return []Route{
		{http.MethodPost, api.PathPairCode, jsonQuery(h.pairCode)},
		{http.MethodGet, api.PathDevices, h.list},
		{http.MethodPost, api.PathDeviceRevoke, jsonBody(maxDeviceBody, h.revoke)},
		{http.MethodPost, api.PathDeviceRename, jsonBody(maxDeviceBody, h.rename)},
		{http.MethodPost, api.PathDeviceRole, jsonBody(maxDeviceBody, h.role)},
		{http.MethodGet, api.PathWhoAmI, h.whoAmI},
	}
}

type devicesAPI struct{ ds Devices }

func (h devicesAPI) pairCode(r *http.Request) (api.PairCode, error) { return h.ds.LocalCode() }

func (h devicesAPI) list(w http.ResponseWriter, r *http.Request) {
	api.WriteJSON(w, http.StatusOK, h.ds.Devices())
}

func (h devicesAPI) whoAmI(w http.ResponseWriter, r *http.Request) {
	api.WriteJSON(w, http.StatusOK, h.ds.WhoAmI(r.Context()))
}

func (h devicesAPI) revoke(r *http.Request, ref api.DeviceRef) (api.Device, error) {
	return h.ds.Revoke(ref.ID)
}

func (h devicesAPI) rename(r *http.Request, ref api.DeviceRef) (api.Device, error) {
	return h.ds.Rename(ref.ID, ref.Name)
}

func (h devicesAPI) role(r *http.Request, ref api.DeviceRef) (api.Device, error) {
	return h.ds.SetRoleFor(r.Context(), ref.ID, ref.Role)
}
