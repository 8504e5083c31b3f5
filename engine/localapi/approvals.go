package localapi

import (
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/tool"
	"github.com/openclaw-edge/edge/engine/tool/exec"
)

// Control API handlers.

// approvalRoutes are the approval endpoints of the route table.
// "/v1/approvals/allowlist" is more specific than "/v1/approvals/{id}", so
// the allowlist is never taken for an approval id.
func (h *handler) approvalRoutes() []Route {
	return []Route{
		{"GET", api.PathApprovals, h.serveApprovals},
		{"POST", api.PathApprovals + "/{id}", jsonBody(maxSendBody, h.serveDecide)},
		{"GET", api.PathApprovalAllowlist, h.serveAllowlist},
		{"POST", api.PathApprovalAllowlist, h.serveAllowlistAdd},
		{"DELETE", api.PathApprovalAllowlist, h.serveAllowlistRemove},
	}
}

func (h *handler) serveApprovals(w http.ResponseWriter, r *http.Request) {
	api.WriteJSON(w, http.StatusOK, h.gw.Approvals())
}

func (h *handler) serveDecide(r *http.Request, req api.ApprovalDecision) (api.ApprovalResult, error) {
	if req.Decision == "" {
		return api.ApprovalResult{}, badRequest(`missing "decision" (one of ` + strings.Join(api.Decisions, ", ") + ")")
	}
	ap, err := h.gw.Decide("", r.PathValue("id"), tool.Decision(req.Decision))
	if err != nil {
		return api.ApprovalResult{}, err
	}
	h.log.Info("exec approval decided", "id", ap.ID, "session", ap.SessionKey, "decision", req.Decision)
	return api.ApprovalResult{Decision: req.Decision, Approval: ap}, nil
}

// allowAgent resolves the agent of an allowlist request ("" = default).
func (h *handler) allowAgent(id string) (string, error) {
	if h.gw.Allowlist() == nil {
		return "", &api.Error{Code: api.CodeNotFound, Message: "this gateway keeps no exec allowlist (it was started without a state database)"}
	}
	if id == "" {
		id = h.gw.DefaultAgent()
	}
	if h.gw.Agent(id) == nil {
		return "", &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("agent %q is not configured (agents: %s)", api.EscapeControl(id), strings.Join(h.gw.AgentIDs(), ", "))}
	}
	return id, nil
}

func (h *handler) serveAllowlist(w http.ResponseWriter, r *http.Request) {
	agentID, err := h.allowAgent(r.URL.Query().Get("agent"))
	if err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	list, err := h.gw.Allowlist().List(agentID)
	if err != nil {
		api.WriteError(w, asAPIError(h.gw.Internal("read the allowlist", err)))
		return
	}
	out := make([]api.AllowEntry, 0, len(list))
	for _, e := range list {
		out = append(out, api.AllowEntry{AgentID: agentID, Path: e.Path, Argv: e.Argv, Command: e.Command, AddedAt: e.AddedAt})
	}
	api.WriteJSON(w, http.StatusOK, out)
}

// allowEntry reads and checks the entry of an allowlist POST or DELETE.
func (h *handler) allowEntry(w http.ResponseWriter, r *http.Request) (string, tool.AllowEntry, error) {
	var in api.AllowEntry
	if err := decodeJSON(w, r, maxSendBody, &in); err != nil {
		return "", tool.AllowEntry{}, err
	}
	agentID, err := h.allowAgent(in.AgentID)
	if err != nil {
		return "", tool.AllowEntry{}, err
	}
	switch {
	case len(in.Argv) == 0 && in.Command == "":
		return "", tool.AllowEntry{}, badRequest(`give "argv" (one simple command, e.g. ["git","status"]) or "command" (the exact text of any other command)`)
	case len(in.Argv) > 0 && in.Command != "":
		return "", tool.AllowEntry{}, badRequest(`give "argv" or "command", not both`)
	case len(in.Argv) > 0 && in.Argv[0] == "":
		return "", tool.AllowEntry{}, badRequest("argv[0] is empty")
	case len(in.Argv) == 0 && in.Path != "":
		return "", tool.AllowEntry{}, badRequest(`"path" needs the "argv" it belongs to`)
	case in.Path != "" && !filepath.IsAbs(in.Path):
		return "", tool.AllowEntry{}, badRequest(fmt.Sprintf("path %q is not absolute", api.EscapeControl(in.Path)))
	}
	e := tool.AllowEntry{Path: in.Path, Argv: in.Argv, Command: in.Command, AddedAt: in.AddedAt}
	if len(e.Argv) > 0 && e.Path == "" {
		p, err := resolveBin(e.Argv[0], h.gw.Agent(agentID).Workspace)
		if err != nil {
			return "", tool.AllowEntry{}, badRequest(fmt.Sprintf("cannot resolve %q on the gateway: %v; give its absolute path (\"path\")", api.EscapeControl(e.Argv[0]), err))
		}
		e.Path = p
	}
	return agentID, e, nil
}

// resolveBin finds argv0 exactly as the exec tool does (its fixed PATH,
// not the gateway's; a relative path from the workspace; then symlinks), so
// an entry added here matches the commands the exec tool checks.
func resolveBin(argv0, workspace string) (string, error) {
	if p := exec.LookPath(argv0, workspace); p != "" {
		return p, nil
	}
	if strings.ContainsRune(argv0, '/') {
		return "", errors.New("no such executable file")
	}
	return "", fmt.Errorf("executable file not found in %s", exec.SafePath)
}

func (h *handler) serveAllowlistAdd(w http.ResponseWriter, r *http.Request) {
	agentID, e, err := h.allowEntry(w, r)
	if err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	if e.AddedAt.IsZero() {
		e.AddedAt = h.cfg.Now().UTC()
	}
	if err := h.gw.Allowlist().Add(agentID, e); err != nil {
		api.WriteError(w, asAPIError(h.gw.Internal("add to the allowlist", err)))
		return
	}
	h.log.Info("exec allowlist entry added", "agent", agentID, "path", e.Path, "argv", e.Argv, "command", e.Command)
	api.WriteJSON(w, http.StatusOK, api.AllowEntry{AgentID: agentID, Path: e.Path, Argv: e.Argv, Command: e.Command, AddedAt: e.AddedAt})
}

func (h *handler) serveAllowlistRemove(w http.ResponseWriter, r *http.Request) {
	agentID, e, err := h.allowEntry(w, r)
	if err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	old, ok, err := h.gw.Allowlist().Remove(agentID, e)
	if err != nil {
		api.WriteError(w, asAPIError(h.gw.Internal("remove from the allowlist", err)))
		return
	}
	if !ok {
		what := api.EscapeArgv(e.Argv) + " (" + api.EscapeControl(e.Path) + ")"
		if len(e.Argv) == 0 {
			what = "`" + api.EscapeControl(e.Command) + "`"
		}
		api.WriteError(w, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("agent %s's allowlist has no entry %s (see `openclaw approvals allowlist list --agent %s`)", agentID, what, agentID)})
		return
	}
	h.log.Info("exec allowlist entry removed", "agent", agentID, "path", old.Path, "argv", old.Argv, "command", old.Command)
	api.WriteJSON(w, http.StatusOK, api.AllowRemoved{Removed: api.AllowEntry{AgentID: agentID, Path: old.Path, Argv: old.Argv, Command: old.Command, AddedAt: old.AddedAt}})
}
