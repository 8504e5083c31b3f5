//go:build !nowhatsapp

package main

import (
	"path/filepath"

	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/channel/whatsapp"
)

func init() {
	channelKinds["whatsapp"] = channelKind{
		newConfig: func() any { return new(whatsapp.Config) },
		common:    func(c any) channel.Common { return c.(*whatsapp.Config).Common },
		open: func(c any, d chanDeps) (channel.Adapter, error) {
			return whatsapp.New(*c.(*whatsapp.Config), whatsappDeps(d))
		},
	}
}

// whatsappDeps is what the wiring hands a WhatsApp account; the gateway's
// end-to-end test adds its fake connection (Deps.Dial) to the same.
func whatsappDeps(d chanDeps) whatsapp.Deps {
	return whatsapp.Deps{
		Account:   d.Account,
		StorePath: filepath.Join(d.StateDir, d.Account+".db"),
		Store:     d.Store,
		MediaDir:  d.MediaDir,
		Logger:    d.Logger,
		Now:       d.Now,
	}
}
