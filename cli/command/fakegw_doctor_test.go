package command

import (
	"net/http"

	"github.com/openclaw-edge/edge/engine/api"
)

func init() {
	fakeRoutes["GET "+api.PathDoctor] = func(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		rep := g.doctor
		g.mu.Unlock()
		if rep == nil {
			fakeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: "no such endpoint " + r.URL.Path})
			return
		}
		fakeJSON(w, 200, rep)
	}
}

// setDoctor sets the answer to GET /v1/doctor.
func (g *fakeGateway) setDoctor(r *api.DoctorReport) {
	g.mu.Lock()
	g.doctor = r
	g.mu.Unlock()
}
