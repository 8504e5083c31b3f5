package access_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/access"
	"github.com/openclaw-edge/edge/engine/store/bolt"
)

func TestPairing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	p := access.NewPairing(db, func() time.Time { return now })

	r1, created, err := p.Request("whatsapp", "default", "+15550000001", "Bob", "15550000001@s.whatsapp.net")
	if err != nil || !created {
		t.Fatalf("first request: %v created=%v", err, created)
	}
	if len(r1.Code) != access.CodeLength || strings.Trim(r1.Code, access.CodeAlphabet) != "" {
		t.Fatalf("code %q", r1.Code)
	}
	if r1.Told {
		t.Fatal("a new request is told already")
	}
	if err := p.MarkTold("whatsapp", "default", r1.Code); err != nil {
		t.Fatal(err)
	}
	// The same sender again: the same code, no second reply.
	again, created, err := p.Request("whatsapp", "default", "15550000001@s.whatsapp.net", "Bob", "x")
	if err != nil || created || again.Code != r1.Code || !again.Told {
		t.Fatalf("repeat: %v created=%v told=%v code %s vs %s", err, created, again.Told, again.Code, r1.Code)
	}
	for i := 2; i <= 3; i++ {
		if _, created, err := p.Request("whatsapp", "default", "+1555000000"+string(rune('0'+i)), "", "c"); err != nil || !created {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	// A fourth sender on the account: refused; another account is separate.
	if _, _, err := p.Request("whatsapp", "default", "+15550000009", "", "c"); !errors.Is(err, access.ErrTooMany) {
		t.Fatalf("fourth: %v", err)
	}
	if _, _, err := p.Request("whatsapp", "work", "+15550000009", "", "c"); err != nil {
		t.Fatalf("other account: %v", err)
	}
	list, err := p.List("whatsapp")
	if err != nil || len(list) != 4 {
		t.Fatalf("list: %v %d", err, len(list))
	}
	// Codes are per channel: approving on another channel finds nothing.
	if _, err := p.Approve("email", r1.Code); !errors.Is(err, access.ErrUnknownCode) {
		t.Fatalf("approve on email: %v", err)
	}
	if _, err := p.Approve("whatsapp", "nope"); !errors.Is(err, access.ErrUnknownCode) {
		t.Fatalf("bad code: %v", err)
	}
	got, err := p.Approve("whatsapp", strings.ToLower(r1.Code))
	if err != nil || got.SenderID != "+15550000001" {
		t.Fatalf("approve: %v %+v", err, got)
	}
	if ok, _ := p.Approved("whatsapp", "default", "+15550000001"); !ok {
		t.Fatal("not approved")
	}
	if ok, _ := p.Approved("whatsapp", "work", "+15550000001"); ok {
		t.Fatal("approval leaked to another account")
	}
	if _, err := p.Approve("whatsapp", r1.Code); !errors.Is(err, access.ErrUnknownCode) {
		t.Fatalf("single use: %v", err)
	}
	// Deny: gone, not approved.
	list, _ = p.List("whatsapp")
	d, err := p.Deny("whatsapp", list[0].Code)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := p.Approved("whatsapp", d.Account, d.SenderID); ok {
		t.Fatal("denied sender approved")
	}
	// After an hour the codes expire: room for new senders, old codes dead.
	old := list[1].Code
	now = now.Add(access.CodeTTL)
	if _, err := p.Approve("whatsapp", old); !errors.Is(err, access.ErrUnknownCode) {
		t.Fatalf("expired code: %v", err)
	}
	for i := range 3 {
		if _, created, err := p.Request("whatsapp", "default", "+1666000000"+string(rune('0'+i)), "", "c"); err != nil || !created {
			t.Fatalf("after expiry %d: %v", i, err)
		}
	}
	// It all survives a restart of the store.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p = access.NewPairing(db, func() time.Time { return now })
	if ok, _ := p.Approved("whatsapp", "default", "+15550000001"); !ok {
		t.Fatal("approval lost on restart")
	}
	if list, _ := p.List(""); len(list) != 3 {
		t.Fatalf("pending after restart: %d", len(list))
	}
}

// TestPairingIdentity: approvals and requests go by canonical id — a
// look-alike of an approved sender is not approved and gets a request of
// its own — and approvals stored under the old Normalize key still count
// for the id they were made for, and only for it.
func TestPairingIdentity(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	p := access.NewPairing(db, func() time.Time { return now })
	r, _, err := p.Request("imessage", "default", "Kate@Example.com", "Kate", "7")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Approve("imessage", r.Code); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{
		"Kate@Example.com": true, "kate@example.com": true,
		"\u212aate@example.com": false, "kate@example.com\u200b": false, "k\u0430te@example.com": false, " kate@example.com": false,
	} {
		if ok, err := p.Approved("imessage", "default", id); err != nil || ok != want {
			t.Errorf("Approved(%q) = %v, %v; want %v", id, ok, err, want)
		}
	}
	look, created, err := p.Request("imessage", "default", "\u212aate@example.com", "Kate", "8")
	if err != nil || !created || look.Code == r.Code {
		t.Fatalf("look-alike request: %v created=%v", err, created)
	}
	if _, _, err := p.Request("imessage", "default", "", "", "9"); !errors.Is(err, access.ErrUnusableID) {
		t.Fatalf("empty sender: %v", err)
	}

	// Records as the old code wrote them: keyed by Normalize, which
	// cleaned "+1 555 000 2222" and "+15550003333x" into bare numbers.
	legacy := map[string]access.Approved{
		"approved/whatsapp/default/+15550002222":  {Channel: "whatsapp", Account: "default", SenderID: "+15550002222"},
		"approved/imessage/default/+15550003333":  {Channel: "imessage", Account: "default", SenderID: "+15550003333x"},
		"approved/email/default/bob@example.test": {Channel: "email", Account: "default", SenderID: "bob@example.test"},
		"approved/imessage/default/chat7":         {Channel: "imessage", Account: "default", SenderID: " chat7 "},
	}
	if err := db.UpdateRecords(func(tx engine.RecordTx) error {
		for k, v := range legacy {
			if err := tx.Put(access.Bucket, k, v); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ch, id string
		want   bool
	}{
		{"whatsapp", "+15550002222", true},
		{"whatsapp", "15550002222@s.whatsapp.net", true},
		{"whatsapp", "+15550002222x", false},
		{"email", "Bob@Example.TEST", true},
		// Approved as "+15550003333x": that id still is, the bare number
		// (someone else) never was.
		{"imessage", "+15550003333x", true},
		{"imessage", "+15550003333", false},
		{"imessage", " chat7 ", true},
		{"imessage", "chat7", false},
	} {
		if ok, err := p.Approved(c.ch, "default", c.id); err != nil || ok != c.want {
			t.Errorf("Approved(%s, %q) = %v, %v; want %v", c.ch, c.id, ok, err, c.want)
		}
	}
}
