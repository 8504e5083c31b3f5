package telegram

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/PaulSonOfLars/gotgbot/v2"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/channel"
)

// maxText is Telegram's limit on a message's text, in UTF-16 code units
// after entity parsing.
const maxText = 4096

// Send delivers one outbound chunk: its text as Telegram HTML (or plain
// text when Telegram refuses the HTML), with its buttons, then its media.
// Replace edits a streamed preview into it instead.
func (a *Adapter) Send(ctx context.Context, out channel.Outbound) (channel.Receipt, error) {
	if a.bot == nil {
		return channel.Receipt{}, fmt.Errorf("telegram: %w: %v", channel.ErrNotConnected, a.tokenErr)
	}
	chat, err := chatRef(out.ChatID)
	if err != nil {
		return channel.Receipt{}, err
	}
	var thread int64
	if out.Thread != "" {
		thread, _ = strconv.ParseInt(out.Thread, 10, 64)
	}
	var reply *gotgbot.ReplyParameters
	if id, ok := messageRef(out.ReplyTo); ok && a.cfg.ReplyToMode != "off" {
		// Without the quoted message (deleted since), send anyway.
		reply = &gotgbot.ReplyParameters{MessageId: id, AllowSendingWithoutReply: true}
	}
	var rcpt channel.Receipt
	if strings.TrimSpace(out.Text) == "" && out.Replace != "" {
		// A preview whose reply has no text (media only): it goes, so
		// the chat does not keep words the reply does not have.
		if err := a.Unsend(ctx, out.ChatID, out.Replace); err != nil {
			a.log.Warn("could not delete a reply preview", "err", err)
		}
	}
	if strings.TrimSpace(out.Text) != "" {
		if rcpt, err = a.sendText(ctx, chat, thread, reply, out); err != nil {
			return channel.Receipt{}, err
		}
		reply = nil
	}
	for _, md := range out.Media {
		r, err := a.sendMedia(ctx, chat, thread, reply, md, out.AsVoice)
		if err != nil {
			return channel.Receipt{}, err
		}
		if rcpt.MessageID == "" {
			rcpt = r
		}
		reply = nil
	}
	if rcpt.MessageID != "" {
		a.mu.Lock()
		a.st.LastOutbound = a.d.Now()
		a.mu.Unlock()
	}
	return rcpt, nil
}

// sendText sends (or, with Replace, edits in) a chunk's text.
func (a *Adapter) sendText(ctx context.Context, chat, thread int64, reply *gotgbot.ReplyParameters, out channel.Outbound) (channel.Receipt, error) {
	markup := keyboard(out.Buttons)
	if id, ok := messageRef(out.Replace); ok && utf16Len(out.Text) > maxText {
		// Too long for one message as Telegram counts (emoji are two
		// units): the preview takes the first piece, the rest follows.
		pieces := splitUTF16(out.Text, maxText)
		if err := a.edit(ctx, chat, id, pieces[0], nil); err != nil && !gone(err) {
			return channel.Receipt{}, a.sendErr(err)
		} else if err == nil {
			if _, err := a.sendPieces(ctx, chat, thread, nil, strings.Join(pieces[1:], ""), markup); err != nil {
				return channel.Receipt{}, err
			}
			return channel.Receipt{MessageID: strconv.FormatInt(id, 10), SentAt: a.d.Now()}, nil
		}
	} else if ok {
		err := a.edit(ctx, chat, id, out.Text, markup)
		if err == nil {
			return channel.Receipt{MessageID: strconv.FormatInt(id, 10), SentAt: a.d.Now()}, nil
		}
		if !gone(err) {
			return channel.Receipt{}, a.sendErr(err)
		}
		// The preview was deleted: the reply comes as a new message.
	}
	// A chunk cut for the gateway's limit can still be over Telegram's
	// (it counts UTF-16 units: an emoji is two): such a chunk goes as
	// plain pieces.
	if utf16Len(out.Text) > maxText {
		return a.sendPieces(ctx, chat, thread, reply, out.Text, markup)
	}
	opts := &gotgbot.SendMessageOpts{MessageThreadId: thread, ParseMode: gotgbot.ParseModeHTML, ReplyParameters: reply,
		LinkPreviewOptions: &gotgbot.LinkPreviewOptions{IsDisabled: true}}
	if markup != nil {
		opts.ReplyMarkup = *markup
	}
	msg, err := a.call(ctx, func() (*gotgbot.Message, error) {
		return a.bot.SendMessageWithContext(ctx, chat, toHTML(out.Text), opts)
	})
	if badEntities(err) {
		// Telegram refused our HTML: the same words, as plain text.
		a.log.Warn("Telegram refused the HTML of a reply; sent as plain text", "err", err)
		opts.ParseMode = ""
		msg, err = a.call(ctx, func() (*gotgbot.Message, error) {
			return a.bot.SendMessageWithContext(ctx, chat, out.Text, opts)
		})
	}
	if err != nil {
		return channel.Receipt{}, a.sendErr(err)
	}
	return channel.Receipt{MessageID: strconv.FormatInt(msg.MessageId, 10), SentAt: a.d.Now()}, nil
}

