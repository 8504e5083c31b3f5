package runner

import "testing"

func seq(n int, from int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = from + i
	}
	return s
}

func TestPrefixCachePlan(t *testing.T) {
	c := newPrefixCache(2)
	sys := seq(20, 100) // a shared system prompt

	// First session: empty slot, nothing cached.
	p1 := append(append([]int{}, sys...), 1, 2, 3)
	dst, keep := c.plan("a", p1)
	if dst != 0 || keep != 0 {
		t.Fatalf("first: dst=%d keep=%d", dst, keep)
	}
	c.commit(dst, "a", append(p1, 7, 8)) // prompt + generated

	// Follow-up in the same session: everything before the new turn is cached.
	p2 := append(append([]int{}, p1...), 7, 8, 9, 10)
	dst, keep = c.plan("a", p2)
	if dst != 0 || keep != len(p1)+2 {
		t.Fatalf("follow-up: dst=%d keep=%d", dst, keep)
	}
	c.commit(dst, "a", p2)

	// A second session gets the free slot (no borrowing across slots).
	p3 := append(append([]int{}, sys...), 50, 51)
	dst, keep = c.plan("b", p3)
	if dst != 1 || keep != 0 {
		t.Fatalf("new session: dst=%d keep=%d", dst, keep)
	}
	c.commit(dst, "b", p3)

	// A third session evicts the least recently used slot (a's).
	dst, _ = c.plan("c", seq(5, 900))
	if dst != 0 {
		t.Fatalf("eviction picked slot %d, want 0 (least recently used)", dst)
	}

	// An identical prompt still leaves one token to decode.
	_, keep = c.plan("b", p3)
	if keep != len(p3)-1 {
		t.Fatalf("identical prompt keep=%d, want %d", keep, len(p3)-1)
	}
}
