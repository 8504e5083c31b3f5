package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/config"
	"github.com/openclaw-edge/edge/engine/pair"
)

// boxFlags are the flags `run` shares with the commands that ask the
// running gateway or read its state.
type boxFlags struct{ config, stateDir, socket string }

func (f *boxFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.config, "config", "", "config file (JSON5), as given to run")
	c.Flags().StringVar(&f.stateDir, "state-dir", "", "state directory, as given to run")
	c.Flags().StringVar(&f.socket, "socket", "", "control API socket, as given to run")
}

// main resolves the paths exactly as `run` does.
func (f *boxFlags) main() (*Main, *config.Config, error) {
	m := &Main{ConfigPath: f.config, StateDir: f.stateDir, Socket: f.socket}
	if err := m.resolvePaths(); err != nil {
		return nil, nil, err
	}
	cfg, err := config.LoadIn(m.ConfigPath, m.StateDir)
	if err != nil {
		return nil, nil, fmt.Errorf("config rejected:\n%w", err)
	}
	m.resolveSocket(cfg)
	return m, cfg, nil
}

func pairCodeCmd() *cobra.Command {
	var f boxFlags
	var asJSON bool
	c := &cobra.Command{
		Use:   "pair-code",
		Short: "Make a pairing code for `openclaw pair` (asks the running gateway)",
		Long: `Ask the running gateway for a new pairing code and print it. Type it on the
laptop that runs ` + "`openclaw pair`" + `. A code works once, for 10 minutes, and is
locked after 5 wrong tries; a new code replaces the old one.`,
		Example: `  openclaw-gateway pair-code
  sudo -u openclaw openclaw-gateway pair-code --socket /run/openclaw/gateway.sock --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, _, err := f.main()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			pc, err := client.New(m.Socket).PairCode(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(pc)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Pairing code: %s (valid until %s, once)\nOn your laptop: openclaw pair --code %s\n",
				pair.FormatCode(pc.Code), pc.ExpiresAt.Local().Format(time.Kitchen), pc.Code)
			return nil
		},
	}
	f.add(c)
	c.Flags().BoolVar(&asJSON, "json", false, `print {"code","expiresAt"}`)
	return c
}

func idCmd() *cobra.Command {
	var f boxFlags
	c := &cobra.Command{
		Use:   "id",
		Short: "Print the gateway's device id (a hash of its key; `openclaw pair` shows the same)",
		Long: `Print the gateway's device id: the first 80 bits of the SHA-256 of its public
key, as XXXX-XXXX-XXXX-XXXX. Compare it with what ` + "`openclaw pair`" + ` shows on the
laptop. The key is made at the gateway's first start (in <state-dir>/identity).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, _, err := f.main()
			if err != nil {
				return err
			}
			id, err := gatewayIdentity(m.StateDir)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), id.Fingerprint.ID())
			return nil
		},
	}
	f.add(c)
	return c
}
