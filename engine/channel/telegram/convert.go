package telegram

import (
	"context"
	"fmt"
	"mime"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/PaulSonOfLars/gotgbot/v2"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/channel"
)

// convert turns an update into an inbound message: a message (text or
// caption, what it replies to, its photo, document or voice note) or a
// button press. Everything else — edits, channel posts, other bots,
// service messages — is not one (false) and only moves the offset.
func (a *Adapter) convert(ctx context.Context, in channel.Inbox, u gotgbot.Update) (engine.Inbound, bool) {
	switch {
	case u.CallbackQuery != nil:
		return a.press(ctx, u.CallbackQuery)
	case u.EditedMessage != nil:
		// Ours: an edit is not a new message (the model answered the
		// original); logged so the owner can see why nothing happened.
		a.log.Debug("telegram edit ignored", "chat", u.EditedMessage.Chat.Id, "message", u.EditedMessage.MessageId)
		return engine.Inbound{}, false
	case u.Message != nil:
		return a.message(ctx, in, u.Message)
	}
	return engine.Inbound{}, false
}

// press is a button press: answered at once (the spinner on the
// presser's button stops), then handed on as the button's command. The
// gateway decides whether the presser may; the adapter never does.
func (a *Adapter) press(ctx context.Context, q *gotgbot.CallbackQuery) (engine.Inbound, bool) {
	if _, err := a.bot.AnswerCallbackQueryWithContext(ctx, q.Id, nil); err != nil && ctx.Err() == nil {
		a.log.Debug("could not answer a button press", "err", err)
	}
	if q.Message == nil || !strings.HasPrefix(q.Data, "/") || len(q.Data) > 64 || q.From.IsBot {
		return engine.Inbound{}, false
	}
	chat := q.Message.GetChat()
	m := engine.Inbound{
		ChatID:         strconv.FormatInt(chat.Id, 10),
		ChatType:       chatType(chat.Type),
		SenderID:       strconv.FormatInt(q.From.Id, 10),
		SenderName:     name(q.From),
		SenderUsername: q.From.Username,
		MessageID:      "cb:" + q.Id,
		Text:           q.Data,
		Button:         true,
		Timestamp:      a.d.Now(),
	}
	if msg, ok := q.Message.(gotgbot.Message); ok && msg.IsTopicMessage {
		m.Topic = strconv.FormatInt(msg.MessageThreadId, 10)
		m.Thread = m.Topic
	}
	return m, m.ChatType != ""
}

// message converts a message.
func (a *Adapter) message(ctx context.Context, in channel.Inbox, msg *gotgbot.Message) (engine.Inbound, bool) {
	kind := chatType(msg.Chat.Type)
	if kind == "" || msg.From == nil || msg.From.IsBot {
		return engine.Inbound{}, false // a channel post, or another bot (no loops)
	}
	a.mu.Lock()
	me := a.me
	a.mu.Unlock()
	text, ents := msg.Text, msg.Entities
	if text == "" {
		text, ents = msg.Caption, msg.CaptionEntities
	}
	m := engine.Inbound{
		ChatID:         strconv.FormatInt(msg.Chat.Id, 10),
		ChatType:       kind,
		SenderID:       strconv.FormatInt(msg.From.Id, 10),
		SenderName:     name(*msg.From),
		SenderUsername: msg.From.Username,
		MessageID:      fmt.Sprintf("%d:%d:%d", me.Id, msg.Chat.Id, msg.MessageId),
		Timestamp:      time.Unix(msg.Date, 0),
	}
	if msg.IsTopicMessage && msg.MessageThreadId != 0 {
		m.Topic = strconv.FormatInt(msg.MessageThreadId, 10)
		m.Thread = m.Topic
	}
	text, m.Mentioned = mentions(text, ents, me)
	if msg.ForwardOrigin != nil && text != "" {
		// Someone else's words, passed on: never the sender's own, and
		// never a command ("/approve …" forwarded runs nothing).
		text = "[Forwarded message]\n" + text
	}
	if r := msg.ReplyToMessage; r != nil && !(msg.IsTopicMessage && r.MessageId == msg.MessageThreadId) {
		// (In a forum, every message "replies" to its topic's first
		// message: that is not a reply.)
		m.ReplyTo = fmt.Sprintf("%d:%d:%d", me.Id, r.Chat.Id, r.MessageId)
		m.Quoted = r.Text
		if m.Quoted == "" {
			m.Quoted = r.Caption
		}
		if r.From != nil && r.From.Id == me.Id {
			m.Mentioned = true // a reply to the bot speaks to it
		}
	}
	// Attachments are fetched only for a message the gateway will answer:
	// a stranger's, an unlisted group's or one kept only as context costs
	// no download (channel.Screener).
	fetch := true
	if sc, ok := in.(channel.Screener); ok {
		probe := m
		probe.Text = text
		fetch = sc.WillAnswer(probe)
	}
	notes := a.media(ctx, msg, &m, fetch)
	if len(notes) > 0 {
		if text != "" {
			text += "\n"
		}
		text += strings.Join(notes, "\n")
	}
	m.Text = text
	if m.Text == "" && len(m.Media) == 0 {
		return engine.Inbound{}, false // a service message (joined, pinned …)
	}
	return m, true
}

