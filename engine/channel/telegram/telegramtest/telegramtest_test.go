package telegramtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

const token = "123456:TEST-token"

var alice = User{ID: 4242, FirstName: "Alice", Username: "alice"}

type apiResp struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  *struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

// call POSTs params as JSON, as gotgbot does (there: all values strings).
func call(t *testing.T, ctx context.Context, s *Server, tok, method string, params any) (int, apiResp) {
	t.Helper()
	body, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/bot"+tok+"/"+method, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (int, apiResp) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", req.URL.Path, err)
	}
	defer resp.Body.Close()
	var r apiResp
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("%s: decode the answer: %v", req.URL.Path, err)
	}
	if r.OK != (resp.StatusCode == http.StatusOK) || (!r.OK && r.ErrorCode != resp.StatusCode) {
		t.Fatalf("%s: HTTP %d but %+v", req.URL.Path, resp.StatusCode, r)
	}
	return resp.StatusCode, r
}

// ok calls method and fails unless it succeeds; it decodes the result
// into out (when not nil).
func ok(t *testing.T, s *Server, method string, params any, out any) {
	t.Helper()
	code, r := call(t, context.Background(), s, token, method, params)
	if code != http.StatusOK {
		t.Fatalf("%s: %d %s", method, code, r.Description)
	}
	if out != nil {
		if err := json.Unmarshal(r.Result, out); err != nil {
			t.Fatalf("%s: decode result %s: %v", method, r.Result, err)
		}
	}
}

// fails calls method and fails unless it answers code with description.
func fails(t *testing.T, s *Server, method string, params any, code int, desc string) {
	t.Helper()
	got, r := call(t, context.Background(), s, token, method, params)
	if got != code || r.Description != desc {
		t.Fatalf("%s %v: got %d %q, want %d %q", method, params, got, r.Description, code, desc)
	}
}

type upd struct {
	UpdateID int64 `json:"update_id"`
	Message  *struct {
		MessageID       int64          `json:"message_id"`
		Date            int64          `json:"date"`
		Text            string         `json:"text"`
		Caption         string         `json:"caption"`
		MessageThreadID int64          `json:"message_thread_id"`
		IsTopicMessage  bool           `json:"is_topic_message"`
		Chat            map[string]any `json:"chat"`
		From            map[string]any `json:"from"`
		Entities        []struct {
			Type           string `json:"type"`
			Offset, Length int
		} `json:"entities"`
		ReplyToMessage *struct {
			MessageID int64          `json:"message_id"`
			Text      string         `json:"text"`
			From      map[string]any `json:"from"`
		} `json:"reply_to_message"`
		Document map[string]any `json:"document"`
	} `json:"message"`
	EditedMessage *struct {
		MessageID int64 `json:"message_id"`
		EditDate  int64 `json:"edit_date"`
	} `json:"edited_message"`
	CallbackQuery *struct {
		ID      string         `json:"id"`
		Data    string         `json:"data"`
		From    map[string]any `json:"from"`
		Message map[string]any `json:"message"`
	} `json:"callback_query"`
}

func poll(t *testing.T, s *Server, params map[string]string) []upd {
	t.Helper()
	var us []upd
	ok(t, s, "getUpdates", params, &us)
	return us
}

func ids(us []upd) []int64 {
	out := []int64{}
	for _, u := range us {
		out = append(out, u.UpdateID)
	}
	return out
}

