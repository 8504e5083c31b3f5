package engine

import "crypto/rand"

// NewID returns a short random id from an alphabet without look-alikes
// (approval ids, outbox keys, idempotent turn ids): the turn core and the
// outbox both make them, so the rule lives in the vocabulary.
func NewID(n int) string {
	const alphabet = "abcdefghjkmnpqrstuvwxyz23456789"
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go ≥ 1.24)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