// sendPieces sends text as plain-text messages of at most maxText units.
func (a *Adapter) sendPieces(ctx context.Context, chat, thread int64, reply *gotgbot.ReplyParameters, text string, markup *gotgbot.InlineKeyboardMarkup) (channel.Receipt, error) {
	var first channel.Receipt
	pieces := splitUTF16(text, maxText)
	for i, p := range pieces {
		opts := &gotgbot.SendMessageOpts{MessageThreadId: thread, ReplyParameters: reply}
		if i == len(pieces)-1 && markup != nil {
			opts.ReplyMarkup = *markup
		}
		msg, err := a.call(ctx, func() (*gotgbot.Message, error) { return a.bot.SendMessageWithContext(ctx, chat, p, opts) })
		if err != nil {
			return channel.Receipt{}, a.sendErr(err)
		}
		if first.MessageID == "" {
			first = channel.Receipt{MessageID: strconv.FormatInt(msg.MessageId, 10), SentAt: a.d.Now()}
		}
		reply = nil
	}
	return first, nil
}

// edit sets message id's text (HTML, else plain); "not modified" is done.
func (a *Adapter) edit(ctx context.Context, chat, id int64, text string, markup *gotgbot.InlineKeyboardMarkup) error {
	if utf16Len(text) > maxText {
		text = cutUTF16(text, maxText-2) + " …"
	}
	opts := &gotgbot.EditMessageTextOpts{ChatId: chat, MessageId: id, ParseMode: gotgbot.ParseModeHTML,
		LinkPreviewOptions: &gotgbot.LinkPreviewOptions{IsDisabled: true}}
	if markup != nil {
		opts.ReplyMarkup = *markup
	}
	_, err := a.call(ctx, func() (*gotgbot.Message, error) {
		m, _, err := a.bot.EditMessageTextWithContext(ctx, toHTML(text), opts)
		return m, err
	})
	if badEntities(err) {
		opts.ParseMode = ""
		_, err = a.call(ctx, func() (*gotgbot.Message, error) {
			m, _, err := a.bot.EditMessageTextWithContext(ctx, text, opts)
			return m, err
		})
	}
	if notModified(err) {
		return nil
	}
	return err
}

// CheckTarget accepts a numeric chat id (channel.TargetChecker): a
// user's (123456789) or a group's (-1001234567890). A @username cannot be
// written to: a bot only reaches people who wrote to it first.
func (a *Adapter) CheckTarget(chatID string) error {
	if _, err := strconv.ParseInt(chatID, 10, 64); err != nil {
		return fmt.Errorf("telegram: %q is not a chat id; give the numeric id (a person's, e.g. 123456789, who has written to the bot, or a group's, e.g. -1001234567890: `openclaw pairing list telegram` and `openclaw logs` show them)", chatID)
	}
	return nil
}

// Edit edits a message sent earlier (channel.Editor).
func (a *Adapter) Edit(ctx context.Context, chatID, messageID, text string) error {
	chat, id, ok, err := a.ref(chatID, messageID)
	if err != nil {
		return err
	}
	if !ok {
		return channel.Permanent(fmt.Errorf("telegram: %q is not a message id", messageID))
	}
	if err := a.edit(ctx, chat, id, text, nil); err != nil {
		return a.sendErr(err)
	}
	return nil
}

