package main

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/access"
	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/config"
	"github.com/openclaw-edge/edge/engine/delivery"
	"github.com/openclaw-edge/edge/engine/inbound"
	"github.com/openclaw-edge/edge/engine/routing"
)

// channelKind is one channel adapter package as the wiring sees it. Each
// registers itself in channelKinds from a file with its own build tag
// (nowhatsapp, noimessage, noemail leave it out of the build).
type channelKind struct {
	// newConfig returns a pointer to the adapter package's Config.
	newConfig func() any
	// common returns the access keys in a decoded config.
	common func(cfg any) channel.Common
	// open builds the adapter of one account.
	open func(cfg any, d chanDeps) (channel.Adapter, error)
}

// chanDeps is what the wiring hands every adapter.
type chanDeps struct {
	Account  string
	StateDir string // the channel's own directory under the state dir
	MediaDir string
	Store    channel.Store
	Logger   *slog.Logger
	Now      func() time.Time
}

var channelKinds = map[string]channelKind{}

// whatsappEnv, when set, is openclaw-whatsapp's path (tests, unusual
// installs); otherwise it is looked for beside the gateway, then on $PATH.
const whatsappEnv = "OPENCLAW_WHATSAPP"

// whatsappBinary is openclaw-whatsapp (engine.FindProgram): $OPENCLAW_WHATSAPP
// (whatsappEnv), else beside the gateway, else on $PATH.
func whatsappBinary() (string, error) {
	return engine.FindProgram("openclaw-whatsapp", whatsappEnv)
}

// builtinChannels are served by the control API itself.
var builtinChannels = []string{"cli", "webchat"}

// buildChannels builds every configured channel account. A channel this
// build does not have (OpenClaw's telegram, discord …, or one left out
// by a build tag) is logged and skipped: a migrated config still starts.
func buildChannels(cfg *config.Config, stateDir string, db engine.Records, log *slog.Logger, now func() time.Time) ([]inbound.Account, error) {
	mentions, err := access.CompileMentions(cfg.Messages.GroupChat.MentionPatterns)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(cfg.Channels))
	for name := range cfg.Channels {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []inbound.Account
	for _, name := range names {
		if slices.Contains(builtinChannels, name) {
			continue
		}
		kind, ok := channelKinds[name]
		if !ok {
			log.Warn("channel not available in this gateway; its config is ignored", "channel", name, "available", strings.Join(availableChannels(), ", "))
			continue
		}
		metas, vals, err := cfg.DecodeChannelAccounts(name, kind.newConfig)
		if err != nil {
			return nil, err
		}
		for i, meta := range metas {
			// config.Load already refused these with their lines (package
			// identity, the same rules): this is the same check of what the
			// adapter decoded, before anything is opened.
			pol := &access.Policy{Channel: name, Common: kind.common(vals[i]), Owners: cfg.Commands.OwnerAllowFrom, Mentions: mentions}
			if err := pol.Validate(); err != nil {
				return nil, err
			}
			dir := filepath.Join(stateDir, "channels", name)
			mediaDir := filepath.Join(dir, "media", meta.ID)
			a, err := kind.open(vals[i], chanDeps{
				Account:  meta.ID,
				StateDir: dir,
				MediaDir: mediaDir,
				Store:    inbound.ChannelStore(db, name, meta.ID),
				Logger:   log.With("channel", name, "account", meta.ID),
				Now:      now,
			})
			if err != nil {
				return nil, fmt.Errorf("channels.%s (account %s): %w", name, meta.ID, err)
			}
			out = append(out, inbound.Account{Adapter: a, Policy: pol, ChunkLimit: meta.ChunkLimit, ChunkMode: delivery.ChunkMode(meta.ChunkMode), MediaDir: mediaDir})
		}
	}
	return out, nil
}

func availableChannels() []string {
	var names []string
	for n := range channelKinds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// routingBindings converts the config's bindings.
func routingBindings(bs []config.Binding) []routing.Binding {
	out := make([]routing.Binding, 0, len(bs))
	for _, b := range bs {
		rb := routing.Binding{AgentID: b.AgentID, Channel: b.Match.Channel, Account: b.Match.AccountID}
		if b.Match.Peer != nil {
			rb.PeerKind, rb.PeerID = b.Match.Peer.Kind, b.Match.Peer.ID
		}
		out = append(out, rb)
	}
	return out
}
