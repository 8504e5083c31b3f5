package email

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"
)

func crlf(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }

type parseCase struct {
	name string
	raw  string
	want Parsed // fields compared: see checkParsed
	atts []string
}

var parseCases = []parseCase{
	{
		name: "plain",
		raw: crlf(`From: "Ann Example" <Ann@Example.COM>
To: bot@example.org
Subject: Lunch?
Date: Mon, 02 Jun 2025 10:00:00 +0200
Message-ID: <abc123@example.com>

Shall we have lunch tomorrow?
`),
		want: Parsed{MessageID: "abc123@example.com", From: "ann@example.com", FromName: "Ann Example",
			Subject: "Lunch?", Text: "Shall we have lunch tomorrow?",
			Date: time.Date(2025, 6, 2, 8, 0, 0, 0, time.UTC)},
	},
	{
		name: "alternative prefers plain",
		raw: crlf(`From: ann@example.com
Subject: alt
Message-ID: <alt@example.com>
MIME-Version: 1.0
Content-Type: multipart/alternative; boundary="b1"

--b1
Content-Type: text/plain; charset=utf-8

Plain version.
--b1
Content-Type: text/html; charset=utf-8

<p>HTML version.</p>
--b1--
`),
		want: Parsed{MessageID: "alt@example.com", From: "ann@example.com", Subject: "alt", Text: "Plain version."},
	},
	{
		name: "quoted-printable",
		raw: crlf(`From: ann@example.com
Subject: =?UTF-8?Q?Gr=C3=BC=C3=9Fe?=
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: quoted-printable

Sch=C3=B6ne Gr=C3=BC=C3=9Fe, this is a long line that is soft-wrapped by qu=
oted-printable.
`),
		want: Parsed{From: "ann@example.com", Subject: "Grüße",
			Text: "Schöne Grüße, this is a long line that is soft-wrapped by quoted-printable."},
	},
	{
		name: "base64",
		raw: crlf(`From: ann@example.com
Subject: b64
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: base64

SGVsbG8gZnJvbSBiYXNlNjQg4pyTCg==
`),
		want: Parsed{From: "ann@example.com", Subject: "b64", Text: "Hello from base64 ✓"},
	},
	{
		name: "latin1",
		raw: "From: =?ISO-8859-1?Q?J=F6rg?= <jorg@example.de>\r\nSubject: =?iso-8859-1?q?=C4pfel?=\r\n" +
			"Content-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: 8bit\r\n\r\n" +
			"Gr\xfc\xdfe aus K\xf6ln\r\n",
		want: Parsed{From: "jorg@example.de", FromName: "Jörg", Subject: "Äpfel", Text: "Grüße aus Köln"},
	},
	{
		name: "windows-1252",
		raw: "From: ann@example.com\r\nSubject: quotes\r\n" +
			"Content-Type: text/plain; charset=windows-1252\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n" +
			"=93Smart quotes=94 cost =8020 =96 ok\r\n",
		want: Parsed{From: "ann@example.com", Subject: "quotes", Text: "“Smart quotes” cost €20 – ok"},
	},
	{
		name: "html only",
		raw: crlf(`From: ann@example.com
Subject: html
Content-Type: text/html; charset=utf-8

<html><head><title>T</title><style>p{color:red}</style></head>
<body><script>alert(1)</script><p>Hello <b>there</b>,</p><p>see <a href="https://example.com/x">the page</a>.<br>Line two.</p>
<ul><li>one</li><li>two &amp; three</li></ul></body></html>
`),
		want: Parsed{From: "ann@example.com", Subject: "html",
			Text: "Hello there,\n\nsee the page <https://example.com/x>.\nLine two.\n\n- one\n- two & three"},
	},
	{
		name: "quoted reply trimmed",
		raw: crlf(`From: ann@example.com
Subject: Re: Lunch?
Message-ID: <r1@example.com>
In-Reply-To: <oc.1@example.org>
References: <root@example.com> <oc.1@example.org>

Yes, 12:30 works.

-- 
Ann
Sent from my phone

On Mon, Jun 2, 2025 at 10:05 AM Bot <bot@example.org> wrote:
> Sure, when?
>
> > Shall we have lunch tomorrow?
`),
		want: Parsed{MessageID: "r1@example.com", InReplyTo: "oc.1@example.org",
			References: []string{"root@example.com", "oc.1@example.org"},
			From:       "ann@example.com", Subject: "Re: Lunch?", Text: "Yes, 12:30 works.",
			Quoted: "On Mon, Jun 2, 2025 at 10:05 AM Bot <bot@example.org> wrote:\nSure, when?\n\n> Shall we have lunch tomorrow?"},
	},
	{
		name: "wrapped attribution",
		raw: crlf(`From: ann@example.com
Subject: Re: x

Thanks!

On Mon, Jun 2, 2025 at 10:05 AM Some Very Long Name <
bot@example.org> wrote:
> old text
`),
		want: Parsed{From: "ann@example.com", Subject: "Re: x", Text: "Thanks!",
			Quoted: "On Mon, Jun 2, 2025 at 10:05 AM Some Very Long Name <\nbot@example.org> wrote:\nold text"},
	},
	{
		name: "interleaved reply kept",
		raw: crlf(`From: ann@example.com
Subject: Re: plan

On Mon, Bot wrote:
> Monday?
Yes, Monday.
> Where?
At the office.
`),
		want: Parsed{From: "ann@example.com", Subject: "Re: plan",
			Text: "On Mon, Bot wrote:\n> Monday?\nYes, Monday.\n> Where?\nAt the office."},
	},
	{
		name: "outlook original message",
		raw: crlf(`From: ann@example.com
Subject: RE: report

Attached is the fix.

-----Original Message-----
From: Bot
Sent: Monday
Please fix it.
`),
		want: Parsed{From: "ann@example.com", Subject: "RE: report", Text: "Attached is the fix.",
			Quoted: "-----Original Message-----\nFrom: Bot\nSent: Monday\nPlease fix it."},
	},
	{
		name: "only a quote keeps the text",
		raw: crlf(`From: ann@example.com
Subject: fwd

> just a quote
`),
		want: Parsed{From: "ann@example.com", Subject: "fwd", Text: "> just a quote"},
	},
	{
		name: "html reply with blockquote",
		raw: crlf(`From: ann@example.com
Subject: Re: q
Content-Type: text/html; charset=utf-8

<div dir="ltr">Sounds good.</div><br><div class="gmail_quote"><div>On Tue, Jun 3, 2025 Bot &lt;bot@example.org&gt; wrote:<br></div><blockquote class="gmail_quote"><div>Meet at noon?</div></blockquote></div>
`),
		want: Parsed{From: "ann@example.com", Subject: "Re: q", Text: "Sounds good.",
			Quoted: "On Tue, Jun 3, 2025 Bot <bot@example.org> wrote:\n\nMeet at noon?"},
	},
	{
		name: "mixed with attachment",
		raw: crlf(`From: ann@example.com
Subject: photo
Content-Type: multipart/mixed; boundary="m"

--m
Content-Type: multipart/alternative; boundary="a"

--a
Content-Type: text/plain

See the picture.
--a
Content-Type: text/html

<p>See the <i>picture</i>.</p>
--a--
--m
Content-Type: image/png; name="../../etc/cat.png"
Content-Disposition: attachment; filename="../../etc/cat.png"
Content-Transfer-Encoding: base64

iVBORw0KGgo=
--m--
`),
		want: Parsed{From: "ann@example.com", Subject: "photo", Text: "See the picture."},
		atts: []string{"../../etc/cat.png image/png 8"},
	},
	{
		name: "auto reply",
		raw: crlf(`From: ann@example.com
Subject: Out of office
Auto-Submitted: auto-replied

I am away.
`),
		want: Parsed{From: "ann@example.com", Subject: "Out of office", Text: "I am away.", Auto: true},
	},
	{
		name: "bulk",
		raw: crlf(`From: news@example.com
Subject: News
Precedence: bulk

Buy now.
`),
		want: Parsed{From: "news@example.com", Subject: "News", Text: "Buy now.", Auto: true},
	},
	{
		name: "format flowed",
		raw: crlf(`From: ann@example.com
Subject: flowed
Content-Type: text/plain; charset=utf-8; format=flowed

This is one paragraph that was 
wrapped by the client.
Next line.
`),
		want: Parsed{From: "ann@example.com", Subject: "flowed",
			Text: "This is one paragraph that was wrapped by the client.\nNext line."},
	},
	{
		name: "unknown charset still read",
		raw: crlf(`From: ann@example.com
Subject: odd
Content-Type: text/plain; charset=x-unknown-thing

plain ascii anyway
`),
		want: Parsed{From: "ann@example.com", Subject: "odd", Text: "plain ascii anyway"},
	},
	{
		name: "no from",
		raw: crlf(`Subject: anonymous

hello
`),
		want: Parsed{Subject: "anonymous", Text: "hello"},
	},
	{
		name: "header injection in subject is flattened",
		raw:  "From: ann@example.com\r\nSubject: =?UTF-8?Q?a=0D=0ABcc:_evil@example.com?=\r\n\r\nx\r\n",
		want: Parsed{From: "ann@example.com", Subject: "a Bcc: evil@example.com", Text: "x"},
	},
}

