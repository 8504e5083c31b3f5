package telegram

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/openclaw-edge/edge/engine/channel"
)

// Config is one account of channels.telegram, with OpenClaw's keys
// (docs.openclaw.ai/channels/telegram). Keys of OpenClaw's schema this
// adapter does not implement (webhooks, reactions, custom commands …)
// are accepted with a warning and ignored (OpenClawKeys).
type Config struct {
	channel.Common
	// BotToken is the token @BotFather gave ("123456:ABC…"). A secret:
	// redacted by `config get`, never logged, never in an error.
	BotToken string `json:"botToken"`
	// TokenFile holds the token instead (its first line); BotToken wins
	// when both are set. For the default account, $TELEGRAM_BOT_TOKEN
	// is the last resort, as in OpenClaw.
	TokenFile string `json:"tokenFile"`
	// APIRoot is the Bot API's base URL (default https://api.telegram.org):
	// a self-hosted telegram-bot-api server, or a test's.
	APIRoot string `json:"apiRoot"`
	// StreamMode: "partial" (default, as OpenClaw's) shows the reply as it
	// is written, in one message edited at most once a second (every 3 s
	// in groups: Telegram's limits); "off" sends it when complete.
	// OpenClaw's "block" is read as "partial".
	StreamMode string `json:"streamMode"`
	// ReplyToMode: when a reply quotes the message it answers: "first"
	// (default: its first message), "all" (every message of it), "off"
	// (never; groups still quote, so it is clear whom the bot answers).
	ReplyToMode string `json:"replyToMode"`
	// MediaMaxMB caps a received file (photos, documents, voice notes;
	// default 5, as OpenClaw's). Larger ones are noted in the text, not
	// downloaded. The Bot API serves at most 20 MB to bots anyway.
	MediaMaxMB float64 `json:"mediaMaxMb"`
	// Name is the account's label (OpenClaw's), shown by channels status.
	Name string `json:"name"`
	// TimeoutSeconds bounds one Bot API call other than the long poll
	// (default 30).
	TimeoutSeconds int `json:"timeoutSeconds"`
}

// Defaults.
const (
	DefaultAPIRoot    = "https://api.telegram.org"
	DefaultMediaMaxMB = 5
	// TokenEnv is OpenClaw's fallback for the default account's token.
	TokenEnv = "TELEGRAM_BOT_TOKEN"
)

// OpenClawKeys are channels.telegram keys of OpenClaw's schema that this
// adapter accepts and ignores (config.OpenClawKeyer).
func (*Config) OpenClawKeys() []string {
	return []string{
		"webhookUrl", "webhookSecret", "webhookPath", "webhookHost", "webhookPort",
		"proxy", "network", "linkPreview", "actions", "reactionNotifications",
		"reactionLevel", "customCommands", "commands", "capabilities", "draftChunk",
		"blockStreaming", "blockStreamingCoalesce", "historyLimit", "dmHistoryLimit",
		"dms", "retry", "configWrites", "heartbeat", "markdown", "responsePrefix",
		"timeout", "defaultTo", "execApprovals", "errorPolicy", "threadBindings",
	}
}

// ErrNoToken: no token in the config, its file or the environment.
var ErrNoToken = errors.New("no bot token")

// Token returns the account's bot token: botToken, else tokenFile's first
// line, else (for the default account only) $TELEGRAM_BOT_TOKEN.
func (c *Config) Token(account string, getenv func(string) string) (string, error) {
	if t := strings.TrimSpace(c.BotToken); t != "" {
		return t, checkToken(t, "botToken")
	}
	if c.TokenFile != "" {
		b, err := os.ReadFile(c.TokenFile)
		if err != nil {
			return "", fmt.Errorf("tokenFile: %w", err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		t := strings.TrimSpace(line)
		if t == "" {
			return "", fmt.Errorf("tokenFile %s is empty", c.TokenFile)
		}
		return t, checkToken(t, "tokenFile "+c.TokenFile)
	}
	if account == "default" && getenv != nil {
		if t := strings.TrimSpace(getenv(TokenEnv)); t != "" {
			return t, checkToken(t, "$"+TokenEnv)
		}
	}
	return "", fmt.Errorf("%w: set botToken or tokenFile (or $%s for the default account); @BotFather's /newbot gives one", ErrNoToken, TokenEnv)
}

// checkToken refuses what cannot be a token, without echoing it: it goes
// into the request path, so "/", "?" or "#" would reach another URL.
func checkToken(t, where string) error {
	id, secret, ok := strings.Cut(t, ":")
	bad := !ok || id == "" || secret == "" || len(t) > 256
	for _, r := range id {
		bad = bad || r < '0' || r > '9'
	}
	for _, r := range secret {
		bad = bad || !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	}
	if bad {
		return fmt.Errorf("%s is not a bot token (want <digits>:<letters, digits, _ and ->, as @BotFather gives it)", where)
	}
	return nil
}

// Validate checks the keys this adapter reads (the access keys are the
// gateway's to check).
func (c *Config) Validate() error {
	if c.APIRoot != "" {
		u, err := url.Parse(c.APIRoot)
		switch {
		case err != nil:
			return fmt.Errorf("apiRoot: %w", err)
		case u.Scheme != "http" && u.Scheme != "https":
			return fmt.Errorf("apiRoot: scheme must be https (or http for a server on this machine), not %q", u.Scheme)
		case u.Host == "":
			return errors.New("apiRoot: no host")
		case u.User != nil || u.RawQuery != "" || u.Fragment != "":
			return errors.New("apiRoot: only scheme, host and path (no credentials, query or fragment)")
		}
	}
	switch c.StreamMode {
	case "", "off", "partial", "block":
	default:
		return fmt.Errorf("streamMode: %q is not one of off, partial", c.StreamMode)
	}
	switch c.ReplyToMode {
	case "", "off", "first", "all":
	default:
		return fmt.Errorf("replyToMode: %q is not one of off, first, all", c.ReplyToMode)
	}
	if c.MediaMaxMB < 0 || c.MediaMaxMB > 2000 {
		return fmt.Errorf("mediaMaxMb: %v is out of range (0 to 2000; 0 = the default %d)", c.MediaMaxMB, DefaultMediaMaxMB)
	}
	if c.TimeoutSeconds > 600 {
		return fmt.Errorf("timeoutSeconds: %d is more than 600", c.TimeoutSeconds)
	}
	return nil
}

func (c *Config) apiRoot() string {
	if c.APIRoot == "" {
		return DefaultAPIRoot
	}
	return strings.TrimRight(c.APIRoot, "/")
}

func (c *Config) mediaMax() int64 {
	mb := c.MediaMaxMB
	if mb == 0 {
		mb = DefaultMediaMaxMB
	}
	return int64(mb * (1 << 20))
}

func (c *Config) streaming() bool { return c.StreamMode != "off" }
