package access

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/openclaw-edge/edge/engine"
)

// Pairing codes (docs/design.md §3.2, OpenClaw's): 8 characters from an
// alphabet without look-alikes, valid for an hour, at most 3 pending per
// channel account.
const (
	CodeAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	CodeLength   = 8
	CodeTTL      = time.Hour
	MaxPending   = 3
)

// Bucket is the records bucket of pairing requests and approved senders.
//
//	pending/<channel>/<account>/<code>   → Request
//	approved/<channel>/<account>/<id>    → Approved
const Bucket = "pairing"

// Request is a pending pairing request.
type Request struct {
	Channel    string    `json:"channel"`
	Account    string    `json:"account"`
	Code       string    `json:"code"`
	SenderID   string    `json:"senderId"`
	SenderName string    `json:"senderName,omitempty"`
	ChatID     string    `json:"chatId"`
	CreatedAt  time.Time `json:"createdAt"`
	ExpiresAt  time.Time `json:"expiresAt"`
	// Told: the sender was sent the code (MarkTold). A request whose
	// reply a crash cut off is told at the sender's next message.
	Told bool `json:"told,omitempty"`
}

// Approved is a sender approved by pairing.
type Approved struct {
	Channel    string    `json:"channel"`
	Account    string    `json:"account"`
	SenderID   string    `json:"senderId"`
	SenderName string    `json:"senderName,omitempty"`
	ApprovedAt time.Time `json:"approvedAt"`
}

// Errors of the pairing store.
var (
	ErrTooMany     = errors.New("too many pending pairing requests")
	ErrUnknownCode = errors.New("no pending pairing request with that code")
)

// Pairing keeps pairing requests in Records.
type Pairing struct {
	db  engine.Records
	now func() time.Time
}

// NewPairing returns the pairing store over db; now nil = time.Now.
func NewPairing(db engine.Records, now func() time.Time) *Pairing {
	if now == nil {
		now = time.Now
	}
	return &Pairing{db: db, now: now}
}

func pendingPrefix(ch, account string) string { return "pending/" + ch + "/" + account + "/" }

// approvedKey is the record key of an approval of id: its canonical key
// (Canonical), so look-alikes of an approved sender are not approved.
func approvedKey(ch, account string, id ID) string {
	return "approved/" + ch + "/" + account + "/" + id.Key
}