func checkParsed(t *testing.T, got, want Parsed) {
	t.Helper()
	eq := func(field, g, w string) {
		if g != w {
			t.Errorf("%s = %q, want %q", field, g, w)
		}
	}
	eq("MessageID", got.MessageID, want.MessageID)
	eq("InReplyTo", got.InReplyTo, want.InReplyTo)
	eq("References", strings.Join(got.References, " "), strings.Join(want.References, " "))
	eq("From", got.From, want.From)
	eq("FromName", got.FromName, want.FromName)
	eq("Subject", got.Subject, want.Subject)
	eq("Text", got.Text, want.Text)
	eq("Quoted", got.Quoted, want.Quoted)
	if got.Auto != want.Auto {
		t.Errorf("Auto = %v, want %v", got.Auto, want.Auto)
	}
	if !want.Date.IsZero() && !got.Date.Equal(want.Date) {
		t.Errorf("Date = %v, want %v", got.Date, want.Date)
	}
}

func TestParseMessage(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseMessage(strings.NewReader(tc.raw), 0)
			if err != nil {
				t.Fatal(err)
			}
			checkParsed(t, p, tc.want)
			var atts []string
			for _, a := range p.Attachments {
				atts = append(atts, a.Filename+" "+a.MimeType+" "+strconv.Itoa(len(a.Data)))
			}
			if strings.Join(atts, ",") != strings.Join(tc.atts, ",") {
				t.Errorf("attachments = %q, want %q", atts, tc.atts)
			}
		})
	}
}

