// Package telegramtest is a fake of Telegram's Bot API
// (core.telegram.org/bots/api) for tests of the Telegram adapter. It
// speaks the documented wire format on loopback: requests to
// {URL}/bot{TOKEN}/{method} as JSON (values strings, numbers or objects),
// URL-encoded forms or multipart uploads; answers {"ok":true,"result":…}
// or {"ok":false,"error_code":…,"description":…} with Telegram's codes and
// descriptions, and serves files at {URL}/file/bot{TOKEN}/{file_path}.
//
// It implements getMe, deleteWebhook, getWebhookInfo, setMyCommands,
// getMyCommands, deleteMyCommands, getUpdates (offsets that confirm, long
// polling, 409 on a second concurrent poll), sendMessage,
// editMessageText, editMessageReplyMarkup, deleteMessage,
// answerCallbackQuery, sendChatAction, getFile, sendPhoto, sendDocument,
// sendVoice and sendAudio, and checks what it is sent as Telegram does:
// text length in UTF-16 code units, parse_mode HTML, inline keyboards,
// replies to missing messages, edits that change nothing. A test pushes
// updates (Push, DM, Group, Press), injects errors (Limit, Fail) and
// asserts on what the bot did (Sent, Messages, Polls, Answers, Actions,
// Commands, Calls).
//
// Deliberately stricter than Telegram in one place: a bare '&' that does
// not begin one of the documented entities is refused (Telegram keeps it
// as text), as the documentation asks for it to be escaped.
package telegramtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// The bot getMe describes; messages the bot sends are from it.
const (
	BotID        = 7000001
	BotUsername  = "edge_test_bot"
	BotFirstName = "Edge Test Bot"
)

// Limits of the Bot API the fake enforces.
const (
	// MaxTextLen is the most UTF-16 code units of a message's text,
	// counted after entity parsing.
	MaxTextLen = 4096
	// MaxCaptionLen is the same for a caption.
	MaxCaptionLen = 1024
	// MaxDownloadSize is the largest file getFile hands out to a bot
	// (20 MB); larger ones get "Bad Request: file is too big".
	MaxDownloadSize = 20 << 20
	// FirstUpdateID is the update_id of the first pushed update.
	FirstUpdateID = 1000
	// GroupTitle is the title of chats Group creates.
	GroupTitle = "Edge Test Group"
)

// The Bot API's answers the fake gives, for tests that compare them.
const (
	DescConflict    = "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"
	DescNotModified = "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"
)

// User is a Telegram user who sends updates.
type User struct {
	ID                            int64
	FirstName, LastName, Username string
}

// Poll is one getUpdates call.
type Poll struct {
	Offset  int64
	Limit   int
	Timeout int
	// Code is the HTTP status it was answered with (200, 409, 429 …).
	Code int
	At   time.Time
}

// Command is one entry of setMyCommands.
type Command struct {
	Command     string `json:"command"`
	Description string `json:"description"`
}

// Answer is one answerCallbackQuery.
type Answer struct {
	ID        string
	Text      string
	ShowAlert bool
	URL       string
}

// Action is one sendChatAction.
type Action struct {
	ChatID, ThreadID int64
	Action           string
}

// Button is one inline keyboard button: Data is its callback_data, URL
// its url.
type Button struct {
	Text, Data, URL string
}

// Sent is a message the bot sent, or an edit of one.
type Sent struct {
	// Method is sendMessage, editMessageText, editMessageReplyMarkup,
	// sendPhoto, sendDocument, sendVoice or sendAudio.
	Method    string
	ChatID    int64
	ThreadID  int64
	MessageID int64
	// Text is the text (or caption) as the bot sent it, markup included;
	// Plain is it after entity parsing (what the user sees).
	Text, Plain string
	ParseMode   string
	// ReplyTo is reply_parameters.message_id or reply_to_message_id.
	ReplyTo int64
	// Buttons is reply_markup.inline_keyboard.
	Buttons [][]Button
	// File is the uploaded file's name, or the file_id or URL sent;
	// FileSize and FileData the upload's size and bytes.
	File     string
	FileSize int64
	FileData []byte
	At       time.Time
}

// Deletion is one successful deleteMessage.
type Deletion struct {
	ChatID, MessageID int64
}

// Call is one request with the right token, whatever its outcome.
type Call struct {
	Method string
	Params map[string]string
	// Files maps the multipart file fields to their file names.
	Files map[string]string
	At    time.Time
}

// Server is a fake Bot API. It is safe for concurrent use.
type Server struct {
	token     string
	hs        *httptest.Server
	done      chan struct{}
	closeOnce sync.Once

	mu             sync.Mutex
	nextUpdate     int64
	pending        []update
	wake           chan struct{} // closed (and replaced) by every push
	polling        bool
	polls          []Poll
	chats          map[int64]*chat
	sent           []Sent
	deletions      []Deletion
	commands       []Command
	answers        []Answer
	actions        []Action
	webhookDeletes []bool
	rules          []*rule
	files          map[string]*file // by file_id
	paths          map[string]*file // by file_path
	callbacks      map[string]bool  // callback_query ids pushed
	handlers       map[string]func(map[string]string) any
	calls          []Call
	seq            int64
}

type update struct {
	id  int64
	raw json.RawMessage
}

type chat struct {
	info map[string]any // the Chat object
	next int64          // the last message id given out
	msgs map[int64]*msg
}

type msg struct {
	sent      Sent // the current state (bot messages)
	fromBot   bool
	synthetic bool // made up as the target of ReplyToBot, never sent
	from      User
	text      string // a user's text or caption
	media     string // photo, document, voice, audio ("" = text)
	fileID    string
	date      int64
	editDate  int64
	deleted   bool
}

type file struct {
	id, name, path string
	data           []byte
	size           int64
}

type rule struct {
	method     string // lower case; "*" = any
	left       int
	code       int
	desc       string
	retryAfter int
}

// apiError is an error answer of the API.
type apiError struct {
	code       int
	desc       string
	retryAfter int
}

func badRequest(format string, a ...any) *apiError {
	return &apiError{code: http.StatusBadRequest, desc: "Bad Request: " + fmt.Sprintf(format, a...)}
}

// New starts a fake Bot API on 127.0.0.1 that accepts token; it is closed
// at the test's cleanup.
func New(t testing.TB, token string) *Server {
	t.Helper()
	s := &Server{
		token:      token,
		done:       make(chan struct{}),
		nextUpdate: FirstUpdateID,
		wake:       make(chan struct{}),
		chats:      map[int64]*chat{},
		files:      map[string]*file{},
		paths:      map[string]*file{},
		callbacks:  map[string]bool{},
		handlers:   map[string]func(map[string]string) any{},
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("telegramtest: listen on loopback: %v", err)
	}
	s.hs = httptest.NewUnstartedServer(http.HandlerFunc(s.serveHTTP))
	// Swap in our listener so the fake is on 127.0.0.1 whatever
	// httptest's flags say.
	if err := s.hs.Listener.Close(); err != nil {
		t.Fatalf("telegramtest: close httptest's listener: %v", err)
	}
	s.hs.Listener = l
	s.hs.Start()
	t.Cleanup(s.Close)
	return s
}

// URL is the API root to configure, e.g. http://127.0.0.1:41234.
func (s *Server) URL() string { return s.hs.URL }

