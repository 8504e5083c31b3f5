// Package message is OpenClaw's `message` tool (group:messaging) for the
// agent loop, action "send" only: the agent writes to someone on a
// channel on its own, outside the reply to the message it is answering
// ("tell my wife I'm late" from the CLI, a note to the owner's phone from
// a long task).
//
// It reaches the channels only through the Sender interface declared
// here, which the channel side (engine/inbound) implements; this package
// imports no gateway or channel. Who may be written to is the channel
// side's decision, made where the access policy lives: an owner, a sender
// approved by pairing, or one listed in the account's allowFrom — never a
// stranger, whatever the model was talked into. Further choices:
//
//   - Only owners' turns have tools at all (gateway.runTurn), and a
//     sub-agent never gets this tool (engine/tool/sessions); a call from
//     a sub-agent's turn (tool.Env.Depth > 0) is refused here as well.
//   - channel "" or "last" is the owner's last direct contact; a channel
//     without "to" is the owner's id on it (commands.ownerAllowFrom).
//   - The text is bounded (MaxChars, 4000 by default) and refused, not
//     cut, when longer: a message cut mid-sentence says the wrong thing.
//     Attachments are not sent.
//   - The message is queued on the outbox at once, not with the end of
//     the turn: the tool's result says it was queued, and a crash after
//     that still sends it (the turn is then closed as interrupted, not
//     run again, so it is not sent twice).
package message

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/tool"
)

// Sender is the channel side as the message tool needs it.
type Sender interface {
	// Send queues text to one chat: to on channel's account ("" the only
	// or default one); channel "" or "last" is the owner's last contact.
	// It refuses a recipient who is not an owner, approved by pairing or
	// in allowFrom. label names the chat for the model ("whatsapp:+1555…").
	Send(ctx context.Context, channel, account, to, text string) (label string, err error)
}

// DefaultMaxChars bounds a message's text.
const DefaultMaxChars = 4000

// Config configures the tool.
type Config struct {
	Sender   Sender
	MaxChars int // default DefaultMaxChars
}

// Tool returns the message tool.
func Tool(cfg Config) tool.Tool {
	if cfg.MaxChars <= 0 {
		cfg.MaxChars = DefaultMaxChars
	}
	return &messageTool{cfg: cfg}
}

type messageTool struct{ cfg Config }

func (*messageTool) Spec() engine.ToolSpec {
	return engine.ToolSpec{
		Name: "message",
		Description: "Send a message to someone on a channel (WhatsApp, iMessage, email…), outside your reply. " +
			"Only to the owner or people they approved. Without channel: the owner's last chat.",
		Parameters: tool.MustSchema(`{"type":"object","properties":{` +
			`"action":{"type":"string","enum":["send"]},` +
			`"channel":{"type":"string","description":"whatsapp, imessage, email… (default: last, the owner's last chat)"},` +
			`"account":{"type":"string","description":"The channel account, when it has several"},` +
			`"to":{"type":"string","description":"Phone number, address or chat id (default: the owner)"},` +
			`"text":{"type":"string"}},` +
			`"required":["text"]}`),
	}
}

type args struct {
	Action  string `json:"action"`
	Channel string `json:"channel"`
	Account string `json:"account"`
	To      string `json:"to"`
	Target  string `json:"target"` // OpenClaw's name for to
	Text    string `json:"text"`
	Message string `json:"message"` // OpenClaw's name for text
}

func (t *messageTool) Run(ctx context.Context, env tool.Env, raw json.RawMessage) engine.ToolResult {
	if env.Depth > 0 {
		return engine.ErrorResult("a sub-agent cannot send messages; put it in your reply to the session that spawned you")
	}
	var a args
	if err := tool.DecodeArgs(raw, &a); err != nil {
		return engine.ErrorResult("%v", err)
	}
	if act := strings.ToLower(strings.TrimSpace(a.Action)); act != "" && act != "send" {
		return engine.ErrorResult("action %q is not supported; only send", a.Action)
	}
	to := strings.TrimSpace(a.To)
	if to == "" {
		to = strings.TrimSpace(a.Target)
	}
	text := strings.TrimSpace(a.Text)
	if text == "" {
		text = strings.TrimSpace(a.Message)
	}
	if text == "" {
		return engine.ErrorResult("text is empty")
	}
	if n := len([]rune(text)); n > t.cfg.MaxChars {
		return engine.ErrorResult("text is %d characters; at most %d (send the rest in another message)", n, t.cfg.MaxChars)
	}
	label, err := t.cfg.Sender.Send(ctx, strings.ToLower(strings.TrimSpace(a.Channel)), strings.TrimSpace(a.Account), to, text)
	if err != nil {
		return engine.ErrorResult("not sent: %v", err)
	}
	return engine.TextResult("Queued for " + label + ".")
}