// ref parses the chat and message a caller names; ok is false for a
// message id that is not one of ours.
func (a *Adapter) ref(chatID, messageID string) (chat, id int64, ok bool, err error) {
	if a.bot == nil {
		return 0, 0, false, fmt.Errorf("telegram: %w", channel.ErrNotConnected)
	}
	if chat, err = chatRef(chatID); err != nil {
		return 0, 0, false, err
	}
	id, ok = messageRef(messageID)
	return chat, id, ok, nil
}

// Unsend deletes a message the bot sent (channel.Unsender).
func (a *Adapter) Unsend(ctx context.Context, chatID, messageID string) error {
	chat, id, ok, err := a.ref(chatID, messageID)
	if err != nil || !ok {
		return err
	}
	_, err = a.bot.DeleteMessageWithContext(ctx, chat, id, nil)
	if err != nil && !gone(err) {
		return a.sendErr(err)
	}
	return nil
}

// sendMedia uploads one attachment: a photo, a voice note (AsVoice), an
// audio file or a document, by its MIME type; a URL goes as text.
func (a *Adapter) sendMedia(ctx context.Context, chat, thread int64, reply *gotgbot.ReplyParameters, md engine.Media, asVoice bool) (channel.Receipt, error) {
	if md.Path == "" {
		if md.URL == "" {
			return channel.Receipt{}, nil
		}
		msg, err := a.call(ctx, func() (*gotgbot.Message, error) {
			return a.bot.SendMessageWithContext(ctx, chat, md.URL, &gotgbot.SendMessageOpts{MessageThreadId: thread, ReplyParameters: reply})
		})
		if err != nil {
			return channel.Receipt{}, a.sendErr(err)
		}
		return channel.Receipt{MessageID: strconv.FormatInt(msg.MessageId, 10), SentAt: a.d.Now()}, nil
	}
	st, err := os.Stat(md.Path)
	if err != nil {
		return channel.Receipt{}, channel.Permanent(fmt.Errorf("telegram: attachment: %w", err))
	}
	if st.Size() > a.MaxMediaBytes() {
		return channel.Receipt{}, channel.Permanent(fmt.Errorf("telegram: attachment %s is %s, more than the 50 MB a bot may send", filepath.Base(md.Path), mib(st.Size())))
	}
	mt := md.MimeType
	if mt == "" {
		mt = mime.TypeByExtension(strings.ToLower(filepath.Ext(md.Path)))
	}
	msg, err := a.call(ctx, func() (*gotgbot.Message, error) {
		f, err := os.Open(md.Path)
		if err != nil {
			return nil, channel.Permanent(err)
		}
		defer f.Close()
		in := gotgbot.InputFileByReader(filepath.Base(md.Path), f)
		switch {
		case strings.HasPrefix(mt, "image/") && mt != "image/gif" && st.Size() <= 10<<20:
			return a.bot.SendPhotoWithContext(ctx, chat, in, &gotgbot.SendPhotoOpts{MessageThreadId: thread, ReplyParameters: reply})
		case strings.HasPrefix(mt, "audio/") && asVoice:
			return a.bot.SendVoiceWithContext(ctx, chat, in, &gotgbot.SendVoiceOpts{MessageThreadId: thread, ReplyParameters: reply})
		case strings.HasPrefix(mt, "audio/"):
			return a.bot.SendAudioWithContext(ctx, chat, in, &gotgbot.SendAudioOpts{MessageThreadId: thread, ReplyParameters: reply})
		}
		return a.bot.SendDocumentWithContext(ctx, chat, in, &gotgbot.SendDocumentOpts{MessageThreadId: thread, ReplyParameters: reply})
	})
	if err != nil {
		return channel.Receipt{}, a.sendErr(err)
	}
	return channel.Receipt{MessageID: strconv.FormatInt(msg.MessageId, 10), SentAt: a.d.Now()}, nil
}

// call runs one send, waiting out one 429 of up to a minute (Telegram's
// flood control); a longer wait is the outbox's to schedule.
func (a *Adapter) call(ctx context.Context, f func() (*gotgbot.Message, error)) (*gotgbot.Message, error) {
	m, err := f()
	if d := retryAfter(err); d > 0 && d <= time.Minute {
		if !sleep(ctx, d) {
			return nil, ctx.Err()
		}
		m, err = f()
	}
	return m, err
}

