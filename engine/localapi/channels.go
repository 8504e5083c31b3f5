package localapi

import (
	"net/http"

	"github.com/openclaw-edge/edge/engine/api"
)

func (h *handler) channelRoutes() []Route {
	var rs []Route
	rs = append(rs, Route{"GET", api.PathChannels, func(w http.ResponseWriter, r *http.Request) {
		api.WriteJSON(w, http.StatusOK, h.in.ChannelStatuses())
	}})
	rs = append(rs, Route{"POST", api.PathChannelLogin, h.serveLogin})
	rs = append(rs, Route{"POST", api.PathChannelLogout, func(w http.ResponseWriter, r *http.Request) {
		var req api.LoginRequest
		if err := decodeJSON(w, r, 4<<10, &req); err != nil {
			api.WriteError(w, asAPIError(err))
			return
		}
		st, err := h.in.Logout(r.Context(), req)
		if err != nil {
			api.WriteError(w, asAPIError(err))
			return
		}
		api.WriteJSON(w, http.StatusOK, st)
	}})
	rs = append(rs, Route{"GET", api.PathPairing, func(w http.ResponseWriter, r *http.Request) {
		list, err := h.in.PairingList(r.URL.Query().Get("channel"))
		if err != nil {
			api.WriteError(w, asAPIError(err))
			return
		}
		api.WriteJSON(w, http.StatusOK, list)
	}})
	for path, approve := range map[string]bool{api.PathPairingApprove: true, api.PathPairingDeny: false} {
		rs = append(rs, Route{"POST", path, func(w http.ResponseWriter, r *http.Request) {
			var d api.PairingDecision
			if err := decodeJSON(w, r, 4<<10, &d); err != nil {
				api.WriteError(w, asAPIError(err))
				return
			}
			res, err := h.in.PairingDecide(d.Channel, d.Code, approve)
			if err != nil {
				api.WriteError(w, asAPIError(err))
				return
			}
			api.WriteJSON(w, http.StatusOK, res)
		}})
	}
	rs = append(rs, Route{"POST", api.PathMessageSend, func(w http.ResponseWriter, r *http.Request) {
		var req api.OutboundRequest
		if err := decodeJSON(w, r, maxSendBody, &req); err != nil {
			api.WriteError(w, asAPIError(err))
			return
		}
		res, err := h.in.SendOutbound(req)
		if err != nil {
			api.WriteError(w, asAPIError(err))
			return
		}
		api.WriteJSON(w, http.StatusOK, res)
	}})
	return rs
}

func (h *handler) serveLogin(w http.ResponseWriter, r *http.Request) {
	var req api.LoginRequest
	if err := decodeJSON(w, r, 4<<10, &req); err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	flusher, _ := w.(http.Flusher)
	begin := func() {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
	}
	send := func(ev api.LoginEvent) {
		_ = writeSSE(w, ev.Type, ev)
		if flusher != nil {
			flusher.Flush()
		}
	}
	if err := h.in.Login(r.Context(), req, begin, send); err != nil {
		api.WriteError(w, asAPIError(err))
	}
}
