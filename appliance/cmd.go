package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// execute runs the openclaw-gateway command line and returns the exit code.
func execute(args []string) int {
	root := newRoot()
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "openclaw-gateway:", err)
		return 1
	}
	return 0
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "openclaw-gateway",
		Short:         "The OpenClaw Edge gateway: sessions, tools and models behind one control API",
		Version:       version, // --version, the same string as `version` and `openclaw status`
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("openclaw-gateway {{.Version}}\n")
	var m Main
	run := &cobra.Command{
		Use:   "run",
		Short: "Run the gateway in the foreground until SIGINT/SIGTERM",
		Long: `Run the gateway in the foreground.

State (state.db, the default workspace, the socket, logs) lives in
--state-dir, default $OPENCLAW_STATE_DIR, else ~/.openclaw-edge (not
OpenClaw's ~/.openclaw: both can live on one machine; the appliance uses
/var/lib/openclaw). The config file is --config, else $OPENCLAW_CONFIG_PATH,
else $OPENCLAW_CONFIG, else <state-dir>/openclaw.json or openclaw.json5 (both
there is an error: keep one); without one the embedded defaults are used.
` + "`openclaw config validate`" + ` finds it the same way. A config with any error is
rejected with the file, the key path and the reason, and nothing is started.

Under systemd (Type=notify) READY=1 is sent once the control API listens.`,
		Example: `  openclaw-gateway run
  openclaw-gateway run --config ./openclaw.json --state-dir /var/lib/openclaw`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if m.Now == nil {
				m.Now = testClock() // nil unless a test shifts the clock
			}
			return m.Run(ctx)
		},
	}
	run.Flags().StringVar(&m.ConfigPath, "config", "", "config file (JSON5; default $OPENCLAW_CONFIG_PATH, $OPENCLAW_CONFIG, else <state-dir>/openclaw.json or .json5)")
	run.Flags().StringVar(&m.StateDir, "state-dir", "", "state directory (default $OPENCLAW_STATE_DIR, else ~/.openclaw-edge)")
	run.Flags().StringVar(&m.Socket, "socket", "", "control API socket (default <state-dir>/gateway.sock)")
	// Local models run in openclaw-runner, a binary of its own (see
	// appliance/runner): the gateway never links llama.cpp.
	root.AddCommand(run, sandboxCmd(), pairCodeCmd(), idCmd(), &cobra.Command{
		Use:   "version",
		Short: "Print the gateway version",
		Args:  cobra.NoArgs,
		Run:   func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), "openclaw-gateway", version) },
	})
	return root
}