// sendErr classifies a send's failure for the outbox: what Telegram will
// never accept (a chat the bot cannot write to, a bad request) is
// permanent; the network, flood control and Telegram's own errors are
// retried.
func (a *Adapter) sendErr(err error) error {
	var ne *netError
	if errors.As(err, &ne) {
		return fmt.Errorf("%w: %v", channel.ErrNotConnected, err)
	}
	if te, ok := apiError(err); ok {
		switch {
		case te.Code == http.StatusTooManyRequests, te.Code >= 500:
			return err
		case te.Code == http.StatusUnauthorized:
			return fmt.Errorf("%w: %v", channel.ErrNotConnected, err)
		case te.Code == http.StatusBadRequest, te.Code == http.StatusForbidden:
			return channel.Permanent(err)
		}
	}
	return err
}

func badEntities(err error) bool {
	te, ok := apiError(err)
	return ok && te.Code == http.StatusBadRequest && strings.Contains(te.Description, "can't parse entities")
}

func notModified(err error) bool {
	te, ok := apiError(err)
	return ok && te.Code == http.StatusBadRequest && strings.Contains(te.Description, "message is not modified")
}

// gone reports a message that no longer exists (or cannot be edited).
func gone(err error) bool {
	te, ok := apiError(err)
	return ok && te.Code == http.StatusBadRequest && (strings.Contains(te.Description, "not found") || strings.Contains(te.Description, "can't be edited") || strings.Contains(te.Description, "can't be deleted"))
}

// keyboard is the inline keyboard of buttons, one row; a button whose
// command does not fit Telegram's 64 bytes of callback data is left out.
func keyboard(buttons []engine.Button) *gotgbot.InlineKeyboardMarkup {
	var row []gotgbot.InlineKeyboardButton
	for _, b := range buttons {
		if b.Command == "" || len(b.Command) > 64 || b.Text == "" {
			continue
		}
		row = append(row, gotgbot.InlineKeyboardButton{Text: b.Text, CallbackData: b.Command})
	}
	if len(row) == 0 {
		return nil
	}
	return &gotgbot.InlineKeyboardMarkup{InlineKeyboard: [][]gotgbot.InlineKeyboardButton{row}}
}

// Typing shows "typing…" in the chat until turned off; Telegram shows it
// for 5 s per call, so it is repeated every 4 s.
func (a *Adapter) Typing(ctx context.Context, chatID string, on bool) error {
	if a.bot == nil {
		return nil
	}
	chat, err := chatRef(chatID)
	if err != nil {
		return err
	}
	a.mu.Lock()
	if stop := a.typing[chat]; stop != nil {
		stop()
		delete(a.typing, chat)
	}
	if !on {
		a.mu.Unlock()
		return nil
	}
	tctx, stop := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Minute)
	a.typing[chat] = stop
	a.mu.Unlock()
	go func() {
		for {
			if _, err := a.bot.SendChatActionWithContext(tctx, chat, gotgbot.ChatActionTyping, nil); err != nil && tctx.Err() == nil {
				a.log.Debug("telegram typing indicator failed", "err", err)
			}
			if !sleep(tctx, 4*time.Second) {
				return
			}
		}
	}()
	return nil
}

// utf16Len is s's length as Telegram counts it.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}

// cutUTF16 is the longest prefix of s of at most n UTF-16 units.
func cutUTF16(s string, n int) string {
	units := 0
	for i, r := range s {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if units+w > n {
			return s[:i]
		}
		units += w
	}
	return s
}

// splitUTF16 cuts s into pieces of at most n UTF-16 units, at a newline
// or a space where one is near the end.
func splitUTF16(s string, n int) []string {
	var out []string
	for s != "" {
		p := cutUTF16(s, n)
		if len(p) < len(s) {
			if i := strings.LastIndexAny(p, "\n "); i > len(p)/2 {
				p = p[:i+1]
			}
		}
		out = append(out, p)
		s = s[len(p):]
	}
	return out
}
