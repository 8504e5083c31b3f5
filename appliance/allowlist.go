package main

import (
	"github.com/openclaw-edge/edge/engine/gateway"
	"github.com/openclaw-edge/edge/engine/store/bolt"
	"github.com/openclaw-edge/edge/engine/tool"
	"github.com/openclaw-edge/edge/engine/tool/exec"
)

// allowlist adapts the state database's exec allowlist to the exec tool
// (which checks and adds entries) and the gateway (which lists, adds and
// removes them for the owner). The store may not import the tools
// (docs/design.md §2), so the conversion lives here, with the guards.
type allowlist struct{ db *bolt.DB }

var (
	_ exec.Allowlist    = allowlist{}
	_ gateway.Allowlist = allowlist{}
)

func toStore(e tool.AllowEntry) bolt.AllowEntry {
	return bolt.AllowEntry{Path: e.Path, Argv: e.Argv, Command: e.Command, AddedAt: e.AddedAt}
}

func fromStore(e bolt.AllowEntry) tool.AllowEntry {
	return tool.AllowEntry{Path: e.Path, Argv: e.Argv, Command: e.Command, AddedAt: e.AddedAt}
}

func (a allowlist) Allowed(agentID string, e tool.AllowEntry) (bool, error) {
	return a.db.AllowlistHas(agentID, toStore(e))
}

func (a allowlist) Add(agentID string, e tool.AllowEntry) error {
	return a.db.AllowlistAdd(agentID, toStore(e))
}

func (a allowlist) List(agentID string) ([]tool.AllowEntry, error) {
	list, err := a.db.AllowlistList(agentID)
	if err != nil {
		return nil, err
	}
	out := make([]tool.AllowEntry, len(list))
	for i, e := range list {
		out[i] = fromStore(e)
	}
	return out, nil
}

func (a allowlist) Remove(agentID string, e tool.AllowEntry) (tool.AllowEntry, bool, error) {
	old, ok, err := a.db.AllowlistRemove(agentID, toStore(e))
	return fromStore(old), ok, err
}