// Close ends long polls in progress and stops the server. It may be called
// more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.done)
		s.hs.Close()
	})
}

// Push queues an update: u is its body without update_id, e.g.
// map[string]any{"message": {...}}. It returns the update_id given to it
// (from FirstUpdateID on) and wakes a waiting getUpdates. Messages and
// callback queries in it become known to the server (replies to them,
// answers to them), as helpers' do.
func (s *Server) Push(u map[string]any) int64 {
	raw, err := json.Marshal(u)
	if err != nil {
		panic(fmt.Sprintf("telegramtest: Push: encode the update: %v", err))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.learnLocked(raw)
	return s.pushLocked(raw)
}

func (s *Server) pushLocked(body json.RawMessage) int64 {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		panic(fmt.Sprintf("telegramtest: Push: the update is not a JSON object: %v", err))
	}
	id := s.nextUpdate
	s.nextUpdate++
	m["update_id"] = json.RawMessage(strconv.FormatInt(id, 10))
	raw, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("telegramtest: Push: encode the update: %v", err))
	}
	s.pending = append(s.pending, update{id: id, raw: raw})
	close(s.wake)
	s.wake = make(chan struct{})
	return id
}

// learnLocked records the messages and callback queries of an update
// pushed raw, so that the bot can reply to, delete and answer them.
func (s *Server) learnLocked(raw []byte) {
	var u map[string]json.RawMessage
	if json.Unmarshal(raw, &u) != nil {
		return // pushLocked reports it
	}
	for _, k := range []string{"message", "edited_message", "channel_post", "edited_channel_post", "business_message"} {
		var m struct {
			MessageID int64          `json:"message_id"`
			Date      int64          `json:"date"`
			Text      string         `json:"text"`
			Caption   string         `json:"caption"`
			Chat      map[string]any `json:"chat"`
			From      *struct {
				ID        int64  `json:"id"`
				FirstName string `json:"first_name"`
				LastName  string `json:"last_name"`
				Username  string `json:"username"`
			} `json:"from"`
		}
		if len(u[k]) == 0 || json.Unmarshal(u[k], &m) != nil || m.Chat == nil {
			continue
		}
		id, ok := m.Chat["id"].(float64)
		if !ok {
			continue
		}
		c := s.chatLocked(int64(id))
		if c.info == nil {
			c.info = m.Chat
		}
		if m.MessageID == 0 || c.msgs[m.MessageID] != nil {
			continue
		}
		if m.MessageID > c.next {
			c.next = m.MessageID
		}
		rec := &msg{date: m.Date, text: m.Text + m.Caption}
		if m.From != nil {
			rec.from = User{ID: m.From.ID, FirstName: m.From.FirstName, LastName: m.From.LastName, Username: m.From.Username}
		}
		if m.From != nil && m.From.ID == BotID {
			// A bot message in a pushed update (e.g. a reply's target):
			// known, but not something the bot sent in this test.
			rec.fromBot, rec.synthetic = true, true
			rec.sent = Sent{Method: "sendMessage", ChatID: int64(id), MessageID: m.MessageID, Text: rec.text, Plain: rec.text}
		}
		c.msgs[m.MessageID] = rec
	}
	var cq struct {
		ID string `json:"id"`
	}
	if len(u["callback_query"]) > 0 && json.Unmarshal(u["callback_query"], &cq) == nil && cq.ID != "" {
		s.callbacks[cq.ID] = true
	}
}

func (s *Server) chatLocked(id int64) *chat {
	c := s.chats[id]
	if c == nil {
		c = &chat{msgs: map[int64]*msg{}}
		s.chats[id] = c
	}
	return c
}

// chatJSON is the Chat object of id: as pushed, else by its sign
// (users' ids are positive, groups' negative).
func (s *Server) chatJSON(id int64) map[string]any {
	if c := s.chats[id]; c != nil && c.info != nil {
		return c.info
	}
	if id > 0 {
		return map[string]any{"id": id, "type": "private"}
	}
	return map[string]any{"id": id, "type": "supergroup", "title": GroupTitle}
}

func botJSON() map[string]any {
	return map[string]any{"id": BotID, "is_bot": true, "first_name": BotFirstName, "username": BotUsername}
}

func userJSON(u User) map[string]any {
	m := map[string]any{"id": u.ID, "is_bot": false, "first_name": u.FirstName}
	if u.LastName != "" {
		m["last_name"] = u.LastName
	}
	if u.Username != "" {
		m["username"] = u.Username
	}
	return m
}

// MsgOpt shapes a message DM or Group pushes.
type MsgOpt func(*msgOpts)

type msgOpts struct {
	thread     int64
	replyToBot *string
	replyTo    int64
	mention    bool
	media      string
	fileID     string
	edited     int64
}

// Topic puts the message in forum topic threadID (message_thread_id,
// is_topic_message; the chat becomes a forum). As Telegram does, a
// message in a topic that replies to nothing else carries the topic's
// creation message as reply_to_message.
func Topic(threadID int64) MsgOpt { return func(o *msgOpts) { o.thread = threadID } }

// ReplyToBot makes the message a reply to the bot's latest message in the
// chat whose text (plain or as sent) is text; when there is none, to a
// message of the bot with that text made up for it (known to the server
// but not in Sent or Messages).
func ReplyToBot(text string) MsgOpt { return func(o *msgOpts) { o.replyToBot = &text } }

// ReplyTo makes the message a reply to message id of the chat.
func ReplyTo(messageID int64) MsgOpt { return func(o *msgOpts) { o.replyTo = messageID } }

// MentionBot prefixes the text with "@edge_test_bot " and adds the
// "mention" entity.
func MentionBot() MsgOpt { return func(o *msgOpts) { o.mention = true } }

// Photo attaches a photo; the message's text becomes its caption. The
// file's size comes from AddFile or AddFileSized when fileID was added.
func Photo(fileID string) MsgOpt { return media("photo", fileID) }

// Document attaches a document (file_name from AddFile); the message's
// text becomes its caption.
func Document(fileID string) MsgOpt { return media("document", fileID) }

// Voice attaches a voice note; the message's text becomes its caption.
func Voice(fileID string) MsgOpt { return media("voice", fileID) }

// Audio attaches an audio file; the message's text becomes its caption.
func Audio(fileID string) MsgOpt { return media("audio", fileID) }

func media(kind, fileID string) MsgOpt {
	return func(o *msgOpts) { o.media, o.fileID = kind, fileID }
}

// Edited sends the message as an edited_message of message messageID
// (same message_id, with edit_date).
func Edited(messageID int64) MsgOpt { return func(o *msgOpts) { o.edited = messageID } }

// DM pushes a message from from in its private chat with the bot
// (chat.id == from.ID).
func (s *Server) DM(from User, text string, opt ...MsgOpt) int64 {
	info := map[string]any{"id": from.ID, "type": "private", "first_name": from.FirstName}
	if from.LastName != "" {
		info["last_name"] = from.LastName
	}
	if from.Username != "" {
		info["username"] = from.Username
	}
	return s.pushMessage(from.ID, info, from, text, opt)
}

// Group pushes a message from from in supergroup chatID (negative, as
// Telegram's are).
func (s *Server) Group(chatID int64, from User, text string, opt ...MsgOpt) int64 {
	info := map[string]any{"id": chatID, "type": "supergroup", "title": GroupTitle}
	return s.pushMessage(chatID, info, from, text, opt)
}

