package api

// PathDoctor is the gateway's self-check (`openclaw doctor`): GET →
// DoctorReport. Every check runs in the gateway process, on the gateway's
// machine, so the report is the same through the socket and the LAN API.
const PathDoctor = "/v1/doctor"

// Doctor check statuses: ok, warn (works, but look at it) and fail (something
// does not work until it is fixed).
const (
	DoctorOK   = "ok"
	DoctorWarn = "warn"
	DoctorFail = "fail"
)

// DoctorCheck is one check of the doctor: Detail says what was found, Fix
// (when the status is not ok) what to do about it.
type DoctorCheck struct {
	Name   string `json:"name"`
	Status string `json:"status"` // DoctorOK | DoctorWarn | DoctorFail
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// DoctorReport is the reply of GET PathDoctor. OK is false when any check
// failed (warnings keep it true).
type DoctorReport struct {
	OK     bool          `json:"ok"`
	Checks []DoctorCheck `json:"checks"`
}

// NewDoctorReport returns the report of checks, with OK computed.
func NewDoctorReport(checks []DoctorCheck) DoctorReport {
	r := DoctorReport{OK: true, Checks: checks}
	if r.Checks == nil {
		r.Checks = []DoctorCheck{}
	}
	for _, c := range checks {
		if c.Status == DoctorFail {
			r.OK = false
		}
	}
	return r
}