func TestParseMessageLimits(t *testing.T) {
	big := "From: ann@example.com\r\nSubject: big\r\n\r\n" + strings.Repeat("word ", 100_000)
	p, err := ParseMessage(strings.NewReader(big), 200_000)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Truncated {
		t.Error("not Truncated")
	}
	if len(p.Text) > MaxTextBytes {
		t.Errorf("text %d bytes, over the cap", len(p.Text))
	}
	withFile := crlf("From: ann@example.com\nSubject: f\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nsee file\n--b\n" +
		"Content-Type: application/octet-stream\nContent-Disposition: attachment; filename=x.bin\nContent-Transfer-Encoding: base64\n\n" +
		strings.Repeat("QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB\n", 100) + "--b--\n")
	p, err = ParseMessage(strings.NewReader(withFile), int64(len(withFile)-2000))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Truncated || p.Text != "see file" || len(p.Attachments) != 0 || p.Dropped != 1 {
		t.Errorf("cut attachment: truncated %v text %q attachments %d dropped %d", p.Truncated, p.Text, len(p.Attachments), p.Dropped)
	}
	p, err = ParseMessage(strings.NewReader(withFile), 0)
	if err != nil || len(p.Attachments) != 1 || len(p.Attachments[0].Data) != 5700 {
		t.Errorf("whole attachment: %v, %d attachments", err, len(p.Attachments))
	}
	if _, err := ParseMessage(strings.NewReader("\x00\x01 not a header\r\n"), 0); err == nil {
		// go-message accepts almost anything as a header; what matters is
		// that it does not panic. Both outcomes are fine.
		t.Log("garbage parsed without error")
	}
}