func (s *Server) pushMessage(chatID int64, info map[string]any, from User, text string, opt []MsgOpt) int64 {
	var o msgOpts
	for _, f := range opt {
		f(&o)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chatLocked(chatID)
	if o.thread != 0 || (c.info != nil && c.info["is_forum"] == true) {
		if info["type"] != "private" {
			info["is_forum"] = true
		}
	}
	c.info = info
	now := time.Now().Unix()

	// The bot's message a ReplyToBot answers; made up (before the reply,
	// so its id is lower) when the bot sent none with that text.
	var replyToBot int64
	if o.replyToBot != nil {
		for mid, rec := range c.msgs {
			if rec.fromBot && !rec.deleted && (rec.sent.Plain == *o.replyToBot || rec.sent.Text == *o.replyToBot) && mid > replyToBot {
				replyToBot = mid
			}
		}
		if replyToBot == 0 {
			c.next++
			replyToBot = c.next
			c.msgs[replyToBot] = &msg{
				fromBot: true, synthetic: true, date: now,
				sent: Sent{Method: "sendMessage", ChatID: chatID, ThreadID: o.thread, MessageID: replyToBot, Text: *o.replyToBot, Plain: *o.replyToBot, At: time.Now()},
			}
		}
	}

	id := o.edited
	if id == 0 {
		c.next++
		id = c.next
	} else if id > c.next {
		c.next = id
	}
	m := map[string]any{
		"message_id": id,
		"date":       now,
		"chat":       info,
		"from":       userJSON(from),
	}
	if o.thread != 0 {
		m["message_thread_id"] = o.thread
		m["is_topic_message"] = true
	}

	var entities []map[string]any
	if o.mention {
		mention := "@" + BotUsername
		text = mention + " " + text
		entities = append(entities, map[string]any{"type": "mention", "offset": 0, "length": utf16Len(mention)})
	}
	if strings.HasPrefix(text, "/") {
		word, _, _ := strings.Cut(text, " ")
		word, _, _ = strings.Cut(word, "\n")
		entities = append(entities, map[string]any{"type": "bot_command", "offset": 0, "length": utf16Len(word)})
	}
	textKey, entKey := "text", "entities"
	if o.media != "" {
		textKey, entKey = "caption", "caption_entities"
		m[o.media] = s.mediaJSON(o.media, o.fileID)
	}
	if text != "" || o.media == "" {
		m[textKey] = text
	}
	if len(entities) > 0 {
		m[entKey] = entities
	}

	switch {
	case replyToBot != 0:
		m["reply_to_message"] = s.messageJSON(chatID, replyToBot, false)
	case o.replyTo != 0:
		if c.msgs[o.replyTo] != nil {
			m["reply_to_message"] = s.messageJSON(chatID, o.replyTo, false)
		} else {
			m["reply_to_message"] = map[string]any{"message_id": o.replyTo, "date": now, "chat": info}
		}
	case o.thread != 0:
		m["reply_to_message"] = map[string]any{
			"message_id": o.thread, "date": now, "chat": info,
			"message_thread_id": o.thread, "is_topic_message": true,
			"forum_topic_created": map[string]any{"name": "Topic " + strconv.FormatInt(o.thread, 10), "icon_color": 7322096},
		}
	}

	key := "message"
	if o.edited != 0 {
		key = "edited_message"
		m["edit_date"] = now
	}
	rec := c.msgs[id]
	if rec == nil {
		rec = &msg{date: now}
		c.msgs[id] = rec
	}
	rec.from, rec.text, rec.media, rec.fileID = from, text, o.media, o.fileID
	if o.edited != 0 {
		rec.editDate = now
	}
	raw, err := json.Marshal(map[string]any{key: m})
	if err != nil {
		panic(fmt.Sprintf("telegramtest: encode a message update: %v", err))
	}
	return s.pushLocked(raw)
}

// Press pushes a callback_query: from pressed the button with data under
// message messageID of chatID. The message is the bot's as it is now when
// the server knows it.
func (s *Server) Press(from User, chatID int64, messageID int64, data string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	id := strconv.FormatInt(4_000_000_000_000_000_000+s.seq, 10)
	s.callbacks[id] = true
	var m map[string]any
	if c := s.chats[chatID]; c != nil && c.msgs[messageID] != nil && !c.msgs[messageID].deleted {
		m = s.messageJSON(chatID, messageID, true)
	} else {
		m = map[string]any{"message_id": messageID, "date": time.Now().Unix(), "chat": s.chatJSON(chatID)}
	}
	cq := map[string]any{
		"id":            id,
		"from":          userJSON(from),
		"message":       m,
		"chat_instance": "ci" + strconv.FormatInt(chatID, 10),
		"data":          data,
	}
	raw, err := json.Marshal(map[string]any{"callback_query": cq})
	if err != nil {
		panic(fmt.Sprintf("telegramtest: encode a callback_query update: %v", err))
	}
	return s.pushLocked(raw)
}

// mediaJSON is the photo (an array of sizes), document, voice or audio
// object of a message.
func (s *Server) mediaJSON(kind, fileID string) any {
	obj := map[string]any{"file_id": fileID, "file_unique_id": uniqueID(fileID)}
	f := s.files[fileID]
	if f != nil {
		obj["file_size"] = f.size
	}
	switch kind {
	case "photo":
		obj["width"], obj["height"] = 1280, 960
		return []any{obj}
	case "document":
		if f != nil {
			obj["file_name"] = f.name
			if t := mime.TypeByExtension(extension(f.name)); t != "" {
				obj["mime_type"] = t
			}
		}
	case "voice":
		obj["duration"], obj["mime_type"] = 1, "audio/ogg"
	case "audio":
		obj["duration"] = 1
		if f != nil {
			obj["file_name"] = f.name
		}
	}
	return obj
}

func extension(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i:]
	}
	return ""
}

func uniqueID(fileID string) string { return "U" + fileID }

// messageJSON is the Message object of message id of chatID; withReply
// includes its reply_to_message (one level, as Telegram).
func (s *Server) messageJSON(chatID, id int64, withReply bool) map[string]any {
	rec := s.chats[chatID].msgs[id]
	m := map[string]any{"message_id": id, "date": rec.date, "chat": s.chatJSON(chatID)}
	text := rec.text
	if rec.fromBot {
		m["from"] = botJSON()
		text = rec.sent.Plain
		if rec.sent.ThreadID != 0 {
			m["message_thread_id"] = rec.sent.ThreadID
		}
		if len(rec.sent.Buttons) > 0 {
			m["reply_markup"] = markupJSON(rec.sent.Buttons)
		}
		if withReply && rec.sent.ReplyTo != 0 && s.chats[chatID].msgs[rec.sent.ReplyTo] != nil {
			m["reply_to_message"] = s.messageJSON(chatID, rec.sent.ReplyTo, false)
		}
	} else if rec.from.ID != 0 {
		m["from"] = userJSON(rec.from)
	}
	if rec.media != "" {
		m[rec.media] = s.mediaJSON(rec.media, rec.fileID)
		if text != "" {
			m["caption"] = text
		}
	} else {
		m["text"] = text
	}
	if rec.editDate != 0 {
		m["edit_date"] = rec.editDate
	}
	return m
}

