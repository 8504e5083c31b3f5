//go:build !notelegram

package main

import (
	"os"

	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/channel/telegram"
)

// Telegram runs in the gateway: its library is the Bot API's types over
// net/http, which the gateway links anyway (0.6 MB, 0.05 ms of init;
// engine/channel/telegram), so a child process would cost more than it
// saves.
func init() {
	channelKinds["telegram"] = channelKind{
		newConfig: func() any { return new(telegram.Config) },
		common:    func(c any) channel.Common { return c.(*telegram.Config).Common },
		open: func(c any, d chanDeps) (channel.Adapter, error) {
			return telegram.New(*c.(*telegram.Config), telegram.Deps{Account: d.Account, Store: d.Store, Logger: d.Logger, MediaDir: d.MediaDir, Now: d.Now, Getenv: os.Getenv})
		},
	}
}
