package delivery

import (
	"reflect"
	"strings"
	"testing"
)

func TestIsSilent(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		{"NO_REPLY", true},
		{"  NO_REPLY \n", true},
		{"NO_REPLY: nothing to store", true},
		{"NO_REPLY\nsome reasoning", true},
		{"__SILENT__", true},
		{"\n __SILENT__ \n", true},
		{"__SILENT__ but here is more", false},
		{"Here is help. NO_REPLY", false},
		{"Here's help... __SILENT__", false},
		{"no_reply", false},
		{"NO", false},
		{"", false},
		{"`NO_REPLY`", false},
	}
	for _, tt := range tests {
		if got := IsSilent(tt.text); got != tt.want {
			t.Errorf("IsSilent(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

func TestIsHeartbeatOK(t *testing.T) {
	long := strings.Repeat("x", 301)
	tests := []struct {
		text  string
		extra int
		want  bool
	}{
		{"HEARTBEAT_OK", 300, true},
		{"  HEARTBEAT_OK\n", 300, true},
		{"**HEARTBEAT_OK**", 300, true},
		{"`HEARTBEAT_OK`", 300, true},
		{"HEARTBEAT_OK — all quiet, inbox empty.", 300, true},
		{"Nothing new. HEARTBEAT_OK", 300, true},
		{"HEARTBEAT_OK " + strings.Repeat("x", 300), 300, true},
		{"HEARTBEAT_OK " + long, 300, false},
		{"HEARTBEAT_OK " + long, -1, false},
		{"Your flight leaves in 2 hours. HEARTBEAT_OK is not the point.", 300, false},
		{"The build broke.", 300, false},
		{"HEARTBEAT_OK abc", 2, false},
		{"", 300, false},
	}
	for _, tt := range tests {
		if got := IsHeartbeatOK(tt.text, tt.extra); got != tt.want {
			t.Errorf("IsHeartbeatOK(%.40q, %d) = %v, want %v", tt.text, tt.extra, got, tt.want)
		}
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		text string
		want Reply
	}{
		{"plain", "  Hello there.  \n", Reply{Text: "Hello there."}},
		{"reply to current", "[[reply_to_current]] Sure, here it is.", Reply{Text: "Sure, here it is.", ReplyToCurrent: true}},
		{"reply to id with spaces", "[[ reply_to : msg-42 ]]\nDone.", Reply{Text: "Done.", ReplyTo: "msg-42"}},
		{"first reply_to wins", "[[reply_to:a]][[reply_to:b]] hi", Reply{Text: "hi", ReplyTo: "a"}},
		{"inline directive", "Here you go [[audio_as_voice]] enjoy", Reply{Text: "Here you go enjoy", AudioAsVoice: true}},
		{"media lines", "Here is the chart.\nMEDIA:/tmp/chart.png\n  MEDIA: \"https://x.example/a b.jpg\"\nMEDIA:`/tmp/c.pdf`\nBye.",
			Reply{Text: "Here is the chart.\nBye.", Media: []string{"/tmp/chart.png", "https://x.example/a b.jpg", "/tmp/c.pdf"}}},
		{"media with voice", "[[audio_as_voice]]\nMEDIA:/tmp/note.ogg", Reply{Media: []string{"/tmp/note.ogg"}, AudioAsVoice: true}},
		{"directive before media", "[[audio_as_voice]] MEDIA:/tmp/note.ogg", Reply{Media: []string{"/tmp/note.ogg"}, AudioAsVoice: true}},
		{"empty media dropped", "MEDIA:\nok", Reply{Text: "ok"}},
		{"media mid-line is text", "See MEDIA:/tmp/a.png", Reply{Text: "See MEDIA:/tmp/a.png"}},
		{"bold media is text", "**MEDIA:/tmp/a.png**", Reply{Text: "**MEDIA:/tmp/a.png**"}},
		{"unknown directive kept", "[[foo]] [[reply_to:]] [[REPLY_TO_CURRENT]]", Reply{Text: "[[foo]] [[reply_to:]] [[REPLY_TO_CURRENT]]"}},
		{"fence untouched", "Example:\n```\n[[reply_to_current]]\nMEDIA:/etc/passwd\n```\n[[reply_to_current]]",
			Reply{Text: "Example:\n```\n[[reply_to_current]]\nMEDIA:/etc/passwd\n```", ReplyToCurrent: true}},
		{"tilde fence and longer closer", "~~~~md\nMEDIA:/a\n~~~\nMEDIA:/b\n~~~~~\nMEDIA:/c", Reply{Text: "~~~~md\nMEDIA:/a\n~~~\nMEDIA:/b\n~~~~~", Media: []string{"/c"}}},
		{"unclosed fence runs to end", "```\nMEDIA:/a", Reply{Text: "```\nMEDIA:/a"}},
		{"silent", "NO_REPLY", Reply{Silent: true}},
		{"silent after directive", "[[reply_to_current]] NO_REPLY", Reply{Silent: true, ReplyToCurrent: true}},
		{"silent drops media", "MEDIA:/tmp/a.png\n__SILENT__", Reply{Silent: true}},
		{"crlf", "[[reply_to_current]]\r\nHi\r\nMEDIA:/x.png\r\n", Reply{Text: "Hi", ReplyToCurrent: true, Media: []string{"/x.png"}}},
		{"nested brackets", "[[[reply_to_current]]] ok", Reply{Text: "[] ok", ReplyToCurrent: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Parse(tt.text)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse(%q)\n got  %#v\n want %#v", tt.text, got, tt.want)
			}
		})
	}
}

func TestParseLongReplyToIDIsText(t *testing.T) {
	id := strings.Repeat("a", maxReplyToID+1)
	text := "[[reply_to:" + id + "]] hi"
	if got := Parse(text); got.ReplyTo != "" || got.Text != text {
		t.Errorf("Parse(long id) = %+v, want text kept", got)
	}
	ok := "[[reply_to:" + id[1:] + "]] hi"
	if got := Parse(ok); got.ReplyTo != id[1:] || got.Text != "hi" {
		t.Errorf("Parse(max id) = %+v", got)
	}
}