func markupJSON(rows [][]Button) map[string]any {
	kb := make([][]map[string]any, len(rows))
	for i, row := range rows {
		for _, b := range row {
			o := map[string]any{"text": b.Text}
			if b.Data != "" {
				o["callback_data"] = b.Data
			}
			if b.URL != "" {
				o["url"] = b.URL
			}
			kb[i] = append(kb[i], o)
		}
	}
	return map[string]any{"inline_keyboard": kb}
}

// Limit makes the next n calls of method (any method: "*") answer HTTP
// 429 "Too Many Requests: retry after retryAfter" with
// parameters.retry_after.
func (s *Server) Limit(method string, n int, retryAfter int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, &rule{
		method: strings.ToLower(method), left: n, code: http.StatusTooManyRequests,
		desc:       "Too Many Requests: retry after " + strconv.Itoa(retryAfter),
		retryAfter: retryAfter,
	})
}

// Fail makes the next n calls of method (any method: "*") answer error
// code with description, e.g. Fail("sendMessage", 1, 403, "Forbidden:
// bot was blocked by the user"). The HTTP status is code.
func (s *Server) Fail(method string, n int, code int, description string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, &rule{method: strings.ToLower(method), left: n, code: code, desc: description})
}

// injectedLocked is the error a rule makes method answer, if any; it
// counts the call against the rule.
func (s *Server) injectedLocked(method string) *apiError {
	for _, r := range s.rules {
		if r.left > 0 && (r.method == "*" || r.method == method) {
			r.left--
			return &apiError{code: r.code, desc: r.desc, retryAfter: r.retryAfter}
		}
	}
	return nil
}

// Handle answers method (one the fake lacks, or instead of its own) with
// {"ok":true,"result":fn(params)}. Errors still come from Limit and Fail.
func (s *Server) Handle(method string, fn func(params map[string]string) any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[strings.ToLower(method)] = fn
}

// AddFile makes file fileID known: getFile returns it with file_path
// "documents/<name>" and the file URL serves data.
func (s *Server) AddFile(fileID string, name string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addFileLocked(&file{id: fileID, name: name, data: bytes.Clone(data), size: int64(len(data))})
}

// AddFileSized makes file fileID known with size bytes but stores none:
// downloading it streams size zero bytes. For tests of size caps (getFile
// refuses files over MaxDownloadSize, as Telegram does).
func (s *Server) AddFileSized(fileID, name string, size int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addFileLocked(&file{id: fileID, name: name, size: size})
}

func (s *Server) addFileLocked(f *file) {
	if old := s.files[f.id]; old != nil {
		delete(s.paths, old.path)
	}
	f.path = "documents/" + f.name
	if other := s.paths[f.path]; other != nil && other.id != f.id {
		f.path = "documents/" + f.id + "_" + f.name
	}
	s.files[f.id] = f
	s.paths[f.path] = f
}

// Polls returns the getUpdates calls so far, in order.
func (s *Server) Polls() []Poll {
	return clone(s, &s.polls)
}

// Unconfirmed returns the update_ids not yet confirmed by a getUpdates
// offset, in order: what a client that starts afresh gets.
func (s *Server) Unconfirmed() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]int64, 0, len(s.pending))
	for _, u := range s.pending {
		ids = append(ids, u.id)
	}
	return ids
}

// Sent returns the messages the bot sent and edited, in order.
func (s *Server) Sent() []Sent {
	return clone(s, &s.sent)
}

// Messages returns the bot's messages in chatID as they are now (after
// edits, without deleted ones), in order of message_id.
func (s *Server) Messages(chatID int64) []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chats[chatID]
	if c == nil {
		return nil
	}
	var out []Sent
	for _, rec := range c.msgs {
		if rec.fromBot && !rec.synthetic && !rec.deleted {
			out = append(out, rec.sent)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].MessageID < out[j].MessageID })
	return out
}

// Deletions returns the messages deleted, in order.
func (s *Server) Deletions() []Deletion {
	return clone(s, &s.deletions)
}

// Commands returns the commands of the latest setMyCommands (nil after
// deleteMyCommands).
func (s *Server) Commands() []Command {
	return clone(s, &s.commands)
}

// Answers returns the answerCallbackQuery calls, in order.
func (s *Server) Answers() []Answer {
	return clone(s, &s.answers)
}

// Actions returns the sendChatAction calls, in order.
func (s *Server) Actions() []Action {
	return clone(s, &s.actions)
}

// WebhookDeletes returns drop_pending_updates of each deleteWebhook call.
func (s *Server) WebhookDeletes() []bool {
	return clone(s, &s.webhookDeletes)
}

// Calls returns every request made with the right token, in order.
func (s *Server) Calls() []Call {
	return clone(s, &s.calls)
}

