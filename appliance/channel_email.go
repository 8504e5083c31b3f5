//go:build !noemail

package main

import (
	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/channel/email"
)

func init() {
	channelKinds["email"] = channelKind{
		newConfig: func() any { return new(email.Config) },
		common:    func(c any) channel.Common { return c.(*email.Config).Common },
		open: func(c any, d chanDeps) (channel.Adapter, error) {
			return email.New(*c.(*email.Config), email.Deps{Account: d.Account, Store: d.Store, Logger: d.Logger, MediaDir: d.MediaDir, Now: d.Now})
		},
	}
}
