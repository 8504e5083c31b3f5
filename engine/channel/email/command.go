package email

import (
	"github.com/openclaw-edge/edge/engine/access/identity"
	"slices"
	"strings"

	"github.com/openclaw-edge/edge/engine/api"
)

// Slash commands by mail (see the package doc). The gateway decides what
// a command does and who may run it; the adapter only makes sure that a
// command written the way a person writes a mail reaches it as the
// message text, alone, instead of as "Subject: …" text for the model.

// maxCommandBytes bounds a command line: commands are short ("/approve
// <id> elevated"), and a long first line is a sentence, not a command.
const maxCommandBytes = 200

// mailCommand returns the slash command a mail carries, or "": the first
// line of text (the new text of the body, quoted reply and signature
// already cut) when it is a command, else, when the body is empty (or
// only a mobile client's "Sent from my iPhone" line), the subject when it
// is a command. A subject "Re: /approve …" or "Fwd: …" is not one (it does
// not start with "/"). onlyQuote (the body was nothing but a quoted reply,
// kept whole) means no command: the owner wrote nothing, and a command in
// the quoted text is not theirs to run.
func mailCommand(text string, onlyQuote bool, subject string) string {
	if onlyQuote {
		return ""
	}
	if first, _, _ := strings.Cut(text, "\n"); text != "" && !deviceSignature(text) {
		if isCommand(first) {
			return strings.TrimSpace(first)
		}
		return ""
	}
	if isCommand(subject) {
		return strings.TrimSpace(subject)
	}
	return ""
}

// isCommand: line is "/" and one of the gateway's commands (api.Commands,
// ASCII letters compared case-insensitively, no Unicode folding: "/thin\u212A"
// is text), then the end of the line or a space and arguments. Another
// "/word" is ordinary text, as it is in chat: "/tmp is full" is a sentence.
func isCommand(line string) bool {
	line = strings.TrimSpace(line)
	if len(line) < 2 || line[0] != '/' || len(line) > maxCommandBytes || strings.ContainsAny(line, "\r\n") {
		return false
	}
	word, _, _ := strings.Cut(line[1:], " ")
	word, _, _ = strings.Cut(word, "\t")
	word = identity.FoldASCII(word)
	return slices.ContainsFunc(api.Commands, func(c api.Command) bool { return c.Name == word })
}

// deviceSignature: text is only the one line a mobile mail client appends
// by default ("Sent from my iPhone"): such a body is empty for the purpose
// of reading the command from the subject.
func deviceSignature(text string) bool {
	if strings.Contains(text, "\n") || len(text) > 80 {
		return false
	}
	t := identity.FoldASCII(strings.TrimSpace(text))
	for _, p := range []string{"sent from my ", "sent from outlook", "get outlook for ", "sent from mail for windows", "sent from yahoo mail", "sent with proton mail", "sent from proton mail"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}
