package localapi

import (
	"net/http"

	"github.com/openclaw-edge/edge/engine/api"
)

func (h *handler) channelRoutes() []Route {
	rs := []Route{
		{"GET", api.PathChannels, func(w http.ResponseWriter, r *http.Request) {
			api.WriteJSON(w, http.StatusOK, h.in.ChannelStatuses())
		}},
		{"POST", api.PathChannelLogin, h.serveLogin},
		{"POST", api.PathChannelLogout, jsonBody(4<<10, func(r *http.Request, req api.LoginRequest) (*api.ChannelStatus, error) {
			return h.in.Logout(r.Context(), req)
		})},
		{"GET", api.PathPairing, jsonQuery(func(r *http.Request) ([]api.PairingRequest, error) {
			return h.in.PairingList(r.URL.Query().Get("channel"))
		})},
		{"POST", api.PathMessageSend, jsonBody(maxSendBody, func(r *http.Request, req api.OutboundRequest) (*api.OutboundResult, error) {
			return h.in.SendOutbound(req)
		})},
	}
	for path, approve := range map[string]bool{api.PathPairingApprove: true, api.PathPairingDeny: false} {
		rs = append(rs, Route{"POST", path, jsonBody(4<<10, func(r *http.Request, d api.PairingDecision) (*api.PairingRequest, error) {
			return h.in.PairingDecide(d.Channel, d.Code, approve)
		})})
	}
	return rs
}

func (h *handler) serveLogin(w http.ResponseWriter, r *http.Request) {
	var req api.LoginRequest
	if err := decodeJSON(w, r, 4<<10, &req); err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	begin := func() { startStream(w) }
	send := func(ev api.LoginEvent) { _ = writeSSE(w, ev.Type, ev) }
	if err := h.in.Login(r.Context(), req, begin, send); err != nil {
		api.WriteError(w, asAPIError(err))
	}
}