func TestGetUpdatesConfirmsByOffset(t *testing.T) {
	s := New(t, token)
	if a, b := s.DM(alice, "one"), s.DM(alice, "two"); a != FirstUpdateID || b != FirstUpdateID+1 {
		t.Fatalf("update ids %d %d", a, b)
	}
	us := poll(t, s, map[string]string{})
	if got := ids(us); !reflect.DeepEqual(got, []int64{1000, 1001}) || us[0].Message.Text != "one" {
		t.Fatalf("first poll: %v %+v", got, us[0].Message)
	}
	// Nothing is forgotten until confirmed: a restart without an offset
	// gets everything again.
	if got := ids(poll(t, s, map[string]string{})); len(got) != 2 {
		t.Fatalf("redelivery: %v", got)
	}
	if got := ids(poll(t, s, map[string]string{"offset": "1001"})); !reflect.DeepEqual(got, []int64{1001}) {
		t.Fatalf("offset 1001: %v", got)
	}
	if got := s.Unconfirmed(); !reflect.DeepEqual(got, []int64{1001}) {
		t.Fatalf("unconfirmed: %v", got)
	}
	s.DM(alice, "three")
	if got := ids(poll(t, s, map[string]string{"limit": "1"})); !reflect.DeepEqual(got, []int64{1001}) {
		t.Fatalf("limit 1: %v", got)
	}
	// JSON numbers are taken as well as strings.
	var us2 []upd
	ok(t, s, "getUpdates", map[string]any{"offset": 1003, "timeout": 0}, &us2)
	if len(us2) != 0 || len(s.Unconfirmed()) != 0 {
		t.Fatalf("after confirming all: %v, unconfirmed %v", ids(us2), s.Unconfirmed())
	}
	polls := s.Polls()
	if len(polls) != 5 || polls[2].Offset != 1001 || polls[3].Limit != 1 || polls[4].Offset != 1003 || polls[4].Code != 200 {
		t.Fatalf("polls: %+v", polls)
	}
}

func TestLongPollWakesOnPush(t *testing.T) {
	s := New(t, token)
	got := make(chan []upd, 1)
	go func() {
		var us []upd
		_, r := call(t, context.Background(), s, token, "getUpdates", map[string]string{"timeout": "20"})
		if err := json.Unmarshal(r.Result, &us); err != nil {
			t.Errorf("decode: %v", err)
		}
		got <- us
	}()
	s.WaitPolling(t, 5*time.Second)
	s.DM(alice, "wake up")
	select {
	case us := <-got:
		if len(us) != 1 || us[0].Message.Text != "wake up" {
			t.Fatalf("got %+v", us)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the long poll did not wake on Push")
	}
}

func TestLongPollTimesOut(t *testing.T) {
	s := New(t, token)
	start := time.Now()
	if us := poll(t, s, map[string]string{"timeout": "1"}); len(us) != 0 {
		t.Fatalf("got %v", ids(us))
	}
	if d := time.Since(start); d < 900*time.Millisecond || d > 5*time.Second {
		t.Fatalf("a 1 s poll took %v", d)
	}
}

func TestConcurrentPollConflicts(t *testing.T) {
	s := New(t, token)
	done := make(chan int, 1)
	go func() {
		code, _ := call(t, context.Background(), s, token, "getUpdates", map[string]string{"timeout": "20"})
		done <- code
	}()
	s.WaitPolling(t, 5*time.Second)
	fails(t, s, "getUpdates", map[string]string{"timeout": "20"}, http.StatusConflict, DescConflict)
	if p := s.Polls(); p[len(p)-1].Code != http.StatusConflict {
		t.Fatalf("polls: %+v", p)
	}
	s.DM(alice, "release")
	if code := <-done; code != http.StatusOK {
		t.Fatalf("first poll: %d", code)
	}
}

func TestLongPollEndsOnCancelAndClose(t *testing.T) {
	s := New(t, token)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/bot"+token+"/getUpdates", strings.NewReader(`{"timeout":"30"}`))
		if err != nil {
			t.Error(err)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			t.Error("a cancelled poll got an answer")
		}
	}()
	s.WaitPolling(t, 5*time.Second)
	cancel()
	<-done
	// The server noticed: the next poll is no conflict.
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, _ := call(t, context.Background(), s, token, "getUpdates", map[string]string{})
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("poll after cancel: %d", code)
		}
		time.Sleep(10 * time.Millisecond)
	}

	closed := make(chan int, 1)
	go func() {
		req, err := http.NewRequest(http.MethodPost, s.URL()+"/bot"+token+"/getUpdates", strings.NewReader(`{"timeout":"30"}`))
		if err != nil {
			t.Error(err)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			closed <- 0
			return
		}
		resp.Body.Close()
		closed <- resp.StatusCode
	}()
	s.WaitPolling(t, 5*time.Second)
	start := time.Now()
	s.Close()
	select {
	case <-closed:
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("Close took %v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll outlived Close")
	}
}

