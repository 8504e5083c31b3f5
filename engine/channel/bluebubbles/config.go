package bluebubbles

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Config is channels.imessage.bluebubbles (used when channels.imessage.backend
// is "bluebubbles"). The key names follow OpenClaw's channels.bluebubbles
// (serverUrl, password, webhookPath, mediaMaxMb); webhookListen is ours:
// OpenClaw mounts the webhook on its gateway HTTP server, while this adapter
// serves it on its own listener so the control API never faces the LAN for
// it.
type Config struct {
	// ServerURL is the BlueBubbles server's REST base, e.g.
	// "http://192.168.1.100:1234".
	ServerURL string `json:"serverUrl"`
	// Password is the server's API password. It authenticates our REST calls
	// (the `password` query parameter, as BlueBubbles requires) and the
	// webhooks the server posts to us (the same password in the webhook
	// URL's `password` query parameter, as OpenClaw documents).
	Password string `json:"password"`
	// WebhookPath is the path the webhook is served on (default
	// "/bluebubbles-webhook").
	WebhookPath string `json:"webhookPath"`
	// WebhookListen is the host:port the webhook listener binds, e.g.
	// "127.0.0.1:18790" or "192.168.1.10:18790" (required).
	WebhookListen string `json:"webhookListen"`
	// MediaMaxMB caps inbound and outbound attachments (default 8, as
	// OpenClaw's channels.bluebubbles.mediaMaxMb).
	MediaMaxMB int `json:"mediaMaxMb"`
}

// DefaultWebhookPath is OpenClaw's default webhook path.
const DefaultWebhookPath = "/bluebubbles-webhook"

// DefaultMediaMaxMB is OpenClaw's default BlueBubbles media cap.
const DefaultMediaMaxMB = 8

// Validate checks c; prefix names where it lives in the config (e.g.
// "channels.imessage.bluebubbles") so errors name the bad key.
func (c Config) Validate(prefix string) error {
	if prefix == "" {
		prefix = "bluebubbles"
	}
	u, err := url.Parse(c.ServerURL)
	switch {
	case c.ServerURL == "":
		return fmt.Errorf("%s.serverUrl: required", prefix)
	case err != nil:
		return fmt.Errorf("%s.serverUrl: %w", prefix, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%s.serverUrl: scheme must be http or https, not %q", prefix, u.Scheme)
	case u.Host == "":
		return fmt.Errorf("%s.serverUrl: no host", prefix)
	case u.User != nil:
		return fmt.Errorf("%s.serverUrl: credentials belong in password, not the URL", prefix)
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("%s.serverUrl: no query or fragment allowed", prefix)
	}
	if c.Password == "" {
		return fmt.Errorf("%s.password: required (the BlueBubbles server API password)", prefix)
	}
	if strings.ContainsFunc(c.Password, isControl) {
		return fmt.Errorf("%s.password: contains control characters", prefix)
	}
	if p := c.WebhookPath; p != "" && (!strings.HasPrefix(p, "/") || strings.ContainsAny(p, "?# \t") || strings.ContainsFunc(p, isControl)) {
		return fmt.Errorf("%s.webhookPath: must be an absolute path without query, e.g. %q", prefix, DefaultWebhookPath)
	}
	if c.WebhookListen == "" {
		return fmt.Errorf("%s.webhookListen: required (host:port the webhook listener binds, e.g. 127.0.0.1:18790)", prefix)
	}
	if _, port, err := net.SplitHostPort(c.WebhookListen); err != nil || port == "" {
		return fmt.Errorf("%s.webhookListen: want host:port: %v", prefix, err)
	}
	if c.MediaMaxMB < 0 {
		return fmt.Errorf("%s.mediaMaxMb: must not be negative", prefix)
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
