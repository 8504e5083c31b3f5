package exec

import "github.com/openclaw-edge/edge/engine/tool"

// Sandbox confines every exec child (docs/design.md §3.7): the appliance wires a
// Landlock re-exec helper (`openclaw-gateway sandbox -- argv…`); nil means
// policy only, and Status says so.
type Sandbox interface {
	// Wrap returns the argv that runs argv confined: write access only to
	// workspace, tmp and /dev/null; read access to the workspace and the
	// system directories, never the state dir or the config.
	Wrap(argv []string, workspace, tmp string) ([]string, error)
	// Status reports whether the kernel sandbox is active and a short
	// detail for `status` and `doctor` ("landlock ABI 6", "off: …").
	Status() (active bool, detail string)
}

// Allowlist is the persisted per-agent list of commands the owner approved
// for good. Implementations match entries exactly (tool.AllowEntry).
type Allowlist interface {
	Allowed(agentID string, e tool.AllowEntry) (bool, error)
	Add(agentID string, e tool.AllowEntry) error
}
