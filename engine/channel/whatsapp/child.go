package whatsapp

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/channel/channelproc"
	"github.com/openclaw-edge/edge/engine/channel/whatsapp/waconfig"
)

// ServeChild is openclaw-whatsapp (appliance/whatsapp): the adapter of one
// account, built from the gateway's waconfig.Init, served over in and out
// (engine/channel/channelproc). It logs to stderr, which the gateway
// passes on to its own.
func ServeChild(in io.Reader, out io.Writer) error {
	return channelproc.Serve(in, out, func(raw json.RawMessage, store channel.Store) (channel.Adapter, error) {
		var init waconfig.Init
		if err := json.Unmarshal(raw, &init); err != nil {
			return nil, fmt.Errorf("init: %w", err)
		}
		level := slog.LevelInfo
		if init.Debug {
			level = slog.LevelDebug
		}
		log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("channel", ChannelName, "account", init.Account)
		return New(init.Config, Deps{Account: init.Account, StorePath: init.StorePath, Store: store, MediaDir: init.MediaDir, Logger: log})
	})
}
