//go:build !noimessage

package main

// iMessage attachments end to end, with the real gateway and the fake imsg
// speaking imsg's attachment format: the owner's files on the Mac are
// copied, never handed on, so the gateway's clean-up of unread messages
// (a group message without a mention, a pending stranger, an unlisted
// group) deletes only its own copies; a hostile path never reaches the
// model.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine/channel/imessage/imsgtest"
	"github.com/openclaw-edge/edge/models/openai/openaitest"
)

func TestIMessageAttachmentsEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	// The Mac's home: imsg resolves "~/Library/Messages/Attachments/…"
	// against it, and the adapter's default root is the same directory.
	home := t.TempDir()
	t.Setenv("HOME", home)
	att := filepath.Join(home, "Library", "Messages", "Attachments", "ab", "01")
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".ssh", "id_rsa"), []byte("PRIVATE-KEY-BYTES"), 0o600); err != nil {
		t.Fatal(err)
	}
	originals := map[string]string{}
	put := func(name, content string) (tilde, abs string) {
		abs = filepath.Join(att, name)
		if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(abs, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		originals[abs] = content
		return "~/Library/Messages/Attachments/ab/01/" + name, abs
	}
	withFiles := func(m map[string]any, atts ...map[string]any) map[string]any {
		list := make([]any, len(atts))
		for i, a := range atts {
			list[i] = a
		}
		m["attachments"] = list
		return m
	}

	f := imsgtest.New(t, imsgtest.Config{})
	model := openaitest.NewServer()
	t.Cleanup(model.Close)
	g := &imGateway{t: t, imsg: f, model: model}
	g.m = startMainWith(t, `{
  models: { providers: { fake: { api: 'openai-completions', baseUrl: '`+g.model.URL+`', models: [{ id: 'echo' }] } } },
  agents: { defaults: { model: 'fake/echo' } },
  commands: { ownerAllowFrom: ['imessage:`+imOwner+`'] },
  messages: { groupChat: { mentionPatterns: ['\\bclaw\\b'] } },
  channels: { imessage: { cliPath: '`+f.Path+`', includeAttachments: true, groups: { '42': {} } } },
}`, nil)
	g.waitLinked(0)
	media := filepath.Join(g.m.StateDir, "channels", "imessage", "media", "default")

	t.Run("unread messages: the Mac's files survive the clean-up", func(t *testing.T) {
		g.t = t
		gTilde, _ := put("G1/family.jpg", "group-photo")
		_, gAbs := put("G2/menu.pdf", "group-pdf")
		sTilde, _ := put("S1/hello.heic", "stranger-photo")
		uTilde, _ := put("U1/spam.png", "unlisted")
		// A group member without a mention: kept as context.
		quiet := g.add(func(r int64) map[string]any {
			m := imsgtest.GroupMessage(r, imGroup, imGroupMember, "what's for dinner?")
			orig := imsgtest.Attachment("", "application/pdf", 9)
			orig["original_path"], orig["missing"] = gAbs, false
			return withFiles(m, imsgtest.Attachment(gTilde, "image/jpeg", 11), orig)
		})
		g.waitHandled(quiet)
		// A stranger: pending pairing.
		stranger := g.add(func(r int64) map[string]any {
			return withFiles(imsgtest.DM(r, imStrangerCh, imStranger, "hi"), imsgtest.Attachment(sTilde, "image/heic", 14))
		})
		g.waitHandled(stranger)
		g.waitSendTo(float64(imStrangerCh), 1) // the pairing code
		// A group nobody listed: dropped on arrival.
		unlisted := g.add(func(r int64) map[string]any {
			return withFiles(imsgtest.GroupMessage(r, 99, imGroupMember, "buy now"), imsgtest.Attachment(uTilde, "image/png", 8))
		})
		g.waitHandled(unlisted)
		for p, want := range originals {
			if b, err := os.ReadFile(p); err != nil || string(b) != want {
				t.Errorf("the Mac's %s: %q, %v (want it untouched)", p, b, err)
			}
		}
		// Our copies of unread attachments are gone.
		if entries, _ := os.ReadDir(media); len(entries) != 0 {
			t.Errorf("copies of unread attachments left in %s: %v", media, entries)
		}
		if n := len(g.model.Requests()); n != 0 {
			t.Errorf("%d model requests, want none", n)
		}
	})

	t.Run("owner: a copy reaches the model, a hostile path does not", func(t *testing.T) {
		g.t = t
		tilde, abs := put("O1/receipt.jpg", "owner-receipt")
		g.add(func(r int64) map[string]any {
			hostile := imsgtest.Attachment("", "text/plain", 10)
			hostile["original_path"], hostile["missing"] = "~/.ssh/id_rsa", false
			return withFiles(imsgtest.DM(r, imOwnerChat, imOwner, "look at this receipt"), imsgtest.Attachment(tilde, "image/jpeg", 13), hostile)
		})
		g.waitSendTo(float64(imOwnerChat), 1)
		msgs := g.userMessages()
		if len(msgs) != 1 {
			t.Fatalf("%d model requests, want 1", len(msgs))
		}
		user := msgs[0]
		entries, _ := os.ReadDir(media)
		if len(entries) != 1 {
			t.Fatalf("media dir holds %v, want the one copy", entries)
		}
		copied := filepath.Join(media, entries[0].Name())
		if b, err := os.ReadFile(copied); err != nil || string(b) != "owner-receipt" {
			t.Errorf("the copy %s: %q, %v", copied, b, err)
		}
		if !strings.Contains(user, copied) || strings.Contains(user, abs) || strings.Contains(user, "Library/Messages") {
			t.Errorf("the model's user message should name the copy %s, not the Mac's file:\n%s", copied, user)
		}
		if !strings.Contains(user, "[attachment not included: refused]") || strings.Contains(user, "PRIVATE-KEY") || strings.Contains(user, ".ssh") {
			t.Errorf("the hostile attachment is not refused in the model's user message:\n%s", user)
		}
		if b, err := os.ReadFile(abs); err != nil || string(b) != "owner-receipt" {
			t.Errorf("the Mac's original: %q, %v", b, err)
		}
	})
}
