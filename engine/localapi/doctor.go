package localapi

import (
	"net/http"
	"os"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/doctor"
)

// DoctorConfig is what only the wiring knows for GET /v1/doctor.
type DoctorConfig struct {
	// Models lists the installed local models (the model registry); nil:
	// no model checks.
	Models func() []doctor.ModelFile
	// Bind is gateway.bind. LAN, when the gateway serves the LAN API,
	// returns the address its TLS listener listens on or why it does not;
	// nil: no LAN API ("LAN API off").
	Bind string
	LAN  func() (string, error)
	// SharedMain returns the config's warnings about non-owners sharing
	// the owner's main session (session.dmScope "main"); nil: not checked.
	SharedMain func() []string
	// Helpers lists the helper programs the configuration needs and where
	// they are (doctor.Helpers); nil: not checked.
	Helpers func() []doctor.Helper
	// Facts, if set, replaces this machine's facts (tests).
	Facts func(*doctor.Inputs)
}

// Doctor runs the gateway's self-checks (engine/doctor) in this process.
func (h *handler) Doctor() api.DoctorReport {
	st := h.gw.Status()
	d := h.cfg.Doctor
	in := doctor.Inputs{
		StateDir: h.cfg.StateDir, UID: os.Getuid(), Socket: h.cfg.Socket, Now: h.cfg.Now(),
		Status: &st, Bind: d.Bind, LAN: d.LAN,
	}
	if d.Models != nil {
		in.Models = d.Models()
		if in.Models == nil {
			in.Models = []doctor.ModelFile{}
		}
	}
	if d.SharedMain != nil {
		in.SharedMain = d.SharedMain()
		if in.SharedMain == nil {
			in.SharedMain = []string{}
		}
	}
	if d.Helpers != nil {
		in.Helpers = d.Helpers()
		if in.Helpers == nil {
			in.Helpers = []doctor.Helper{}
		}
	}
	if d.Facts != nil {
		d.Facts(&in)
	}
	return api.NewDoctorReport(doctor.Run(in))
}

func (h *handler) serveDoctor(w http.ResponseWriter, r *http.Request) {
	api.WriteJSON(w, http.StatusOK, h.Doctor())
}