func TestSanitizeFilename(t *testing.T) {
	for in, want := range map[string]string{
		"../../etc/passwd":                "passwd.txt",
		"..":                              "attachment.txt",
		".hidden":                         "hidden.txt",
		"a b?.pdf":                        "a_b_.pdf",
		"C:\\x\\evil.exe":                 "evil.exe",
		"":                                "attachment.png",
		"Übersicht.txt":                   "Übersicht.txt",
		strings.Repeat("x", 200) + ".jpg": strings.Repeat("x", 76) + ".jpg",
	} {
		mt := "text/plain"
		if in == "" {
			mt = "image/png"
		}
		if got := sanitizeFilename(in, mt); got != want {
			t.Errorf("sanitizeFilename(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReplySubject(t *testing.T) {
	for _, c := range []struct {
		subject string
		reply   bool
		text    string
		want    string
	}{
		{"Lunch?", true, "", "Re: Lunch?"},
		{"Re: Lunch?", true, "", "Re: Lunch?"},
		{"RE: re: Lunch?", true, "", "Re: Lunch?"},
		{"AW: Termin", true, "", "Re: Termin"},
		{"", true, "", "Re: (no subject)"},
		{"", false, "Reminder: call Bob\nmore", "Reminder: call Bob"},
		{"", false, "", "(no subject)"},
	} {
		if got := replySubject(c.subject, c.reply, c.text); got != c.want {
			t.Errorf("replySubject(%q, %v) = %q, want %q", c.subject, c.reply, got, c.want)
		}
	}
}

func FuzzParseMessage(f *testing.F) {
	for _, tc := range parseCases {
		f.Add([]byte(tc.raw))
	}
	f.Add([]byte("Content-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\nContent-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := ParseMessage(bytes.NewReader(raw), 1<<16)
		if err != nil {
			return
		}
		if len(p.Text) > MaxTextBytes || len(p.Quoted) > MaxQuotedBytes {
			t.Fatalf("caps exceeded: %d %d", len(p.Text), len(p.Quoted))
		}
		if len(p.Attachments) > MaxAttachments {
			t.Fatalf("%d attachments", len(p.Attachments))
		}
		if strings.ContainsAny(p.Subject, "\r\n") || strings.ContainsAny(p.FromName, "\r\n") {
			t.Fatalf("multi-line header value %q %q", p.Subject, p.FromName)
		}
		if p.MessageID != "" && !validMsgID(p.MessageID) {
			t.Fatalf("invalid message id %q", p.MessageID)
		}
		if c := p.Command; c != "" && (!isCommand(c) || c != strings.TrimSpace(c) || len(c) > maxCommandBytes) {
			t.Fatalf("command %q", c)
		}
		// The renderer must cope with anything too.
		_ = htmlToText(string(raw))
	})
}

// TestMailCommand: a slash command in a mail, the way a person writes
// one, is read as the command (Parsed.Command); anything else is not.
func TestMailCommand(t *testing.T) {
	mail := func(subject, inReplyTo, body string) string {
		h := "From: ann@example.com\r\nSubject: " + subject + "\r\nMessage-ID: <c@example.com>\r\n"
		if inReplyTo != "" {
			h += "In-Reply-To: <" + inReplyTo + ">\r\n"
		}
		return h + "\r\n" + crlf(body)
	}
	for _, c := range []struct {
		name, raw, want string
	}{
		{"subject, empty body", mail("/approve abc123", "", ""), "/approve abc123"},
		{"subject, body only a mobile signature", mail("/approve abc123", "", "Sent from my iPhone\n"), "/approve abc123"},
		{"subject, body only a signature", mail("/status", "", "-- \nAnn\n"), "/status"},
		{"subject in capitals", mail("/STATUS", "", ""), "/STATUS"},
		{"subject with spaces around", mail("  /deny abc123  ", "", ""), "/deny abc123"},
		{"body first line", mail("hello", "", "/status\n"), "/status"},
		{"body first line, rest of the body is not part of it", mail("hello", "", "/approve abc123\n\nThanks,\nAnn\nSent from my iPhone\n"), "/approve abc123"},
		{"body first line after blank lines and spaces", mail("x", "", "\n\n   /stop\nplease\n"), "/stop"},
		{"body wins over the subject", mail("/status", "", "/help\n"), "/help"},
		{"body command with a signature", mail("", "", "/new plan the trip\n-- \nAnn\n"), "/new plan the trip"},
		{"reply: body command above the quote", mail("Re: Approval needed", "n1@example.org", "/approve abc123\n\nOn Tue, 3 Jun 2025, Bot <bot@example.org> wrote:\n> Reply /deny abc123 to refuse.\n"), "/approve abc123"},
		{"HTML body", "From: ann@example.com\r\nSubject: x\r\nContent-Type: text/html\r\n\r\n<div dir=\"ltr\">/status</div><div><br></div>\r\n", "/status"},

		{"subject with a non-empty body", mail("/status", "", "What is going on?\n"), ""},
		{"Re: subject", mail("Re: /approve abc123", "", ""), ""},
		{"Fwd: subject", mail("Fwd: /approve abc123", "", ""), ""},
		{"command not on the first line", mail("x", "", "Hi,\n/approve abc123\n"), ""},
		{"unknown slash word", mail("x", "", "/tmp is full again\n"), ""},
		{"a path", mail("/etc/hosts", "", ""), ""},
		{"no space after the word", mail("/status.", "", ""), ""},
		{"kelvin sign", mail("/thin\u212A high", "", ""), ""},
		{"full-width slash", mail("\uFF0Fstatus", "", ""), ""},
		{"zero-width space first", mail("\u200B/status", "", ""), ""},
		{"only a quoted reply: the quote is not the owner's command", mail("Re: x", "n1@example.org", "> /approve abc123\n"), ""},
		{"only an attribution and a quote", mail("x", "n1@example.org", "On Tue, 3 Jun 2025, Bot <bot@example.org> wrote:\n> /approve abc123\n"), ""},
		{"a quoted command below the new text", mail("Re: x", "n1@example.org", "ok\n\n> /approve abc123\n"), ""},
		{"too long", mail("/new "+strings.Repeat("x", 300), "", ""), ""},
		{"just a slash", mail("/", "", ""), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := ParseMessage(strings.NewReader(c.raw), 0)
			if err != nil {
				t.Fatal(err)
			}
			if p.Command != c.want {
				t.Errorf("Command = %q, want %q (text %q, subject %q)", p.Command, c.want, p.Text, p.Subject)
			}
		})
	}
}