// WaitSent polls Sent until cond holds and returns it; after timeout it
// fails the test with what was sent.
func (s *Server) WaitSent(t testing.TB, timeout time.Duration, cond func([]Sent) bool) []Sent {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := s.Sent()
		if cond(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("telegramtest: condition not met within %v; the bot sent:\n%s", timeout, Dump(got))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// WaitPolling waits until a getUpdates long poll is waiting (so an update
// pushed now is delivered by it), else fails the test after timeout.
func (s *Server) WaitPolling(t testing.TB, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s.mu.Lock()
		polling := s.polling
		s.mu.Unlock()
		if polling {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("telegramtest: no getUpdates long poll within %v; polls: %+v", timeout, s.Polls())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Dump formats sent messages one a line, for failure messages.
func Dump(sent []Sent) string {
	if len(sent) == 0 {
		return "  (nothing)\n"
	}
	var b strings.Builder
	for _, m := range sent {
		fmt.Fprintf(&b, "  %s chat=%d thread=%d msg=%d reply=%d mode=%q text=%q", m.Method, m.ChatID, m.ThreadID, m.MessageID, m.ReplyTo, m.ParseMode, m.Text)
		if len(m.Buttons) > 0 {
			fmt.Fprintf(&b, " buttons=%v", m.Buttons)
		}
		if m.File != "" {
			fmt.Fprintf(&b, " file=%q (%d bytes)", m.File, m.FileSize)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// ---- HTTP ----

type upload struct {
	name string
	data []byte
}

type params struct {
	v  map[string]string
	up map[string]upload
}

func (p params) str(k string) string { return p.v[k] }

// int reads an integer parameter; 0 when absent.
func (p params) int(k string) (int64, *apiError) {
	v := p.v[k]
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, badRequest("invalid %s specified", k)
	}
	return n, nil
}

func (p params) bool(k string) bool {
	b, err := strconv.ParseBool(p.v[k])
	return err == nil && b
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/")
	if rest, ok := strings.CutPrefix(path, "file/"); ok {
		s.serveFile(w, r, rest)
		return
	}
	seg, method, _ := strings.Cut(path, "/")
	token, ok := strings.CutPrefix(seg, "bot")
	if !ok {
		writeError(w, &apiError{code: http.StatusNotFound, desc: "Not Found"})
		return
	}
	if token != s.token {
		writeError(w, &apiError{code: http.StatusUnauthorized, desc: "Unauthorized"})
		return
	}
	p, err := readParams(r)
	if err != nil {
		writeError(w, badRequest("%v", err))
		return
	}
	call := Call{Method: method, Params: p.v, At: time.Now()}
	for field, u := range p.up {
		if call.Files == nil {
			call.Files = map[string]string{}
		}
		call.Files[field] = u.name
	}
	name := strings.ToLower(method)

	s.mu.Lock()
	s.calls = append(s.calls, call)
	if name == "getupdates" {
		s.mu.Unlock()
		s.getUpdates(w, r, p)
		return
	}
	if e := s.injectedLocked(name); e != nil {
		s.mu.Unlock()
		writeError(w, e)
		return
	}
	custom := s.handlers[name]
	s.mu.Unlock()
	if custom != nil {
		writeResult(w, custom(p.v))
		return
	}

	var h func(params) (any, *apiError)
	switch name {
	case "getme":
		h = s.getMe
	case "deletewebhook":
		h = s.deleteWebhook
	case "getwebhookinfo":
		h = s.getWebhookInfo
	case "setmycommands":
		h = s.setMyCommands
	case "getmycommands":
		h = s.getMyCommands
	case "deletemycommands":
		h = s.deleteMyCommands
	case "sendmessage":
		h = s.sendMessage
	case "editmessagetext":
		h = s.editMessageText
	case "editmessagereplymarkup":
		h = s.editMessageReplyMarkup
	case "deletemessage":
		h = s.deleteMessage
	case "answercallbackquery":
		h = s.answerCallbackQuery
	case "sendchataction":
		h = s.sendChatAction
	case "getfile":
		h = s.getFile
	case "sendphoto":
		h = s.sendFile("sendPhoto", "photo")
	case "senddocument":
		h = s.sendFile("sendDocument", "document")
	case "sendvoice":
		h = s.sendFile("sendVoice", "voice")
	case "sendaudio":
		h = s.sendFile("sendAudio", "audio")
	default:
		writeError(w, &apiError{code: http.StatusNotFound, desc: "Not Found"})
		return
	}
	res, e := h(p)
	if e != nil {
		writeError(w, e)
		return
	}
	writeResult(w, res)
}

// readParams reads a request's parameters as the Bot API takes them: the
// query string, and a JSON object (values strings, numbers, booleans or
// objects, the latter kept as JSON text), a URL-encoded form or a
// multipart form with files.
func readParams(r *http.Request) (params, error) {
	p := params{v: map[string]string{}, up: map[string]upload{}}
	for k, v := range r.URL.Query() {
		p.v[k] = v[0]
	}
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil && r.Header.Get("Content-Type") != "" {
		return p, fmt.Errorf("bad Content-Type: %w", err)
	}
	switch ct {
	case "application/json":
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return p, fmt.Errorf("read the body: %w", err)
		}
		if len(bytes.TrimSpace(body)) == 0 {
			return p, nil
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			return p, fmt.Errorf("can't parse JSON object: %w", err)
		}
		for k, v := range m {
			switch x := v.(type) {
			case nil:
			case string:
				p.v[k] = x
			case json.Number:
				p.v[k] = x.String()
			case bool:
				p.v[k] = strconv.FormatBool(x)
			default:
				b, err := json.Marshal(x)
				if err != nil {
					return p, fmt.Errorf("parameter %s: %w", k, err)
				}
				p.v[k] = string(b)
			}
		}
	case "application/x-www-form-urlencoded":
		if err := r.ParseForm(); err != nil {
			return p, fmt.Errorf("can't parse the form: %w", err)
		}
		for k, v := range r.PostForm {
			p.v[k] = v[0]
		}
	case "multipart/form-data":
		if err := r.ParseMultipartForm(64 << 20); err != nil {
			return p, fmt.Errorf("can't parse the multipart form: %w", err)
		}
		for k, v := range r.MultipartForm.Value {
			p.v[k] = v[0]
		}
		for field, fhs := range r.MultipartForm.File {
			f, err := fhs[0].Open()
			if err != nil {
				return p, fmt.Errorf("open file part %s: %w", field, err)
			}
			data, err := io.ReadAll(f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return p, fmt.Errorf("read file part %s: %w", field, err)
			}
			p.up[field] = upload{name: fhs[0].Filename, data: data}
		}
	}
	return p, nil
}

func writeResult(w http.ResponseWriter, result any) {
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "result": result})
}

func writeError(w http.ResponseWriter, e *apiError) {
	body := map[string]any{"ok": false, "error_code": e.code, "description": e.desc}
	if e.retryAfter != 0 {
		body["parameters"] = map[string]any{"retry_after": e.retryAfter}
	}
	status := e.code
	if status < 400 || status > 599 {
		status = http.StatusBadRequest
	}
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only a handler's result can fail to encode: a test's bug.
		b = []byte(`{"ok":false,"error_code":500,"description":"telegramtest: encode the answer: ` + strings.ReplaceAll(err.Error(), `"`, `'`) + `"}`)
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	// A failed write means the client went away; there is no one to tell.
	_, _ = w.Write(b)
}

func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, rest string) {
	seg, path, _ := strings.Cut(rest, "/")
	token, ok := strings.CutPrefix(seg, "bot")
	if !ok {
		writeError(w, &apiError{code: http.StatusNotFound, desc: "Not Found"})
		return
	}
	if token != s.token {
		writeError(w, &apiError{code: http.StatusUnauthorized, desc: "Unauthorized"})
		return
	}
	s.mu.Lock()
	f := s.paths[path]
	s.mu.Unlock()
	if f == nil || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		writeError(w, &apiError{code: http.StatusNotFound, desc: "Not Found"})
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(f.size, 10))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	var src io.Reader = bytes.NewReader(f.data)
	if f.data == nil {
		src = zeros{}
	}
	// A failed copy means the client went away (or stopped reading, as a
	// capped download does); there is no one to tell.
	_, _ = io.CopyN(w, src, f.size)
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// ---- methods ----

func (s *Server) getMe(params) (any, *apiError) {
	me := botJSON()
	me["can_join_groups"] = true
	me["can_read_all_group_messages"] = false
	me["supports_inline_queries"] = false
	return me, nil
}

func (s *Server) deleteWebhook(p params) (any, *apiError) {
	drop := p.bool("drop_pending_updates")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.webhookDeletes = append(s.webhookDeletes, drop)
	if drop {
		s.pending = nil
	}
	return true, nil
}

func (s *Server) getWebhookInfo(params) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return map[string]any{"url": "", "has_custom_certificate": false, "pending_update_count": len(s.pending)}, nil
}

func (s *Server) setMyCommands(p params) (any, *apiError) {
	var cmds []Command
	if raw := p.str("commands"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &cmds); err != nil {
			return nil, badRequest("can't parse commands JSON object")
		}
	}
	if len(cmds) > 100 {
		return nil, badRequest("too many commands specified")
	}
	for _, c := range cmds {
		if !validCommand(c.Command) {
			return nil, badRequest("BOT_COMMAND_INVALID")
		}
		if c.Description == "" || utf8.RuneCountInString(c.Description) > 256 {
			return nil, badRequest("BOT_COMMAND_DESCRIPTION_INVALID")
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commands = cmds
	return true, nil
}

// validCommand: 1-32 characters, lower-case letters, digits and
// underscores.
func validCommand(c string) bool {
	if c == "" || len(c) > 32 {
		return false
	}
	for _, r := range c {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

func (s *Server) getMyCommands(params) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Command{}, s.commands...), nil
}

func (s *Server) deleteMyCommands(params) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commands = nil
	return true, nil
}

// getUpdates confirms the updates below offset, then answers the pending
// ones from offset on, waiting up to timeout seconds for one.
func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, p params) {
	offset, e := p.int("offset")
	if e != nil {
		writeError(w, e)
		return
	}
	limit64, e := p.int("limit")
	if e != nil {
		writeError(w, e)
		return
	}
	timeout64, e := p.int("timeout")
	if e != nil {
		writeError(w, e)
		return
	}
	limit := int(limit64)
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	timeout := max(int(timeout64), 0)

	s.mu.Lock()
	poll := Poll{Offset: offset, Limit: limit, Timeout: timeout, Code: http.StatusOK, At: time.Now()}
	if e := s.injectedLocked("getupdates"); e != nil {
		poll.Code = e.code
		s.polls = append(s.polls, poll)
		s.mu.Unlock()
		writeError(w, e)
		return
	}
	if s.polling {
		poll.Code = http.StatusConflict
		s.polls = append(s.polls, poll)
		s.mu.Unlock()
		writeError(w, &apiError{code: http.StatusConflict, desc: DescConflict})
		return
	}
	s.polls = append(s.polls, poll)

	// Confirm: forget what is below offset. A negative offset keeps the
	// last -offset updates and forgets the rest.
	if offset < 0 {
		if n := int(-offset); n < len(s.pending) {
			s.pending = s.pending[len(s.pending)-n:]
		}
		offset = 0
	}
	if offset > 0 {
		i := 0
		for i < len(s.pending) && s.pending[i].id < offset {
			i++
		}
		s.pending = s.pending[i:]
	}

	timer := time.NewTimer(time.Duration(timeout) * time.Second)
	defer timer.Stop()
	for {
		batch := make([]json.RawMessage, 0, limit)
		for _, u := range s.pending {
			if len(batch) == limit {
				break
			}
			if u.id >= offset {
				batch = append(batch, u.raw)
			}
		}
		if len(batch) > 0 || timeout == 0 {
			s.polling = false
			s.mu.Unlock()
			writeResult(w, batch)
			return
		}
		wake := s.wake
		s.polling = true
		s.mu.Unlock()
		select {
		case <-wake:
			s.mu.Lock()
		case <-timer.C:
			s.mu.Lock()
			timeout = 0
		case <-r.Context().Done():
			s.mu.Lock()
			s.polling = false
			s.mu.Unlock()
			return
		case <-s.done:
			s.mu.Lock()
			s.polling = false
			s.mu.Unlock()
			writeResult(w, []json.RawMessage{})
			return
		}
	}
}

