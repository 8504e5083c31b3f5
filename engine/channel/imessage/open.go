package imessage

import (
	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/channel/bluebubbles"
)

// Open returns the adapter cfg.Backend selects: the imsg adapter (New) or
// the BlueBubbles one (bluebubbles.New with cfg.BlueBubbles). Both report
// the channel "imessage". Deps.Store and Deps.MediaDir are the imsg
// backend's; BlueBubbles keeps no cursor.
func Open(cfg Config, deps Deps) (channel.Adapter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.withDefaults().Backend == BackendBlueBubbles {
		return bluebubbles.New(cfg.BlueBubbles, bluebubbles.Deps{Account: deps.Account, Logger: deps.Logger, Now: deps.Now})
	}
	return New(cfg, deps)
}