func chatType(t string) engine.ChatType {
	switch t {
	case "private":
		return engine.ChatDirect
	case "group", "supergroup":
		return engine.ChatGroup
	}
	return ""
}

func name(u gotgbot.User) string {
	return strings.TrimSpace(u.FirstName + " " + u.LastName)
}

// mentions reports whether text mentions the bot (an @username mention
// or a text_mention of its user, or a command addressed to it) and
// returns text with "/cmd@bot" shortened to "/cmd", so the gateway reads
// its commands.
func mentions(text string, ents []gotgbot.MessageEntity, me gotgbot.User) (string, bool) {
	if me.Username == "" || len(ents) == 0 {
		return text, false
	}
	u := utf16.Encode([]rune(text))
	at := "@" + strings.ToLower(me.Username)
	mentioned := false
	for _, e := range ents {
		if e.Offset < 0 || e.Length <= 0 || e.Offset+e.Length > int64(len(u)) {
			continue // a hostile or broken entity: ignored
		}
		part := strings.ToLower(string(utf16.Decode(u[e.Offset : e.Offset+e.Length])))
		switch e.Type {
		case "mention":
			mentioned = mentioned || part == at
		case "text_mention":
			mentioned = mentioned || e.User != nil && e.User.Id == me.Id
		case "bot_command":
			if strings.HasSuffix(part, at) {
				mentioned = true
				if e.Offset == 0 {
					text = string(utf16.Decode(u[:e.Length-int64(len(at))])) + string(utf16.Decode(u[e.Length:]))
				}
			}
		}
	}
	return text, mentioned
}