// chatID reads chat_id, which Telegram requires.
func chatID(p params) (int64, *apiError) {
	v := p.str("chat_id")
	if v == "" {
		return 0, badRequest("chat_id is empty")
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		// @channelusername: the fake knows no channels.
		return 0, badRequest("chat not found")
	}
	return id, nil
}

// parseText checks text in parse_mode as Telegram does and returns what
// the user sees. emptyOK is for captions.
func parseText(text, mode string, maxLen int, tooLong string, emptyOK bool) (string, *apiError) {
	if !utf8.ValidString(text) {
		return "", badRequest("strings must be encoded in UTF-8")
	}
	plain := text
	switch strings.ToLower(mode) {
	case "":
	case "html":
		var err error
		if plain, err = parseHTML(text); err != nil {
			return "", badRequest("can't parse entities: %v", err)
		}
	case "markdown", "markdownv2":
		// Not checked: the adapter sends HTML.
	default:
		return "", badRequest("unsupported parse_mode")
	}
	if !emptyOK && strings.TrimFunc(plain, unicode.IsSpace) == "" {
		return "", badRequest("message text is empty")
	}
	if utf16Len(plain) > maxLen {
		return "", badRequest("%s", tooLong)
	}
	return plain, nil
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// buttonActions are the fields of an InlineKeyboardButton that make it do
// something; Telegram refuses buttons with none.
var buttonActions = []string{"callback_data", "url", "web_app", "login_url", "switch_inline_query",
	"switch_inline_query_current_chat", "switch_inline_query_chosen_chat", "copy_text", "callback_game", "pay"}

// parseMarkup reads reply_markup's inline keyboard (nil for none, an
// empty object, or another kind of keyboard).
func parseMarkup(raw string) ([][]Button, *apiError) {
	if raw == "" || raw == "null" {
		return nil, nil
	}
	var m struct {
		InlineKeyboard [][]map[string]any `json:"inline_keyboard"`
	}
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, badRequest("can't parse reply keyboard markup JSON object")
	}
	var rows [][]Button
	for _, row := range m.InlineKeyboard {
		var out []Button
		for _, b := range row {
			text, _ := b["text"].(string)
			data, hasData := b["callback_data"].(string)
			url, _ := b["url"].(string)
			actions := 0
			for _, k := range buttonActions {
				if v, ok := b[k]; ok && v != nil && v != false {
					actions++
				}
			}
			if actions == 0 {
				return nil, badRequest("text buttons are unallowed in the inline keyboard")
			}
			if hasData && (data == "" || len(data) > 64) {
				return nil, badRequest("BUTTON_DATA_INVALID")
			}
			out = append(out, Button{Text: text, Data: data, URL: url})
		}
		if len(out) > 0 {
			rows = append(rows, out)
		}
	}
	return rows, nil
}

// replyTarget reads reply_parameters or reply_to_message_id.
func replyTarget(p params) (id, inChat int64, allowMissing bool, e *apiError) {
	if raw := p.str("reply_parameters"); raw != "" && raw != "null" {
		var rp struct {
			MessageID                int64 `json:"message_id"`
			ChatID                   any   `json:"chat_id"`
			AllowSendingWithoutReply bool  `json:"allow_sending_without_reply"`
		}
		if err := json.Unmarshal([]byte(raw), &rp); err != nil {
			return 0, 0, false, badRequest("can't parse reply parameters JSON object")
		}
		if f, ok := rp.ChatID.(float64); ok {
			inChat = int64(f)
		}
		return rp.MessageID, inChat, rp.AllowSendingWithoutReply, nil
	}
	id, e = p.int("reply_to_message_id")
	return id, 0, p.bool("allow_sending_without_reply"), e
}

// newMessageLocked checks the reply target and records a message the bot
// sends.
func (s *Server) newMessageLocked(p params, sent Sent, media, fileID string) (any, *apiError) {
	replyTo, replyChat, allowMissing, e := replyTarget(p)
	if e != nil {
		return nil, e
	}
	if replyChat == 0 {
		replyChat = sent.ChatID
	}
	c := s.chatLocked(sent.ChatID)
	if replyTo != 0 {
		rc := s.chats[replyChat]
		if rc == nil || rc.msgs[replyTo] == nil || rc.msgs[replyTo].deleted {
			if !allowMissing {
				return nil, badRequest("message to be replied not found")
			}
			replyTo = 0
		}
	}
	c.next++
	sent.MessageID = c.next
	sent.ReplyTo = replyTo
	sent.At = time.Now()
	c.msgs[sent.MessageID] = &msg{sent: sent, fromBot: true, media: media, fileID: fileID, date: sent.At.Unix()}
	s.sent = append(s.sent, sent)
	return s.messageJSON(sent.ChatID, sent.MessageID, true), nil
}

