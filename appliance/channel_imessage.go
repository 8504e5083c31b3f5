//go:build !noimessage

package main

import (
	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/channel/imessage"
)

func init() {
	channelKinds["imessage"] = channelKind{
		newConfig: func() any { return new(imessage.Config) },
		common:    func(c any) channel.Common { return c.(*imessage.Config).Common },
		open: func(c any, d chanDeps) (channel.Adapter, error) {
			return imessage.Open(*c.(*imessage.Config), imessage.Deps{Account: d.Account, Store: d.Store, Logger: d.Logger, MediaDir: d.MediaDir, Now: d.Now})
		},
	}
}
