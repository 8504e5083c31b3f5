package policy

import (
	"strings"
	"testing"
)

// expand is a small stand-in for engine/tool.ExpandGroup.
func expand(e string) []string {
	switch e {
	case "group:fs":
		return []string{"read", "write", "edit", "apply_patch", "grep", "find", "ls"}
	case "group:runtime":
		return []string{"exec", "process"}
	case "group:sessions":
		return []string{"sessions_list", "sessions_history", "sessions_send", "sessions_spawn", "session_status"}
	case "group:all":
		return []string{"group:fs", "group:runtime", "group:sessions", "message"}
	case "group:loop":
		return []string{"group:loop", "read"}
	case "profile:minimal":
		return []string{"session_status"}
	case "profile:coding":
		return []string{"group:fs", "group:runtime", "group:sessions"}
	case "profile:full":
		return []string{"*"}
	}
	return nil
}

var allTools = []string{
	"read", "write", "edit", "apply_patch", "grep", "find", "ls", "exec", "process",
	"sessions_list", "sessions_history", "sessions_send", "sessions_spawn", "session_status",
	"memory_search", "memory_get", "message",
}

func TestAllowed(t *testing.T) {
	tests := []struct {
		name   string
		layers []Layer
		want   string // the allowed tools, space separated, in allTools order
	}{
		{"no layers allow everything", nil, strings.Join(allTools, " ")},
		{"empty layer restricts nothing", []Layer{{Name: "global"}}, strings.Join(allTools, " ")},
		{"minimal profile", []Layer{{Name: "profile", Profile: "minimal"}}, "session_status"},
		{"full profile", []Layer{{Name: "profile", Profile: "full"}}, strings.Join(allTools, " ")},
		{"coding profile", []Layer{{Name: "profile", Profile: "coding"}},
			"read write edit apply_patch grep find ls exec process sessions_list sessions_history sessions_send sessions_spawn session_status"},
		{"unknown profile fails closed", []Layer{{Name: "profile", Profile: "bogus"}}, ""},
		{"profile plus allow adds up", []Layer{{Name: "profile", Profile: "minimal", Allow: []string{"message"}}},
			"session_status message"},
		{"global deny removes from profile", []Layer{
			{Name: "profile", Profile: "coding"},
			{Name: "global", Deny: []string{"group:runtime", "apply_patch"}},
		}, "read write edit grep find ls sessions_list sessions_history sessions_send sessions_spawn session_status"},
		{"most restrictive wins: intersection", []Layer{
			{Name: "global", Allow: []string{"group:fs", "exec"}},
			{Name: "agent", Allow: []string{"read", "exec", "message"}},
		}, "read exec"},
		{"deny beats allow in the same layer", []Layer{
			{Name: "agent", Allow: []string{"read", "write"}, Deny: []string{"write"}},
		}, "read"},
		{"deny beats a later allow", []Layer{
			{Name: "global", Deny: []string{"exec"}},
			{Name: "agent", Allow: []string{"exec", "read"}},
		}, "read"},
		{"glob allow", []Layer{{Name: "global", Allow: []string{"sessions_*"}}},
			"sessions_list sessions_history sessions_send sessions_spawn"},
		{"glob deny", []Layer{{Name: "global", Deny: []string{"*_get", "memory*"}}},
			"read write edit apply_patch grep find ls exec process sessions_list sessions_history sessions_send sessions_spawn session_status message"},
		{"star allows all", []Layer{{Name: "global", Allow: []string{"*"}}}, strings.Join(allTools, " ")},
		{"star deny denies all", []Layer{{Name: "sandbox", Deny: []string{"*"}}}, ""},
		{"case-insensitive entries", []Layer{{Name: "global", Allow: []string{"READ", "Group:Runtime"}}}, "read exec process"},
		{"nested groups", []Layer{{Name: "global", Allow: []string{"group:all"}, Deny: []string{"group:sessions"}}},
			"read write edit apply_patch grep find ls exec process message"},
		{"cyclic group terminates", []Layer{{Name: "global", Allow: []string{"group:loop"}}}, "read"},
		{"unknown group matches nothing", []Layer{{Name: "global", Allow: []string{"group:nope", "ls"}}}, "ls"},
		{"aliases", []Layer{{Name: "global", Allow: []string{"bash", "apply-patch"}}}, "apply_patch exec"},
		{"exec does not imply apply_patch", []Layer{{Name: "global", Allow: []string{"exec"}}}, "exec"},
		{"sub-agent narrows its parent", []Layer{
			{Name: "profile", Profile: "coding"},
			{Name: "agent", Deny: []string{"write"}},
			{Name: "subagent", Allow: []string{"read", "write", "grep"}},
		}, "read grep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok := Allowed(tt.layers, expand)
			var got []string
			for _, name := range allTools {
				if ok(name) {
					got = append(got, name)
				}
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("allowed:\n got %q\nwant %q", g, tt.want)
			}
		})
	}
}

func TestAllowedCaseInsensitiveQuery(t *testing.T) {
	ok := Allowed([]Layer{{Name: "global", Allow: []string{"read"}}}, nil)
	for _, q := range []string{"read", "READ", " Read "} {
		if !ok(q) {
			t.Errorf("ok(%q) = false, want true", q)
		}
	}
	if ok("") {
		t.Error("empty tool name allowed")
	}
}

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"*", "", true},
		{"*", "read", true},
		{"sessions_*", "sessions_list", true},
		{"sessions_*", "session_status", false},
		{"*_get", "memory_get", true},
		{"*_get", "memory_get_x", false},
		{"m*y*t", "memory_get", true},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
		{"read", "read", true},
		{"**", "x", true},
	}
	for _, tt := range tests {
		if got := globMatch(tt.pattern, tt.name); got != tt.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	known := func(e string) bool {
		switch e {
		case "read", "exec", "group:fs", "profile:coding":
			return true
		}
		return false
	}
	tests := []struct {
		name    string
		layer   Layer
		wantErr string // substring; "" means valid
	}{
		{"valid", Layer{Name: "agent", Profile: "coding", Allow: []string{"read", "group:fs", "sessions_*"}, Deny: []string{"EXEC", "bash"}}, ""},
		{"unknown tool", Layer{Name: "agent", Allow: []string{"reed"}}, `agent.allow: unknown tool "reed"`},
		{"unknown group", Layer{Name: "global", Deny: []string{"group:nope"}}, `global.deny: unknown tool group "group:nope"`},
		{"unknown profile", Layer{Name: "profile", Profile: "coder"}, `profile: unknown tool profile "coder"`},
		{"empty entry", Layer{Name: "agent", Allow: []string{" "}}, "agent.allow: empty tool entry"},
		{"glob group", Layer{Name: "agent", Allow: []string{"group:*"}}, "globs cannot name groups"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.layer, known)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("no error, want %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("error %q does not contain %q", err, tt.wantErr)
			}
		})
	}
}

func FuzzGlobMatch(f *testing.F) {
	f.Add("sessions_*", "sessions_list")
	f.Add("*a*b*", "xxaxxbxx")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		got := globMatch(pattern, name)
		if !strings.Contains(pattern, "*") && got != (pattern == name) {
			t.Fatalf("globMatch(%q, %q) = %v without wildcards", pattern, name, got)
		}
		if pattern == "*" && !got {
			t.Fatalf("* did not match %q", name)
		}
	})
}