func (s *Server) sendMessage(p params) (any, *apiError) {
	sent, e := outgoing(p, "sendMessage", "text", MaxTextLen, "message is too long", false)
	if e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newMessageLocked(p, sent, "", "")
}

// outgoing reads what every send has: the chat, the topic, the text (or
// caption: field, as Telegram checks it) and the inline keyboard.
func outgoing(p params, method, field string, max int, tooLong string, caption bool) (Sent, *apiError) {
	chat, e := chatID(p)
	if e != nil {
		return Sent{}, e
	}
	thread, e := p.int("message_thread_id")
	if e != nil {
		return Sent{}, e
	}
	text, mode := p.str(field), p.str("parse_mode")
	plain, e := parseText(text, mode, max, tooLong, caption)
	if e != nil {
		return Sent{}, e
	}
	buttons, e := parseMarkup(p.str("reply_markup"))
	if e != nil {
		return Sent{}, e
	}
	return Sent{Method: method, ChatID: chat, ThreadID: thread, Text: text, Plain: plain, ParseMode: mode, Buttons: buttons}, nil
}

// editTarget finds the bot message an edit names.
func (s *Server) editTargetLocked(p params) (int64, int64, *msg, *apiError) {
	if p.str("inline_message_id") != "" {
		return 0, 0, nil, badRequest("MESSAGE_ID_INVALID")
	}
	chat, e := chatID(p)
	if e != nil {
		return 0, 0, nil, e
	}
	id, e := p.int("message_id")
	if e != nil {
		return 0, 0, nil, e
	}
	if id == 0 {
		return 0, 0, nil, badRequest("message identifier is not specified")
	}
	c := s.chats[chat]
	if c == nil || c.msgs[id] == nil || c.msgs[id].deleted {
		return 0, 0, nil, badRequest("message to edit not found")
	}
	rec := c.msgs[id]
	if !rec.fromBot {
		return 0, 0, nil, badRequest("message can't be edited")
	}
	return chat, id, rec, nil
}

func (s *Server) editMessageText(p params) (any, *apiError) {
	text, mode := p.str("text"), p.str("parse_mode")
	plain, e := parseText(text, mode, MaxTextLen, "MESSAGE_TOO_LONG", false)
	if e != nil {
		return nil, e
	}
	buttons, e := parseMarkup(p.str("reply_markup"))
	if e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	chat, id, rec, e := s.editTargetLocked(p)
	if e != nil {
		return nil, e
	}
	if rec.media != "" {
		return nil, badRequest("there is no text in the message to edit")
	}
	if rec.sent.Text == text && rec.sent.Plain == plain && sameButtons(rec.sent.Buttons, buttons) {
		return nil, &apiError{code: http.StatusBadRequest, desc: DescNotModified}
	}
	return s.editLocked(chat, id, rec, "editMessageText", text, plain, mode, buttons), nil
}

func (s *Server) editMessageReplyMarkup(p params) (any, *apiError) {
	buttons, e := parseMarkup(p.str("reply_markup"))
	if e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	chat, id, rec, e := s.editTargetLocked(p)
	if e != nil {
		return nil, e
	}
	if sameButtons(rec.sent.Buttons, buttons) {
		return nil, &apiError{code: http.StatusBadRequest, desc: DescNotModified}
	}
	return s.editLocked(chat, id, rec, "editMessageReplyMarkup", rec.sent.Text, rec.sent.Plain, rec.sent.ParseMode, buttons), nil
}

func (s *Server) editLocked(chat, id int64, rec *msg, method, text, plain, mode string, buttons [][]Button) any {
	sent := rec.sent
	sent.Method, sent.Text, sent.Plain, sent.ParseMode, sent.Buttons = method, text, plain, mode, buttons
	sent.At = time.Now()
	rec.sent = sent
	rec.synthetic = false
	rec.editDate = sent.At.Unix()
	s.sent = append(s.sent, sent)
	return s.messageJSON(chat, id, true)
}

func sameButtons(a, b [][]Button) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

func (s *Server) deleteMessage(p params) (any, *apiError) {
	chat, e := chatID(p)
	if e != nil {
		return nil, e
	}
	id, e := p.int("message_id")
	if e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chats[chat]
	if c == nil || c.msgs[id] == nil || c.msgs[id].deleted {
		return nil, badRequest("message to delete not found")
	}
	c.msgs[id].deleted = true
	s.deletions = append(s.deletions, Deletion{ChatID: chat, MessageID: id})
	return true, nil
}

func (s *Server) answerCallbackQuery(p params) (any, *apiError) {
	a := Answer{ID: p.str("callback_query_id"), Text: p.str("text"), ShowAlert: p.bool("show_alert"), URL: p.str("url")}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.callbacks[a.ID] {
		return nil, badRequest("query is too old and response timeout expired or query ID is invalid")
	}
	s.answers = append(s.answers, a)
	return true, nil
}

var chatActions = map[string]bool{
	"typing": true, "upload_photo": true, "record_video": true, "upload_video": true,
	"record_voice": true, "upload_voice": true, "upload_document": true, "choose_sticker": true,
	"find_location": true, "record_video_note": true, "upload_video_note": true,
}

