package whatsapp

import "github.com/openclaw-edge/edge/engine/channel/whatsapp/waconfig"

// Config is channels.whatsapp (or one of channels.whatsapp.accounts.<name>);
// it lives in waconfig, which the gateway links without WhatsApp's library.
type Config = waconfig.Config

// DefaultMediaMaxMB is OpenClaw's channels.whatsapp.mediaMaxMb default.
const DefaultMediaMaxMB = waconfig.DefaultMediaMaxMB