func TestLimitAndFail(t *testing.T) {
	s := New(t, token)
	s.Limit("sendMessage", 2, 3)
	msg := map[string]string{"chat_id": "42", "text": "hi"}
	for range 2 {
		code, r := call(t, context.Background(), s, token, "sendMessage", msg)
		if code != 429 || r.Description != "Too Many Requests: retry after 3" || r.Parameters == nil || r.Parameters.RetryAfter != 3 {
			t.Fatalf("limited: %d %+v", code, r)
		}
	}
	ok(t, s, "sendMessage", msg, nil)
	if n := len(s.Sent()); n != 1 {
		t.Fatalf("sent %d, want only the call past the limit", n)
	}

	s.Fail("sendMessage", 1, 403, "Forbidden: bot was blocked by the user")
	fails(t, s, "sendMessage", msg, 403, "Forbidden: bot was blocked by the user")
	s.Fail("getUpdates", 1, 502, "Bad Gateway")
	fails(t, s, "getUpdates", map[string]string{}, 502, "Bad Gateway")
	ok(t, s, "sendMessage", msg, nil)
}

func TestAuthAndUnknownMethods(t *testing.T) {
	s := New(t, token)
	code, r := call(t, context.Background(), s, "999:wrong", "getMe", map[string]string{})
	if code != 401 || r.Description != "Unauthorized" {
		t.Fatalf("bad token: %d %+v", code, r)
	}
	fails(t, s, "sendTelepathy", map[string]string{}, 404, "Not Found")
	var me map[string]any
	ok(t, s, "getMe", map[string]string{}, &me)
	if me["id"] != float64(BotID) || me["is_bot"] != true || me["username"] != BotUsername || me["first_name"] != BotFirstName {
		t.Fatalf("getMe: %v", me)
	}
	// Method names are case-insensitive, as on Telegram.
	ok(t, s, "GETME", map[string]string{}, nil)
	if calls := s.Calls(); len(calls) != 3 || calls[0].Method != "sendTelepathy" {
		t.Fatalf("calls (the bad token's is not one): %+v", calls)
	}
}

func TestHTMLParseMode(t *testing.T) {
	const parseErr = "Bad Request: can't parse entities: "
	for _, tc := range []struct {
		text  string
		plain string // "" = refused
		err   string // part of the description when refused
	}{
		{text: "<b>x</b>", plain: "x"},
		{text: "<b>x", err: `Can't find end tag corresponding to start tag "b"`},
		{text: "a < b", err: `Unsupported start tag "" at byte offset 2`},
		{text: "a &lt; b", plain: "a < b"},
		{text: `<a href="https://x">y</a>`, plain: "y"},
		{text: "a & b", err: "'&' at byte offset 2"},
		{text: "Tom &amp; Jerry &quot;&#65;&#x42;&#X43;&gt;", plain: `Tom & Jerry "ABC>`},
		{text: "1 > 0", plain: "1 > 0"},
		{text: "&nbsp;", err: "'&'"},
		{text: "line<br>break", err: `Unsupported start tag "br"`},
		{text: "<b><i>x</b></i>", err: `End tag "b" doesn't match start tag "i"`},
		{text: "x</b>", err: "Unexpected end tag at byte offset 1"},
		{text: "<B>x</B>", plain: "x"},
		{text: "<strong>s</strong><em>e</em><ins>u</ins><strike>s</strike><del>d</del><tg-spoiler>p</tg-spoiler>", plain: "seusdp"},
		{text: `<span class="tg-spoiler">s</span>`, plain: "s"},
		{text: `<span>s</span>`, err: `Tag "span" must have class "tg-spoiler"`},
		{text: `<pre><code class="language-go">x := 1</code></pre>`, plain: "x := 1"},
		{text: "<blockquote expandable>q</blockquote>", plain: "q"},
		{text: `<tg-emoji emoji-id="5368324170671202286">👍</tg-emoji>`, plain: "👍"},
		{text: `<a href='https://x?a=1&amp;b=2'>y</a>`, plain: "y"},
		{text: `<a href="https://x?a=1&b=2">y</a>`, err: "'&'"},
		{text: `<a href="https://x>y`, err: "Unclosed"},
		{text: "<b", err: "Unclosed start tag at byte offset 0"},
		{text: "<b></b>", err: "message text is empty"},
	} {
		t.Run(tc.text, func(t *testing.T) {
			s := New(t, token)
			code, r := call(t, context.Background(), s, token, "sendMessage", map[string]string{"chat_id": "42", "text": tc.text, "parse_mode": "HTML"})
			if tc.plain != "" {
				if code != 200 {
					t.Fatalf("refused: %s", r.Description)
				}
				var m struct{ Text string }
				if err := json.Unmarshal(r.Result, &m); err != nil {
					t.Fatal(err)
				}
				if sent := s.Sent(); m.Text != tc.plain || sent[0].Plain != tc.plain || sent[0].Text != tc.text || sent[0].ParseMode != "HTML" {
					t.Fatalf("text %q, sent %+v", m.Text, sent)
				}
				return
			}
			if code != 400 || !strings.HasPrefix(r.Description, "Bad Request: ") || !strings.Contains(r.Description, tc.err) {
				t.Fatalf("got %d %q, want 400 with %q", code, r.Description, tc.err)
			}
			if tc.err != "message text is empty" && !strings.HasPrefix(r.Description, parseErr) {
				t.Fatalf("description %q lacks %q", r.Description, parseErr)
			}
			if len(s.Sent()) != 0 {
				t.Fatal("a refused message was recorded")
			}
		})
	}
}

