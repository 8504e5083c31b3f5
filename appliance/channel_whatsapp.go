//go:build !nowhatsapp

package main

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"

	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/channel/channelproc"
	"github.com/openclaw-edge/edge/engine/channel/whatsapp/waconfig"
)

// WhatsApp runs in openclaw-whatsapp, a child process per account
// (engine/channel/channelproc): the gateway links only its config
// (waconfig), so a box without WhatsApp pays nothing for it.
func init() {
	channelKinds["whatsapp"] = channelKind{
		newConfig: func() any { return new(waconfig.Config) },
		common:    func(c any) channel.Common { return c.(*waconfig.Config).Common },
		open: func(c any, d chanDeps) (channel.Adapter, error) {
			cfg := *c.(*waconfig.Config)
			if err := cfg.Validate(); err != nil {
				return nil, fmt.Errorf("channels.whatsapp: %w", err)
			}
			init := waconfig.Init{Config: cfg, Account: d.Account, StorePath: whatsappStorePath(d), MediaDir: d.MediaDir,
				Debug: d.Logger.Enabled(context.Background(), slog.LevelDebug)}
			return channelproc.New(channelproc.Config{
				Channel: "whatsapp", Account: d.Account, Init: init, Store: d.Store,
				MaxMediaBytes: cfg.MediaMaxBytes(), Logger: d.Logger,
				Command: func() *exec.Cmd {
					p, err := whatsappBinary()
					if err != nil {
						return &exec.Cmd{Path: "openclaw-whatsapp", Err: err} // Start returns err
					}
					return exec.Command(p)
				},
			}), nil
		},
	}
}

// whatsappStorePath is the account's whatsmeow device store.
func whatsappStorePath(d chanDeps) string { return filepath.Join(d.StateDir, d.Account+".db") }
