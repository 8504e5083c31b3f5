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
	dst, keep, src := c.plan("a", p1)
	if dst != 0 || keep != 0 || src != -1 {
		t.Fatalf("first: dst=%d keep=%d src=%d", dst, keep, src)
	}
	c.commit(dst, "a", append(p1, 7, 8)) // prompt + generated

	// Follow-up in the same session: everything before the new turn is cached.
	p2 := append(append([]int{}, p1...), 7, 8, 9, 10)
	dst, keep, src = c.plan("a", p2)
	if dst != 0 || keep != len(p1)+2 || src != -1 {
		t.Fatalf("follow-up: dst=%d keep=%d src=%d", dst, keep, src)
	}
	c.commit(dst, "a", p2)

	// A second session gets the free slot and borrows a's system prompt:
	// slot 0 is copied into it, everything past the shared prefix dropped.
	p3 := append(append([]int{}, sys...), 50, 51)
	dst, keep, src = c.plan("b", p3)
	if dst != 1 || keep != len(sys) || src != 0 {
		t.Fatalf("new session: dst=%d keep=%d src=%d", dst, keep, src)
	}
	c.commit(dst, "b", p3)

	// A shared prefix shorter than minBorrow is not worth a copy.
	c2 := newPrefixCache(2)
	c2.commit(0, "x", sys)
	if dst, keep, src := c2.plan("y", append(append([]int{}, sys[:minBorrow-1]...), 77)); dst != 1 || keep != 0 || src != -1 {
		t.Fatalf("short prefix: dst=%d keep=%d src=%d", dst, keep, src)
	}
	if dst, keep, src := c2.plan("y", append(append([]int{}, sys[:minBorrow]...), 77)); dst != 1 || keep != minBorrow || src != 0 {
		t.Fatalf("minBorrow prefix: dst=%d keep=%d src=%d", dst, keep, src)
	}

	// A third session evicts the least recently used slot (a's); it shares
	// nothing, so it borrows nothing.
	dst, _, src = c.plan("c", seq(5, 900))
	if dst != 0 || src != -1 {
		t.Fatalf("eviction picked slot %d (src %d), want 0 (least recently used)", dst, src)
	}

	// A session evicting the slot that held the prefix keeps it: its own
	// slot's tokens share it (no copy needed).
	dst, keep, src = c.plan("e", append(append([]int{}, sys...), 60))
	if dst != 0 || keep != len(sys) || src != -1 {
		t.Fatalf("evicting the prefix's slot: dst=%d keep=%d src=%d", dst, keep, src)
	}

	// An identical prompt still leaves one token to decode.
	_, keep, _ = c.plan("b", p3)
	if keep != len(p3)-1 {
		t.Fatalf("identical prompt keep=%d, want %d", keep, len(p3)-1)
	}
}
