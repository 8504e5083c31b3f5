package logfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func lines(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestRotateAndTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "gateway.log")
	l, err := Open(path, 100) // "line NN\n" is 8 bytes: 12 lines a file
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 10; i <= 40; i++ {
		fmt.Fprintf(l, "line %d\n", i)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Size() > 100 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("log file: %v, %v", fi, err)
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("log dir: %v, %v", fi, err)
	}
	if _, err := os.Stat(path + ".1"); err != nil {
		t.Fatalf("no rotated file: %v", err)
	}
	for _, tc := range []struct {
		n    int
		want string
	}{
		{0, ""},
		{1, lines(40, 40)},
		{3, lines(38, 40)},
		{15, lines(26, 40)},   // across gateway.log.1
		{1000, lines(22, 40)}, // the two files: 12 + 7 lines
	} {
		got, sub, err := l.Tail(tc.n, false)
		if err != nil || sub != nil || string(got) != tc.want {
			t.Errorf("Tail(%d) = %q, %v, %v; want %q", tc.n, got, sub, err, tc.want)
		}
	}
}

func TestTailWithoutTrailingNewline(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gateway.log")
	if err := os.WriteFile(path, []byte("a\nb\nc"), 0o600); err != nil {
		t.Fatal(err)
	}
	for n, want := range map[int]string{1: "c", 2: "b\nc", 5: "a\nb\nc"} {
		got, found, err := lastLines(path, n)
		if err != nil || string(got) != want || found != min(n, 3) {
			t.Errorf("lastLines(%d) = %q, %d, %v", n, got, found, err)
		}
	}
	if got, found, err := lastLines(filepath.Join(t.TempDir(), "empty"), 3); err == nil || got != nil || found != 0 {
		t.Errorf("missing file: %q %d %v", got, found, err)
	}
}

func TestLongFileTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gateway.log")
	l, err := Open(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	long := strings.Repeat("x", 1000)
	for i := range 300 { // 300 KB: several read blocks
		fmt.Fprintf(l, "%d %s\n", i, long)
	}
	got, _, err := l.Tail(2, false)
	if err != nil || string(got) != "298 "+long+"\n299 "+long+"\n" {
		t.Errorf("Tail(2): %.40q… %v", got, err)
	}
}

func TestFollow(t *testing.T) {
	l, err := Open(filepath.Join(t.TempDir(), "gateway.log"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Write([]byte("old\n"))
	tail, sub, err := l.Tail(10, true)
	if err != nil || string(tail) != "old\n" || sub == nil {
		t.Fatalf("Tail: %q %v %v", tail, sub, err)
	}
	l.Write([]byte("new\n"))
	if got := <-sub.C; string(got) != "new\n" {
		t.Errorf("followed %q", got)
	}
	// A follower that does not read loses lines, and the writer goes on.
	for range subBuffer + 5 {
		l.Write([]byte("x\n"))
	}
	if sub.Lost() != 5 {
		t.Errorf("lost %d, want 5", sub.Lost())
	}
	sub.Close()
	sub.Close() // twice is fine
	n := 0
	for range sub.C {
		n++
	}
	if n != subBuffer {
		t.Errorf("%d buffered writes, want %d", n, subBuffer)
	}
	l.Write([]byte("after\n")) // no follower: nothing blocks
}

// TestDiskRefusesWrites: a write the disk refuses is counted, not
// returned, and the next write tries again.
func TestDiskRefusesWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gateway.log")
	l, err := Open(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.mu.Lock()
	l.f.Close()
	l.f, _ = os.Open(path) // read-only: every write fails, as on a full disk
	l.mu.Unlock()
	if n, err := l.Write([]byte("lost\n")); n != 5 || err != nil {
		t.Errorf("Write = %d, %v; want 5, nil", n, err)
	}
	if l.Dropped() != 1 {
		t.Errorf("dropped %d", l.Dropped())
	}
}