func TestTextChecks(t *testing.T) {
	s := New(t, token)
	for _, tc := range []struct {
		name   string
		params map[string]string
		desc   string // "" = accepted
	}{
		{"4096 units", map[string]string{"chat_id": "1", "text": strings.Repeat("a", 4096)}, ""},
		{"4097 units", map[string]string{"chat_id": "1", "text": strings.Repeat("a", 4097)}, "Bad Request: message is too long"},
		{"2048 emoji", map[string]string{"chat_id": "1", "text": strings.Repeat("😀", 2048)}, ""},
		{"2049 emoji", map[string]string{"chat_id": "1", "text": strings.Repeat("😀", 2049)}, "Bad Request: message is too long"},
		{"counted after parsing", map[string]string{"chat_id": "1", "text": "<b>" + strings.Repeat("a", 4096) + "</b>", "parse_mode": "HTML"}, ""},
		{"empty", map[string]string{"chat_id": "1", "text": ""}, "Bad Request: message text is empty"},
		{"blank", map[string]string{"chat_id": "1", "text": " \n"}, "Bad Request: message text is empty"},
		{"no chat", map[string]string{"text": "x"}, "Bad Request: chat_id is empty"},
		{"parse mode", map[string]string{"chat_id": "1", "text": "x", "parse_mode": "XML"}, "Bad Request: unsupported parse_mode"},
		{"button data", map[string]string{"chat_id": "1", "text": "x", "reply_markup": `{"inline_keyboard":[[{"text":"b","callback_data":"` + strings.Repeat("d", 65) + `"}]]}`}, "Bad Request: BUTTON_DATA_INVALID"},
		{"text button", map[string]string{"chat_id": "1", "text": "x", "reply_markup": `{"inline_keyboard":[[{"text":"b"}]]}`}, "Bad Request: text buttons are unallowed in the inline keyboard"},
	} {
		code, r := call(t, context.Background(), s, token, "sendMessage", tc.params)
		if (tc.desc == "" && code != 200) || (tc.desc != "" && (code != 400 || r.Description != tc.desc)) {
			t.Errorf("%s: got %d %q, want %q", tc.name, code, r.Description, tc.desc)
		}
	}
}

