//go:build !notelegram

package main

import (
	"os"

	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/channel/telegram"
)

// Telegram runs in the gateway: its library is the Bot API's types over
// net/http, which the gateway links anyway (1.15 MB of binary, 0.025 ms of
// init, 0.35 MB of idle RSS where it is not configured:
// docs/benchmarks.md). A child process like openclaw-whatsapp's would save
// those 0.35 MB for a seventh binary and a pipe for every preview edit.
func init() {
	channelKinds["telegram"] = channelKind{
		newConfig: func() any { return new(telegram.Config) },
		common:    func(c any) channel.Common { return c.(*telegram.Config).Common },
		open: func(c any, d chanDeps) (channel.Adapter, error) {
			return telegram.New(*c.(*telegram.Config), telegram.Deps{Account: d.Account, Store: d.Store, Logger: d.Logger, MediaDir: d.MediaDir, Now: d.Now, Getenv: os.Getenv})
		},
	}
}