// Approved reports whether sender was approved on the channel account. A
// refused id (Canonical) is never approved.
//
// Approvals made before Canonical existed are keyed by the old Normalize,
// which cleaned "+1555…x" into "+1555…": such a record is found under
// either key and still counts, but only for a sender whose canonical id
// equals that of the SenderID the record was approved for — never for
// another id that cleaned the same. Nothing is rewritten or lost.
func (p *Pairing) Approved(ch, account, sender string) (bool, error) {
	id, err := Canonical(ch, sender)
	if err != nil {
		return false, nil
	}
	var found bool
	err = p.db.ViewRecords(func(tx engine.RecordTx) error {
		for _, k := range []string{approvedKey(ch, account, id), "approved/" + ch + "/" + account + "/" + legacyNormalize(ch, sender)} {
			var a Approved
			ok, err := tx.Get(Bucket, k, &a)
			if err != nil {
				return err
			}
			// The record's own SenderID decides: a record stored under
			// a key that two ids once shared approves only its own.
			if ok && Same(ch, a.SenderID, sender) {
				found = true
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("read pairing approvals: %w", err)
	}
	return found, nil
}

// Request returns the sender's pending request, creating one when there is
// none: created says whether this call made it (the gateway replies with
// the code only then — one reply per request). ErrTooMany: the account
// has MaxPending unexpired requests of other senders.
func (p *Pairing) Request(ch, account, sender, name, chatID string) (Request, bool, error) {
	if _, err := Canonical(ch, sender); err != nil {
		return Request{}, false, fmt.Errorf("pairing request on %s/%s: sender: %w", ch, account, err)
	}
	now := p.now()
	var (
		out     Request
		created bool
	)
	err := p.db.UpdateRecords(func(tx engine.RecordTx) error {
		var live []Request
		var expired []string
		err := tx.ForEach(Bucket, pendingPrefix(ch, account), func(k string, raw []byte) error {
			var r Request
			if err := json.Unmarshal(raw, &r); err != nil {
				expired = append(expired, k) // unreadable: drop it
				return nil
			}
			if !now.Before(r.ExpiresAt) {
				expired = append(expired, k)
				return nil
			}
			live = append(live, r)
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range expired {
			if err := tx.Delete(Bucket, k); err != nil {
				return err
			}
		}
		for _, r := range live {
			if Same(ch, r.SenderID, sender) {
				out = r
				return nil
			}
		}
		if len(live) >= MaxPending {
			return ErrTooMany
		}
		code, err := newCode()
		if err != nil {
			return err
		}
		out = Request{Channel: ch, Account: account, Code: code, SenderID: sender, SenderName: name, ChatID: chatID, CreatedAt: now, ExpiresAt: now.Add(CodeTTL)}
		created = true
		return tx.Put(Bucket, pendingPrefix(ch, account)+code, out)
	})
	if err != nil {
		return Request{}, false, fmt.Errorf("pairing request on %s/%s: %w", ch, account, err)
	}
	return out, created, nil
}

// MarkTold records that the sender of the pending request with code on
// ch/account was sent their code; a request already gone is no error.
func (p *Pairing) MarkTold(ch, account, code string) error {
	err := p.db.UpdateRecords(func(tx engine.RecordTx) error {
		var r Request
		key := pendingPrefix(ch, account) + code
		found, err := tx.Get(Bucket, key, &r)
		if err != nil || !found {
			return err
		}
		r.Told = true
		return tx.Put(Bucket, key, r)
	})
	if err != nil {
		return fmt.Errorf("pairing request on %s/%s: %w", ch, account, err)
	}
	return nil
}

// List returns the unexpired pending requests of channel ch ("" = all),
// oldest first.
func (p *Pairing) List(ch string) ([]Request, error) {
	now := p.now()
	var out []Request
	prefix := "pending/"
	if ch != "" {
		prefix += ch + "/"
	}
	err := p.db.ViewRecords(func(tx engine.RecordTx) error {
		return tx.ForEach(Bucket, prefix, func(_ string, raw []byte) error {
			var r Request
			if json.Unmarshal(raw, &r) == nil && now.Before(r.ExpiresAt) {
				out = append(out, r)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list pairing requests: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}

// Approve approves the pending request with code on channel ch (any
// account): the sender becomes approved and the request is gone.
func (p *Pairing) Approve(ch, code string) (Request, error) {
	return p.resolve(ch, code, true)
}

// Deny removes the pending request with code; the sender stays unknown
// (a later message starts a new request).
func (p *Pairing) Deny(ch, code string) (Request, error) {
	return p.resolve(ch, code, false)
}

func (p *Pairing) resolve(ch, code string, approve bool) (Request, error) {
	code = strings.ToUpper(strings.TrimSpace(code))
	if len(code) != CodeLength || strings.Trim(code, CodeAlphabet) != "" {
		return Request{}, fmt.Errorf("%w: a code is %d characters from %s", ErrUnknownCode, CodeLength, CodeAlphabet)
	}
	now := p.now()
	var out Request
	err := p.db.UpdateRecords(func(tx engine.RecordTx) error {
		var key string
		err := tx.ForEach(Bucket, "pending/"+ch+"/", func(k string, raw []byte) error {
			if strings.HasSuffix(k, "/"+code) && key == "" {
				key = k
				return json.Unmarshal(raw, &out)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if key == "" || !now.Before(out.ExpiresAt) {
			return ErrUnknownCode
		}
		if err := tx.Delete(Bucket, key); err != nil {
			return err
		}
		if !approve {
			return nil
		}
		id, err := Canonical(out.Channel, out.SenderID)
		if err != nil {
			return err // not stored by Request
		}
		return tx.Put(Bucket, approvedKey(out.Channel, out.Account, id), Approved{Channel: out.Channel, Account: out.Account, SenderID: out.SenderID, SenderName: out.SenderName, ApprovedAt: now})
	})
	if err != nil {
		return Request{}, fmt.Errorf("pairing %s %s: %w", ch, code, err)
	}
	return out, nil
}

func newCode() (string, error) {
	b := make([]byte, CodeLength)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	// 256 is a multiple of 32: no modulo bias.
	for i := range b {
		b[i] = CodeAlphabet[int(b[i])%len(CodeAlphabet)]
	}
	return string(b), nil
}
