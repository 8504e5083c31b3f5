package telegram

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/PaulSonOfLars/gotgbot/v2"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/channel"
)

// Streaming (streamMode partial): one preview message, edited as the
// reply grows; the reply's first chunk is then edited into it by Send
// (Outbound.Replace), so the chat ends with the reply alone.
const (
	// previewMin is the text a preview waits for: a reply that turns out
	// silent ("NO_REPLY") or very short is never previewed.
	previewMin = 24
	// Edits at most once a second in a direct chat and every 3 s in a
	// group (Telegram allows about 20 messages a minute there).
	editEvery      = time.Second
	groupEditEvery = 3 * time.Second
)

// Stream shows the reply being written (channel.Streamer). It reads deltas
// until they are closed; a failed send or edit ends the preview (the
// reply is still sent whole), never the turn.
func (a *Adapter) Stream(ctx context.Context, to channel.Outbound, deltas <-chan string) (channel.Receipt, error) {
	chat, err := chatRef(to.ChatID)
	if !a.cfg.streaming() || a.bot == nil || err != nil {
		for range deltas {
		}
		return channel.Receipt{}, nil
	}
	var thread int64
	if to.Thread != "" {
		thread, _ = strconv.ParseInt(to.Thread, 10, 64)
	}
	every := editEvery
	if to.ChatType != engine.ChatDirect {
		every = groupEditEvery
	}
	var (
		buf     strings.Builder
		shown   string
		id      int64
		failed  bool
		last    time.Time
		pending = make(chan error, 1)
		busy    bool
	)
	tick := time.NewTicker(every / 4)
	defer tick.Stop()
	// flush sends or edits the preview in the background, so the deltas
	// keep being read while Telegram answers.
	flush := func(text string) {
		busy, last = true, time.Now()
		go func() {
			if id == 0 {
				opts := &gotgbot.SendMessageOpts{MessageThreadId: thread, LinkPreviewOptions: &gotgbot.LinkPreviewOptions{IsDisabled: true}}
				if r, ok := messageRef(to.ReplyTo); ok && a.cfg.ReplyToMode != "off" {
					opts.ReplyParameters = &gotgbot.ReplyParameters{MessageId: r, AllowSendingWithoutReply: true}
				}
				m, err := a.bot.SendMessageWithContext(ctx, chat, text, opts)
				if err == nil {
					id = m.MessageId
				}
				pending <- err
				return
			}
			_, _, err := a.bot.EditMessageTextWithContext(ctx, text, &gotgbot.EditMessageTextOpts{ChatId: chat, MessageId: id,
				LinkPreviewOptions: &gotgbot.LinkPreviewOptions{IsDisabled: true}})
			if notModified(err) {
				err = nil
			}
			pending <- err
		}()
	}
	done := func(err error) {
		busy = false
		if err != nil {
			failed = true
			a.log.Debug("telegram preview stopped", "err", err)
		}
	}
	for open := true; open; {
		select {
		case d, ok := <-deltas:
			if !ok {
				open = false
				break
			}
			buf.WriteString(d)
		case err := <-pending:
			done(err)
		case <-tick.C:
		}
		// Only when an edit is due: preview scans the whole reply.
		if !open || busy || failed || time.Since(last) < every || buf.Len() < previewMin {
			continue
		}
		if text := preview(buf.String()); text != shown && len(text) >= previewMin {
			shown = text
			flush(text)
		}
	}
	if busy {
		done(<-pending)
	}
	if id == 0 {
		return channel.Receipt{}, nil
	}
	return channel.Receipt{MessageID: strconv.FormatInt(id, 10), SentAt: a.d.Now()}, nil
}

// preview is the text shown while a reply is written: its directive
// lines (MEDIA:, [[reply_to…]]) left out, trimmed, cut to fit a message.
func preview(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "MEDIA:") || strings.HasPrefix(t, "[[") {
			continue
		}
		b.WriteString(line)
	}
	out := strings.TrimSpace(b.String())
	if utf16Len(out) > maxText-2 {
		out = cutUTF16(out, maxText-2) + " …"
	}
	return out
}
