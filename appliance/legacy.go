package main

import (
	"os"
	"path/filepath"

	"github.com/openclaw-edge/edge/engine/config"
)

// legacyState says where an earlier OpenClaw Edge kept what this one no
// longer finds by default, and what to do; "" when there is nothing. Before
// the state dir became ~/.openclaw-edge (so as not to collide with a real
// OpenClaw), a user install used ~/.openclaw, and the default workspace
// was ~/.openclaw/workspace even on the appliance (whose home is its state
// dir). Only our own files count as evidence (state.db is bbolt, OpenClaw
// has none), so a real OpenClaw's ~/.openclaw is never mistaken for ours.
// Nothing is moved: the user decides.
func legacyState(loc config.Location, cfg *config.Config, home string) string {
	if home == "" {
		return ""
	}
	old := filepath.Join(home, ".openclaw")
	if loc.StateDirFrom == config.StateFromDefault && exists(filepath.Join(old, "state.db")) && !exists(filepath.Join(loc.StateDir, "state.db")) {
		return "an earlier OpenClaw Edge kept its state in " + old + " (state.db); the default state dir is now " + loc.StateDir +
			": move it (mv " + old + " " + loc.StateDir + ") or start with --state-dir " + old
	}
	ws := filepath.Join(loc.StateDir, "workspace")
	oldWS := filepath.Join(old, "workspace")
	if cfg.Agents.Defaults.Workspace == ws && home == loc.StateDir && exists(oldWS) && !exists(ws) {
		return "an earlier OpenClaw Edge kept the default workspace in " + oldWS + "; it is now " + ws +
			": move it (mv " + oldWS + " " + ws + ") or set agents.defaults.workspace"
	}
	return ""
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