func (s *Server) sendChatAction(p params) (any, *apiError) {
	chat, e := chatID(p)
	if e != nil {
		return nil, e
	}
	thread, e := p.int("message_thread_id")
	if e != nil {
		return nil, e
	}
	action := p.str("action")
	if !chatActions[action] {
		return nil, badRequest("wrong parameter action in request")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.actions = append(s.actions, Action{ChatID: chat, ThreadID: thread, Action: action})
	return true, nil
}

func (s *Server) getFile(p params) (any, *apiError) {
	id := p.str("file_id")
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.files[id]
	if f == nil {
		return nil, badRequest("invalid file_id")
	}
	if f.size > MaxDownloadSize {
		return nil, badRequest("file is too big")
	}
	return map[string]any{"file_id": f.id, "file_unique_id": uniqueID(f.id), "file_size": f.size, "file_path": f.path}, nil
}

// sendFile is sendPhoto, sendDocument … : field is an upload (multipart,
// named by "attach://part" or the field itself), a known file_id or an
// HTTP URL.
func (s *Server) sendFile(method, field string) func(params) (any, *apiError) {
	return func(p params) (any, *apiError) {
		sent, e := outgoing(p, method, "caption", MaxCaptionLen, "message caption is too long", true)
		if e != nil {
			return nil, e
		}
		// A part named by "attach://part", or by the field itself; else
		// the value is a file_id or URL.
		v := p.str(field)
		var up upload
		uploaded := false
		if v == "" || strings.HasPrefix(v, "attach://") {
			part := field
			if name, ok := strings.CutPrefix(v, "attach://"); ok {
				part = name
			}
			if up, uploaded = p.up[part]; !uploaded {
				return nil, badRequest("there is no %s in the request", field)
			}
		}

		s.mu.Lock()
		defer s.mu.Unlock()
		var fileID string
		switch {
		case uploaded:
			s.seq++
			fileID = fmt.Sprintf("upload-%d", s.seq)
			s.addFileLocked(&file{id: fileID, name: up.name, data: up.data, size: int64(len(up.data))})
			sent.File, sent.FileSize, sent.FileData = up.name, int64(len(up.data)), up.data
		case strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://"):
			s.seq++
			fileID = fmt.Sprintf("url-%d", s.seq)
			s.addFileLocked(&file{id: fileID, name: fmt.Sprintf("url-%d", s.seq)})
			sent.File = v
		case s.files[v] != nil:
			fileID = v
			sent.File, sent.FileSize = v, s.files[v].size
		default:
			return nil, badRequest("wrong file identifier/HTTP URL specified")
		}
		return s.newMessageLocked(p, sent, field, fileID)
	}
}

// ---- HTML ----

var htmlTags = map[string]bool{
	"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true,
	"s": true, "strike": true, "del": true, "span": true, "tg-spoiler": true,
	"a": true, "code": true, "pre": true, "blockquote": true, "tg-emoji": true,
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

// parseHTML checks s against the Bot API's HTML rules (the tags it
// supports, closed in order; entities &lt; &gt; &amp; &quot; &#N; &#xN;
// only) and returns the text the user sees. The errors read as
// Telegram's do.
func parseHTML(s string) (string, error) {
	var out strings.Builder
	var open []string
	for i := 0; i < len(s); {
		switch s[i] {
		case '&':
			r, n := decodeEntity(s[i:])
			if n == 0 {
				return "", fmt.Errorf("character '&' at byte offset %d does not begin an entity and must be escaped as &amp;", i)
			}
			out.WriteRune(r)
			i += n
		case '<':
			start := i
			i++
			if i < len(s) && s[i] == '/' {
				i++
				j := i
				for i < len(s) && s[i] != '>' && !isSpace(s[i]) {
					i++
				}
				name := strings.ToLower(s[j:i])
				for i < len(s) && isSpace(s[i]) {
					i++
				}
				if i >= len(s) || s[i] != '>' {
					return "", fmt.Errorf("Unclosed end tag at byte offset %d", start)
				}
				i++
				if len(open) == 0 {
					return "", fmt.Errorf("Unexpected end tag at byte offset %d", start)
				}
				if top := open[len(open)-1]; name != top {
					return "", fmt.Errorf("End tag %q doesn't match start tag %q", name, top)
				}
				open = open[:len(open)-1]
				continue
			}
			j := i
			for i < len(s) && s[i] != '>' && !isSpace(s[i]) {
				i++
			}
			if i >= len(s) {
				return "", fmt.Errorf("Unclosed start tag at byte offset %d", start)
			}
			name := strings.ToLower(s[j:i])
			if !htmlTags[name] {
				return "", fmt.Errorf("Unsupported start tag %q at byte offset %d", name, start)
			}
			attrs, next, err := parseAttrs(s, i, start, name)
			if err != nil {
				return "", err
			}
			i = next
			switch name {
			case "span":
				if attrs["class"] != "tg-spoiler" {
					return "", fmt.Errorf("Tag \"span\" must have class \"tg-spoiler\" at byte offset %d", start)
				}
			case "tg-emoji":
				if _, err := strconv.ParseInt(attrs["emoji-id"], 10, 64); err != nil {
					return "", fmt.Errorf("Tag \"tg-emoji\" must have a numeric attribute \"emoji-id\" at byte offset %d", start)
				}
			}
			open = append(open, name)
		default:
			out.WriteByte(s[i])
			i++
		}
	}
	if len(open) > 0 {
		return "", fmt.Errorf("Can't find end tag corresponding to start tag %q", open[len(open)-1])
	}
	return out.String(), nil
}

// parseAttrs reads a start tag's attributes from s[i:] to its '>'; it
// returns them and the offset after the '>'.
func parseAttrs(s string, i, start int, tag string) (map[string]string, int, error) {
	attrs := map[string]string{}
	unclosed := fmt.Errorf("Unclosed start tag at byte offset %d", start)
	for {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i >= len(s) {
			return nil, 0, unclosed
		}
		if s[i] == '>' {
			return attrs, i + 1, nil
		}
		j := i
		for i < len(s) && !isSpace(s[i]) && s[i] != '=' && s[i] != '>' {
			i++
		}
		key := strings.ToLower(s[j:i])
		if key == "" {
			return nil, 0, fmt.Errorf("Empty attribute name in the tag %q at byte offset %d", tag, j)
		}
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i >= len(s) {
			return nil, 0, unclosed
		}
		if s[i] != '=' {
			if tag == "blockquote" && key == "expandable" {
				attrs[key] = ""
				continue
			}
			return nil, 0, fmt.Errorf("Expected equal sign in declaration of an attribute of the tag %q at byte offset %d", tag, j)
		}
		i++
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i >= len(s) {
			return nil, 0, unclosed
		}
		var raw string
		if q := s[i]; q == '"' || q == '\'' {
			i++
			j = i
			for i < len(s) && s[i] != q {
				i++
			}
			if i >= len(s) {
				return nil, 0, fmt.Errorf("Unclosed attribute value in the tag %q at byte offset %d", tag, j-1)
			}
			raw = s[j:i]
			i++
		} else {
			j = i
			for i < len(s) && !isSpace(s[i]) && s[i] != '>' {
				i++
			}
			raw = s[j:i]
		}
		val, err := decodeAttr(raw)
		if err != nil {
			return nil, 0, fmt.Errorf("in attribute %q of the tag %q at byte offset %d: %w", key, tag, start, err)
		}
		attrs[key] = val
	}
}

func decodeAttr(raw string) (string, error) {
	if !strings.Contains(raw, "&") {
		return raw, nil
	}
	var b strings.Builder
	for i := 0; i < len(raw); {
		if raw[i] != '&' {
			b.WriteByte(raw[i])
			i++
			continue
		}
		r, n := decodeEntity(raw[i:])
		if n == 0 {
			return "", errors.New("character '&' does not begin an entity and must be escaped as &amp;")
		}
		b.WriteRune(r)
		i += n
	}
	return b.String(), nil
}

// decodeEntity decodes the entity s begins with; n is 0 when it is none
// the Bot API supports.
func decodeEntity(s string) (r rune, n int) {
	for _, e := range [...]struct {
		name string
		r    rune
	}{{"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}, {"&quot;", '"'}} {
		if strings.HasPrefix(s, e.name) {
			return e.r, len(e.name)
		}
	}
	if !strings.HasPrefix(s, "&#") {
		return 0, 0
	}
	i, base := 2, 10
	if i < len(s) && (s[i] == 'x' || s[i] == 'X') {
		i, base = 3, 16
	}
	j := i
	for i < len(s) && i-j <= 8 && isDigit(s[i], base) {
		i++
	}
	if i == j || i >= len(s) || s[i] != ';' {
		return 0, 0
	}
	v, err := strconv.ParseUint(s[j:i], base, 32)
	if err != nil || v == 0 || v > unicode.MaxRune || (v >= 0xD800 && v <= 0xDFFF) {
		return 0, 0
	}
	return rune(v), i + 1
}

func isDigit(c byte, base int) bool {
	if c >= '0' && c <= '9' {
		return true
	}
	return base == 16 && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F')
}

// clone copies a recorded list under the server's lock.
func clone[T any](s *Server, list *[]T) []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]T(nil), (*list)...)
}