// media downloads the message's photo (its largest size), document,
// voice note or audio into the account's media directory, up to
// mediaMaxMb each; what it does not download is said in the returned
// notes, never silently dropped.
func (a *Adapter) media(ctx context.Context, msg *gotgbot.Message, m *engine.Inbound, fetch bool) []string {
	type file struct {
		id, unique, name, mime, what string
		size                         int64
	}
	var files []file
	if n := len(msg.Photo); n > 0 {
		p := msg.Photo[n-1]
		files = append(files, file{p.FileId, p.FileUniqueId, "", "image/jpeg", "photo", p.FileSize})
	}
	if d := msg.Document; d != nil {
		files = append(files, file{d.FileId, d.FileUniqueId, d.FileName, cleanMIME(d.MimeType, "application/octet-stream"), "document", d.FileSize})
	}
	if v := msg.Voice; v != nil {
		files = append(files, file{v.FileId, v.FileUniqueId, "", cleanMIME(v.MimeType, "audio/ogg"), "voice note", v.FileSize})
	}
	if au := msg.Audio; au != nil {
		files = append(files, file{au.FileId, au.FileUniqueId, au.FileName, cleanMIME(au.MimeType, "audio/mpeg"), "audio", au.FileSize})
	}
	var notes []string
	max := a.cfg.mediaMax()
	for _, f := range files {
		label := f.what
		if f.name != "" {
			label += " " + strconv.Quote(oneLine(f.name, 80))
		}
		if !fetch {
			notes = append(notes, "["+label+"]")
			continue
		}
		if f.size > max {
			notes = append(notes, fmt.Sprintf("[%s, %s: not downloaded, larger than channels.telegram.mediaMaxMb]", label, mib(f.size)))
			continue
		}
		p, err := a.fetch(ctx, msg, f.id, f.unique, f.mime, max)
		if err != nil {
			a.log.Warn("could not download a Telegram attachment", "what", f.what, "err", err)
			why := "could not be downloaded"
			if err == errTooLarge {
				why = "not downloaded, larger than channels.telegram.mediaMaxMb"
			}
			notes = append(notes, fmt.Sprintf("[%s: %s]", label, why))
			continue
		}
		m.Media = append(m.Media, engine.Media{Path: p, MimeType: f.mime})
	}
	return notes
}

// fetch downloads one file to <mediaDir>/<chat>-<message>-<unique id><ext>:
// the same name when an update is delivered again, so a redelivery
// overwrites rather than piles up.
func (a *Adapter) fetch(ctx context.Context, msg *gotgbot.Message, id, unique, mt string, max int64) (string, error) {
	if a.d.MediaDir == "" {
		return "", fmt.Errorf("no media directory")
	}
	f, err := a.bot.GetFileWithContext(ctx, id, nil)
	if err != nil {
		return "", err
	}
	if f.FileSize > max {
		return "", errTooLarge
	}
	if err := os.MkdirAll(a.d.MediaDir, 0o700); err != nil {
		return "", err
	}
	ext := safeExt(filepath.Ext(f.FilePath))
	if ext == "" {
		if exts, _ := mime.ExtensionsByType(mt); len(exts) > 0 {
			ext = exts[0]
		}
	}
	base := fmt.Sprintf("%d-%d-%s%s", msg.Chat.Id, msg.MessageId, safeName(unique), ext)
	dst := filepath.Join(a.d.MediaDir, base)
	tmp, err := os.CreateTemp(a.d.MediaDir, ".dl-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := a.cl.download(ctx, a.token, f.FilePath, max, tmp); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return "", err
	}
	return dst, nil
}

// cleanMIME is a MIME type from the wire as "type/subtype" of lower-case
// letters, digits and .+- only (it reaches the prompt's trusted block),
// else def: "text/plain; SYSTEM NOTE: …" is not a type.
func cleanMIME(s, def string) string {
	mt, _, err := mime.ParseMediaType(s)
	if err != nil || len(mt) > 100 || strings.Count(mt, "/") != 1 {
		return def
	}
	for _, c := range []byte(mt) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("/.+-", c) >= 0) {
			return def
		}
	}
	return mt
}

// safeName keeps [A-Za-z0-9_-] of s (a file id from the wire).
func safeName(s string) string {
	b := []byte(s)
	out := b[:0]
	for _, c := range b {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			out = append(out, c)
		}
	}
	if len(out) > 64 {
		out = out[:64]
	}
	if len(out) == 0 {
		return "file"
	}
	return string(out)
}

// safeExt is ext if it is "." and 1 to 8 letters or digits, else "".
func safeExt(ext string) string {
	if len(ext) < 2 || len(ext) > 9 {
		return ""
	}
	for _, c := range []byte(ext[1:]) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return ""
		}
	}
	return strings.ToLower(ext)
}

func mib(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/(1<<20)) }

// oneLine folds white space and control characters, cut at n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f || r == ' ' }), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}
