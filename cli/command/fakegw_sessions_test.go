package command

import (
	"net/http"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
)

// The fake's session delete: agent:main:main answers as it was (it stays
// listed: the fake keeps no state), agent:main:busy has a turn waiting
// for approval a7 (the real gateway's 409), any other key is not found.
func init() {
	fakeRoutes["POST "+api.PathSessionDelete] = func(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
		key := r.URL.Query().Get("key")
		switch key {
		case "agent:main:main":
			for _, s := range g.sessions(time.Now()) {
				if s.Key == key {
					fakeJSON(w, http.StatusOK, s)
					return
				}
			}
		case "agent:main:busy":
			fakeJSON(w, http.StatusConflict, api.Error{Code: api.CodeConflict, Message: "session agent:main:busy has a turn waiting for exec approval a7: answer it first (`openclaw approvals deny a7`), then delete the session"})
			return
		}
		notFound(w, key)
	}
}