func TestSendEditDelete(t *testing.T) {
	s := New(t, token)
	kb := `{"inline_keyboard":[[{"text":"Yes","callback_data":"y"},{"text":"Docs","url":"https://example.org"}]]}`
	var m struct {
		MessageID   int64          `json:"message_id"`
		Date        int64          `json:"date"`
		Text        string         `json:"text"`
		Chat        map[string]any `json:"chat"`
		From        map[string]any `json:"from"`
		ThreadID    int64          `json:"message_thread_id"`
		ReplyMarkup map[string]any `json:"reply_markup"`
		EditDate    int64          `json:"edit_date"`
	}
	ok(t, s, "sendMessage", map[string]string{"chat_id": "42", "text": "Proceed?", "reply_markup": kb}, &m)
	if m.MessageID != 1 || m.Date == 0 || m.Text != "Proceed?" || m.Chat["id"] != 42.0 || m.Chat["type"] != "private" || m.From["id"] != float64(BotID) || m.ReplyMarkup == nil {
		t.Fatalf("sendMessage result: %+v", m)
	}
	wantButtons := [][]Button{{{Text: "Yes", Data: "y"}, {Text: "Docs", URL: "https://example.org"}}}
	if got := s.Sent()[0]; !reflect.DeepEqual(got.Buttons, wantButtons) || got.ChatID != 42 || got.MessageID != 1 || got.Method != "sendMessage" {
		t.Fatalf("sent: %+v", got)
	}

	edit := map[string]string{"chat_id": "42", "message_id": "1", "text": "Proceed?", "reply_markup": kb}
	fails(t, s, "editMessageText", edit, 400, DescNotModified)
	// An edit without a keyboard removes it (gotgbot sends "{}").
	edit["reply_markup"] = "{}"
	m.ReplyMarkup = nil // json.Unmarshal leaves fields the answer lacks
	ok(t, s, "editMessageText", edit, &m)
	if m.ReplyMarkup != nil || m.EditDate == 0 {
		t.Fatalf("edit result: %+v", m)
	}
	edit["text"] = "<i>Done</i>"
	edit["parse_mode"] = "HTML"
	ok(t, s, "editMessageText", edit, nil)
	fails(t, s, "editMessageText", map[string]string{"chat_id": "42", "message_id": "99", "text": "x"}, 400, "Bad Request: message to edit not found")
	fails(t, s, "editMessageText", map[string]string{"chat_id": "42", "message_id": "1", "text": strings.Repeat("a", 4097)}, 400, "Bad Request: MESSAGE_TOO_LONG")

	// Numbers and objects are taken as well as strings.
	ok(t, s, "sendMessage", map[string]any{"chat_id": 42, "message_thread_id": 7, "text": "second",
		"reply_parameters": map[string]any{"message_id": 1}}, &m)
	if m.MessageID != 2 || m.ThreadID != 7 {
		t.Fatalf("second: %+v", m)
	}
	msgs := s.Messages(42)
	if len(msgs) != 2 || msgs[0].Plain != "Done" || msgs[0].Method != "editMessageText" || msgs[0].Buttons != nil || msgs[1].ReplyTo != 1 || msgs[1].ThreadID != 7 {
		t.Fatalf("messages: %+v", msgs)
	}

	fails(t, s, "sendMessage", map[string]string{"chat_id": "42", "text": "x", "reply_parameters": `{"message_id":77}`}, 400, "Bad Request: message to be replied not found")
	ok(t, s, "sendMessage", map[string]string{"chat_id": "42", "text": "x", "reply_parameters": `{"message_id":77,"allow_sending_without_reply":true}`}, nil)

	ok(t, s, "deleteMessage", map[string]string{"chat_id": "42", "message_id": "1"}, nil)
	fails(t, s, "deleteMessage", map[string]string{"chat_id": "42", "message_id": "1"}, 400, "Bad Request: message to delete not found")
	fails(t, s, "editMessageText", map[string]string{"chat_id": "42", "message_id": "1", "text": "again"}, 400, "Bad Request: message to edit not found")
	if msgs := s.Messages(42); len(msgs) != 2 || msgs[0].MessageID != 2 {
		t.Fatalf("after delete: %+v", msgs)
	}
	var methods []string
	for _, m := range s.Sent() {
		methods = append(methods, m.Method)
	}
	if want := []string{"sendMessage", "editMessageText", "editMessageText", "sendMessage", "sendMessage"}; !reflect.DeepEqual(methods, want) {
		t.Fatalf("methods %v, want %v", methods, want)
	}
	if d := s.Deletions(); len(d) != 1 || d[0] != (Deletion{ChatID: 42, MessageID: 1}) {
		t.Fatalf("deletions: %+v", d)
	}

	// A URL-encoded form works too.
	form := url.Values{"chat_id": {"42"}, "text": {"form"}}
	req, err := http.NewRequest(http.MethodPost, s.URL()+"/bot"+token+"/sendMessage", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if code, r := do(t, req); code != 200 {
		t.Fatalf("form: %d %s", code, r.Description)
	}
}

func TestUpdateHelpers(t *testing.T) {
	s := New(t, token)
	const group = -100123
	var sent struct {
		MessageID int64 `json:"message_id"`
	}
	ok(t, s, "sendMessage", map[string]string{"chat_id": "-100123", "text": "Which one?", "message_thread_id": "5"}, &sent)
	s.Group(group, alice, "this one", Topic(5), MentionBot(), ReplyToBot("Which one?"))
	s.Group(group, alice, "/status now", Topic(5))
	s.DM(alice, "see attached", Document("doc1"))
	s.DM(alice, "fixed typo", Edited(3))
	s.Press(alice, group, sent.MessageID, "pick:1")

	us := poll(t, s, map[string]string{})
	if len(us) != 5 {
		t.Fatalf("%d updates", len(us))
	}
	m := us[0].Message
	if m.Text != "@edge_test_bot this one" || m.Chat["type"] != "supergroup" || m.Chat["is_forum"] != true || m.MessageThreadID != 5 || !m.IsTopicMessage {
		t.Fatalf("group message: %+v", m)
	}
	if len(m.Entities) != 1 || m.Entities[0].Type != "mention" || m.Entities[0].Length != len("@edge_test_bot") {
		t.Fatalf("entities: %+v", m.Entities)
	}
	if r := m.ReplyToMessage; r == nil || r.MessageID != sent.MessageID || r.From["id"] != float64(BotID) || r.Text != "Which one?" {
		t.Fatalf("reply_to_message: %+v", r)
	}
	if m.MessageID <= sent.MessageID {
		t.Fatalf("pushed message id %d does not follow the bot's %d", m.MessageID, sent.MessageID)
	}
	// In a topic, a message that replies to nothing carries the topic's
	// creation message, as on Telegram.
	m = us[1].Message
	if m.Entities[0].Type != "bot_command" || m.Entities[0].Length != len("/status") || m.ReplyToMessage == nil || m.ReplyToMessage.MessageID != 5 {
		t.Fatalf("command: %+v", m)
	}
	if m := us[2].Message; m.Caption != "see attached" || m.Text != "" || m.Document["file_id"] != "doc1" || m.Chat["id"] != float64(alice.ID) || m.Chat["type"] != "private" {
		t.Fatalf("document: %+v", m)
	}
	if e := us[3].EditedMessage; e == nil || e.MessageID != 3 || e.EditDate == 0 {
		t.Fatalf("edited: %+v", us[3])
	}
	cq := us[4].CallbackQuery
	if cq == nil || cq.Data != "pick:1" || cq.From["id"] != float64(alice.ID) || cq.Message["message_id"] != float64(sent.MessageID) || cq.Message["date"] == float64(0) {
		t.Fatalf("callback_query: %+v", cq)
	}

	ok(t, s, "answerCallbackQuery", map[string]string{"callback_query_id": cq.ID, "text": "Picked", "show_alert": "false"}, nil)
	fails(t, s, "answerCallbackQuery", map[string]string{"callback_query_id": "nope"}, 400, "Bad Request: query is too old and response timeout expired or query ID is invalid")
	if a := s.Answers(); len(a) != 1 || a[0] != (Answer{ID: cq.ID, Text: "Picked"}) {
		t.Fatalf("answers: %+v", a)
	}
	// The bot can reply to a pushed message.
	ok(t, s, "sendMessage", map[string]any{"chat_id": alice.ID, "text": "got it", "reply_to_message_id": 3}, nil)

	// Push takes any update body.
	id := s.Push(map[string]any{"message": map[string]any{"message_id": 50, "date": 1, "chat": map[string]any{"id": 9, "type": "private"}, "text": "raw"}})
	us = poll(t, s, map[string]string{"offset": "1005"})
	if len(us) != 1 || us[0].UpdateID != id || us[0].Message.Text != "raw" {
		t.Fatalf("raw push: %+v", us)
	}
	ok(t, s, "sendMessage", map[string]string{"chat_id": "9", "text": "re", "reply_parameters": `{"message_id":50}`}, &sent)
	if sent.MessageID != 51 {
		t.Fatalf("the bot's message after a pushed 50 is %d", sent.MessageID)
	}
}

func TestActionsCommandsWebhook(t *testing.T) {
	s := New(t, token)
	ok(t, s, "sendChatAction", map[string]string{"chat_id": "42", "action": "typing", "message_thread_id": "3"}, nil)
	fails(t, s, "sendChatAction", map[string]string{"chat_id": "42", "action": "dancing"}, 400, "Bad Request: wrong parameter action in request")
	if a := s.Actions(); len(a) != 1 || a[0] != (Action{ChatID: 42, ThreadID: 3, Action: "typing"}) {
		t.Fatalf("actions: %+v", a)
	}

	ok(t, s, "setMyCommands", map[string]string{"commands": `[{"command":"new","description":"Start over"},{"command":"status","description":"Show status"}]`}, nil)
	fails(t, s, "setMyCommands", map[string]string{"commands": `[{"command":"Bad-Cmd","description":"x"}]`}, 400, "Bad Request: BOT_COMMAND_INVALID")
	if c := s.Commands(); len(c) != 2 || c[1] != (Command{Command: "status", Description: "Show status"}) {
		t.Fatalf("commands: %+v", c)
	}

	s.DM(alice, "old")
	ok(t, s, "deleteWebhook", map[string]string{"drop_pending_updates": "false"}, nil)
	if len(s.Unconfirmed()) != 1 {
		t.Fatal("drop_pending_updates=false dropped updates")
	}
	ok(t, s, "deleteWebhook", map[string]string{"drop_pending_updates": "true"}, nil)
	if w := s.WebhookDeletes(); !reflect.DeepEqual(w, []bool{false, true}) || len(s.Unconfirmed()) != 0 {
		t.Fatalf("webhook deletes %v, unconfirmed %v", w, s.Unconfirmed())
	}
}

func get(t *testing.T, u string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func TestFiles(t *testing.T) {
	s := New(t, token)
	s.AddFile("doc1", "notes.txt", []byte("hello file"))
	var f struct {
		FileID   string `json:"file_id"`
		UniqueID string `json:"file_unique_id"`
		FileSize int64  `json:"file_size"`
		FilePath string `json:"file_path"`
	}
	ok(t, s, "getFile", map[string]string{"file_id": "doc1"}, &f)
	if f.FileID != "doc1" || f.UniqueID == "" || f.FileSize != 10 || f.FilePath != "documents/notes.txt" {
		t.Fatalf("getFile: %+v", f)
	}
	if code, b := get(t, s.URL()+"/file/bot"+token+"/"+f.FilePath); code != 200 || string(b) != "hello file" {
		t.Fatalf("download: %d %q", code, b)
	}
	if code, _ := get(t, s.URL()+"/file/bot1:bad/"+f.FilePath); code != 401 {
		t.Fatalf("bad token download: %d", code)
	}
	if code, _ := get(t, s.URL()+"/file/bot"+token+"/documents/missing.txt"); code != 404 {
		t.Fatalf("missing download: %d", code)
	}
	fails(t, s, "getFile", map[string]string{"file_id": "nope"}, 400, "Bad Request: invalid file_id")

	s.AddFileSized("big", "big.bin", 3<<20)
	ok(t, s, "getFile", map[string]string{"file_id": "big"}, &f)
	if code, b := get(t, s.URL()+"/file/bot"+token+"/"+f.FilePath); code != 200 || len(b) != 3<<20 || b[0] != 0 {
		t.Fatalf("sized download: %d, %d bytes", code, len(b))
	}
	s.AddFileSized("huge", "huge.bin", MaxDownloadSize+1)
	fails(t, s, "getFile", map[string]string{"file_id": "huge"}, 400, "Bad Request: file is too big")
}

func TestUploads(t *testing.T) {
	s := New(t, token)
	// As gotgbot uploads: fields, and the file as part "document"
	// named by "attach://document".
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, v := range map[string]string{"chat_id": "42", "document": "attach://document", "caption": "<b>report</b>", "parse_mode": "HTML"} {
		if err := mw.WriteField(k, v); err != nil {
			t.Fatal(err)
		}
	}
	part, err := mw.CreateFormFile("document", "report.pdf")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := part.Write([]byte("%PDF-1.4 fake")); err != nil {
		t.Fatal(err)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, s.URL()+"/bot"+token+"/sendDocument", &body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	code, r := do(t, req)
	if code != 200 {
		t.Fatalf("sendDocument: %d %s", code, r.Description)
	}
	var m struct {
		Caption  string         `json:"caption"`
		Document map[string]any `json:"document"`
	}
	if err := json.Unmarshal(r.Result, &m); err != nil {
		t.Fatal(err)
	}
	if m.Caption != "report" || m.Document["file_name"] != "report.pdf" || m.Document["file_size"] != 13.0 {
		t.Fatalf("sendDocument result: %+v", m)
	}
	sent := s.Sent()[0]
	if sent.Method != "sendDocument" || sent.File != "report.pdf" || sent.FileSize != 13 || string(sent.FileData) != "%PDF-1.4 fake" || sent.Text != "<b>report</b>" {
		t.Fatalf("sent: %+v", sent)
	}
	// The upload's file_id can be sent again and fetched.
	id, _ := m.Document["file_id"].(string)
	ok(t, s, "sendDocument", map[string]string{"chat_id": "42", "document": id}, nil)
	ok(t, s, "getFile", map[string]string{"file_id": id}, nil)

	s.AddFile("ph1", "cat.jpg", []byte{0xff, 0xd8})
	ok(t, s, "sendPhoto", map[string]string{"chat_id": "42", "photo": "ph1"}, nil)
	ok(t, s, "sendVoice", map[string]string{"chat_id": "42", "voice": "https://example.org/v.ogg"}, nil)
	fails(t, s, "sendPhoto", map[string]string{"chat_id": "42", "photo": "unknown-id"}, 400, "Bad Request: wrong file identifier/HTTP URL specified")
	fails(t, s, "sendAudio", map[string]string{"chat_id": "42"}, 400, "Bad Request: there is no audio in the request")
	fails(t, s, "sendPhoto", map[string]string{"chat_id": "42", "photo": "ph1", "caption": strings.Repeat("c", 1025)}, 400, "Bad Request: message caption is too long")
	// Media messages have no text to edit.
	fails(t, s, "editMessageText", map[string]string{"chat_id": "42", "message_id": "1", "text": "x"}, 400, "Bad Request: there is no text in the message to edit")
	if got := s.Sent(); len(got) != 4 || got[2].File != "ph1" || got[3].File != "https://example.org/v.ogg" {
		t.Fatalf("sent: %s", Dump(got))
	}
}

func TestWaitSent(t *testing.T) {
	s := New(t, token)
	go func() {
		time.Sleep(50 * time.Millisecond)
		code, r := call(t, context.Background(), s, token, "sendMessage", map[string]string{"chat_id": "1", "text": "late"})
		if code != 200 {
			t.Errorf("send: %d %s", code, r.Description)
		}
	}()
	got := s.WaitSent(t, 5*time.Second, func(sent []Sent) bool { return len(sent) == 1 })
	if got[0].Text != "late" {
		t.Fatalf("got %+v", got)
	}
}
