package main

import (
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/gateway"
	"github.com/openclaw-edge/edge/engine/tool/exec/sandbox"
)

// sandboxCmd is the hidden `openclaw-gateway sandbox --workspace W --tmp T
// -- argv…`: the Landlock re-exec helper every exec child runs through
// (docs/design.md §3.7). It loads no config and opens no state: it confines
// itself and becomes argv.
func sandboxCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "sandbox",
		Short:              "Run one command confined to its workspace (internal)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			os.Exit(sandbox.Main(args, os.Stderr)) // returns only when the command could not run
			return nil
		},
	}
}

// execSandbox builds the exec sandbox: this binary's `sandbox` subcommand
// as the helper, the state dir, the config file and the home dir as paths a
// workspace must never contain. It logs one warning when the kernel sandbox
// is off, and one per protected path the read-only system dirs expose.
//
// It also makes the gateway a child subreaper (reaper_linux.go), so that
// nothing an exec command starts can leave the gateway's process tree, and
// the control socket keeps refusing it (peer_linux.go).
func execSandbox(log *slog.Logger, stateDir, configPath string) *sandbox.Landlock {
	if err := becomeSubreaper(log); err != nil {
		log.Warn("exec children that double-fork leave the gateway's process tree; the control socket still refuses sandboxed ones (they cannot open Unix sockets)", "err", err)
	}
	var helper []string
	if self, err := os.Executable(); err == nil {
		helper = []string{self, "sandbox"}
	}
	protected := []string{stateDir, configPath}
	if home, err := os.UserHomeDir(); err == nil {
		protected = append(protected, home)
	}
	sb := sandbox.New(sandbox.Config{Helper: helper, Protected: protected})
	if ok, detail := sb.Status(); !ok {
		log.Warn("exec sandbox " + detail)
	}
	// A warning only, and it walks /etc's readable entries: after
	// start-up, not before the gateway is ready.
	go func() {
		for _, p := range sb.Exposed() {
			log.Warn("exec sandbox: commands can read this protected path (it lies under a system dir they may read); move it", "path", p)
		}
	}()
	return sb
}

// checkWorkspaces warns about each agent workspace the sandbox will refuse
// to run commands in (one that contains the state dir, the config or the
// home dir): exec in that agent fails until the workspace is moved.
func checkWorkspaces(log *slog.Logger, sb *sandbox.Landlock, ags []gateway.Agent) {
	for _, a := range ags {
		if err := sb.Check(a.Workspace); err != nil {
			log.Warn("exec commands of this agent will be refused", "agent", a.ID, "err", err)
		}
	}
}

// sandboxStatus fills the status fields of the sandbox.
func sandboxStatus(sb *sandbox.Landlock, st *api.Status) {
	st.SandboxActive, st.Sandbox = sb.Status()
}
