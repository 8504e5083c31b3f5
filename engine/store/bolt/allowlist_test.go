package bolt

import (
	"strings"
	"testing"
	"time"
)

func TestAllowlistExactMatch(t *testing.T) {
	db, path := openTemp(t)
	gitStatus := AllowEntry{Path: "/usr/bin/git", Argv: []string{"git", "status"}}
	pipeline := AllowEntry{Command: "ls | wc -l"}
	for _, e := range []AllowEntry{gitStatus, pipeline} {
		if err := db.AllowlistAdd(agent, e); err != nil {
			t.Fatal(err)
		}
	}
	// Reopen: the entries are on disk, in a bucket Open did not create.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	tests := []struct {
		name  string
		agent string
		e     AllowEntry
		want  bool
	}{
		{"same argv and path", agent, gitStatus, true},
		{"more arguments", agent, AllowEntry{Path: "/usr/bin/git", Argv: []string{"git", "status", "--porcelain"}}, false},
		{"fewer arguments", agent, AllowEntry{Path: "/usr/bin/git", Argv: []string{"git"}}, false},
		{"another binary of the same name", agent, AllowEntry{Path: "/tmp/git", Argv: []string{"git", "status"}}, false},
		{"argv[0] written differently", agent, AllowEntry{Path: "/usr/bin/git", Argv: []string{"/usr/bin/git", "status"}}, false},
		{"argv split differently", agent, AllowEntry{Path: "/usr/bin/git", Argv: []string{"git", "sta", "tus"}}, false},
		{"same command text", agent, pipeline, true},
		{"command text differs by a space", agent, AllowEntry{Command: "ls |  wc -l"}, false},
		{"command text as argv", agent, AllowEntry{Path: "/usr/bin/ls", Argv: []string{"ls | wc -l"}}, false},
		{"another agent", "work", gitStatus, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := db.AllowlistHas(tt.agent, tt.e)
			if err != nil || got != tt.want {
				t.Errorf("AllowlistHas(%s, %+v) = %v, %v; want %v", tt.agent, tt.e, got, err, tt.want)
			}
		})
	}
}

func TestAllowlistListAddRemove(t *testing.T) {
	db, _ := openTemp(t)
	t0 := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
	db.now = func() time.Time { return t0 }
	if list, err := db.AllowlistList(agent); err != nil || len(list) != 0 {
		t.Fatalf("empty list = %v, %v", list, err)
	}
	a := AllowEntry{Path: "/usr/bin/git", Argv: []string{"git", "status"}}
	b := AllowEntry{Command: "make test 2>&1 | tail", AddedAt: t0.Add(time.Hour)}
	for _, e := range []AllowEntry{b, a, a} { // a twice: kept once
		if err := db.AllowlistAdd(agent, e); err != nil {
			t.Fatal(err)
		}
	}
	list, err := db.AllowlistList(agent)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Argv[1] != "status" || !list[0].AddedAt.Equal(t0) || list[1].Command != b.Command {
		t.Fatalf("list = %+v", list)
	}

	if _, ok, err := db.AllowlistRemove(agent, AllowEntry{Path: "/usr/bin/git", Argv: []string{"git"}}); ok || err != nil {
		t.Errorf("removing a non-matching entry: %v, %v", ok, err)
	}
	got, ok, err := db.AllowlistRemove(agent, a)
	if !ok || err != nil || !got.AddedAt.Equal(t0) {
		t.Fatalf("remove = %+v, %v, %v", got, ok, err)
	}
	if has, _ := db.AllowlistHas(agent, a); has {
		t.Error("removed entry still allowed")
	}
	if list, _ := db.AllowlistList(agent); len(list) != 1 {
		t.Errorf("after remove: %+v", list)
	}
	if _, ok, err := db.AllowlistRemove("nobody", a); ok || err != nil {
		t.Errorf("remove from an agent without a list: %v, %v", ok, err)
	}
}

func TestAllowlistRejectsBadEntries(t *testing.T) {
	db, _ := openTemp(t)
	tests := []struct {
		name, agent string
		e           AllowEntry
		want        string
	}{
		{"no agent", "", AllowEntry{Command: "ls"}, "agent id is empty"},
		{"empty", agent, AllowEntry{}, "neither argv nor a command"},
		{"relative path", agent, AllowEntry{Path: "bin/git", Argv: []string{"git"}}, "not absolute"},
		{"empty argv[0]", agent, AllowEntry{Argv: []string{""}}, "argv[0] is empty"},
		{"path without argv", agent, AllowEntry{Path: "/bin/ls", Command: "ls"}, "needs the argv"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := db.AllowlistAdd(tt.agent, tt.e)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("AllowlistAdd = %v, want %q", err, tt.want)
			}
		})
	}
	if list, _ := db.AllowlistList(agent); len(list) != 0 {
		t.Errorf("bad entries were stored: %+v", list)
	}
}
