package api

import (
	"net/http"
	"strings"
)

// Access says what a route of the control API does.
type Access int

const (
	// Read only looks: a viewer device may call it.
	Read Access = iota + 1
	// Write changes something, runs something or costs something: a turn
	// (tools, exec), a decision, a setting, a pairing, a file, a model,
	// the memory index. Only operators (and the local socket) may.
	Write
)

// Route is one endpoint of the control API, as the gateway serves it.
// Path may end in "/{id}": any one more path segment.
type Route struct {
	Method string
	Path   string
	Access Access
}

// Routes lists every endpoint of the control API with what it does. It is
// the one place the viewer role is decided from (ViewerMay); a test walks
// the handlers' registrations and fails on a route missing here, so a new
// endpoint is refused to viewers until it is classified.
//
// Two POSTs only read: memory search (a query; the index it may refresh
// is a cache of the workspace files) and config validate (checks the
// file, changes nothing). No GET changes anything: each one was checked
// for side effects (doctor only reads; logs only stream).
var Routes = []Route{
	{http.MethodGet, PathStatus, Read},
	{http.MethodPost, PathMessages, Write}, // a model turn: tools, exec, approvals
	{http.MethodGet, PathSessions, Read},
	{http.MethodGet, PathSessionHistory, Read},
	{http.MethodPost, PathSessionReset, Write},
	{http.MethodPost, PathSessionDelete, Write}, // the session and its transcript, for good
	{http.MethodGet, PathSessionExport, Read},
	{http.MethodPost, PathSessionImport, Write},
	{http.MethodGet, PathApprovals, Read},
	{http.MethodPost, PathApprovals + "/{id}", Write}, // approve / deny / elevate
	{http.MethodGet, PathApprovalAllowlist, Read},
	{http.MethodPost, PathApprovalAllowlist, Write},
	{http.MethodDelete, PathApprovalAllowlist, Write},
	{http.MethodPut, PathWorkspaceFile, Write},
	{http.MethodGet, PathDoctor, Read},
	{http.MethodGet, PathLogs, Read},
	{http.MethodGet, PathConfig, Read}, // secrets come back redacted
	{http.MethodPost, PathConfigSet, Write},
	{http.MethodPost, PathConfigUnset, Write},
	{http.MethodPost, PathConfigValidate, Read},
	{http.MethodGet, PathChannels, Read},
	{http.MethodPost, PathChannelLogin, Write},
	{http.MethodPost, PathChannelLogout, Write},
	{http.MethodGet, PathPairing, Read},
	{http.MethodPost, PathPairingApprove, Write},
	{http.MethodPost, PathPairingDeny, Write},
	{http.MethodPost, PathMessageSend, Write},
	{http.MethodGet, PathModels, Read},
	{http.MethodGet, PathModelInfo, Read},
	{http.MethodPost, PathModelImport, Write},
	{http.MethodPost, PathModelPull, Write},
	{http.MethodPost, PathModelRemove, Write},
	{http.MethodPost, PathModelUpload, Write},
	{http.MethodPut, PathModelUpload + "/{id}", Write},
	{http.MethodGet, PathModelUpload + "/{id}", Read},
	{http.MethodPost, PathModelUploadFinish, Write},
	{http.MethodGet, PathMemoryStatus, Read},
	{http.MethodPost, PathMemorySearch, Read},
	{http.MethodPost, PathMemoryIndex, Write},
	{http.MethodPost, PathPairStart, Write}, // TLS, before a device is known
	{http.MethodPost, PathPairFinish, Write},
	{http.MethodPost, PathPairCode, Write}, // local socket only
	{http.MethodGet, PathDevices, Read},
	{http.MethodPost, PathDeviceRevoke, Write},
	{http.MethodPost, PathDeviceRename, Write},
	{http.MethodPost, PathDeviceRole, Write},
	{http.MethodGet, PathWhoAmI, Read},
	{http.MethodGet, PathCron, Read},
	{http.MethodPost, PathCron, Write}, // a job runs turns later, as its creator
	{http.MethodGet, PathCronJob, Read},
	{http.MethodPost, PathCronEdit, Write},
	{http.MethodPost, PathCronRemove, Write},
	{http.MethodPost, PathCronRun, Write}, // a turn now
	{http.MethodGet, PathCronRuns, Read},
	{http.MethodGet, PathCronStatus, Read},
	{http.MethodGet, PathHeartbeat, Read},
	{http.MethodPost, PathHeartbeatGo, Write}, // a heartbeat turn now
	{http.MethodGet, PathDashboard, Read},     // the dashboard's static files
	{http.MethodGet, PathDashboardAsset, Read},
}

// RouteAccess is what method on path does; ok is false for a route not in
// Routes. HEAD is GET's.
func RouteAccess(method, path string) (Access, bool) {
	if method == http.MethodHead {
		method = http.MethodGet
	}
	for _, r := range Routes {
		if r.Method != method {
			continue
		}
		if prefix, ok := strings.CutSuffix(r.Path, "/{id}"); ok {
			if id, ok := strings.CutPrefix(path, prefix+"/"); ok && id != "" && !strings.Contains(id, "/") {
				return r.Access, true
			}
			continue
		}
		if r.Path == path {
			return r.Access, true
		}
	}
	return 0, false
}

// ViewerMay reports whether a viewer device may call method on path: only
// a route Routes lists as Read. Anything else — a write, an unknown path or
// method — is refused, so a route nobody classified is never open to
// viewers.
func ViewerMay(method, path string) bool {
	a, ok := RouteAccess(method, path)
	return ok && a == Read
}
