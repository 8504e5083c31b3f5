package email

import (
	"encoding/json"
	"fmt"
)

// ThreadInfo is what engine.Inbound.Thread carries (JSON), handed back on
// the reply in channel.Outbound.Thread: the thread's subject and
// References for the reply's headers, and where the message lies in IMAP
// for Ack.
type ThreadInfo struct {
	Subject     string   `json:"subject,omitempty"`
	References  []string `json:"refs,omitempty"` // the inbound's References (not its own id)
	Mailbox     string   `json:"mailbox,omitempty"`
	UIDValidity uint32   `json:"uidValidity,omitempty"`
	UID         uint32   `json:"uid,omitempty"`
}

// maxRefs bounds References: the first id (the thread's root) and the most
// recent ones are what threading needs (RFC 5322 §3.6.4 allows trimming).
const maxRefs = 20

func trimRefs(refs []string) []string {
	if len(refs) <= maxRefs {
		return refs
	}
	out := append([]string{refs[0]}, refs[len(refs)-(maxRefs-1):]...)
	return out
}

func (t ThreadInfo) encode() string {
	b, err := json.Marshal(t)
	if err != nil {
		return ""
	}
	return string(b)
}

func parseThread(s string) (ThreadInfo, error) {
	var t ThreadInfo
	if s == "" {
		return t, nil
	}
	if err := json.Unmarshal([]byte(s), &t); err != nil {
		return ThreadInfo{}, fmt.Errorf("email: thread data: %w", err)
	}
	return t, nil
}
