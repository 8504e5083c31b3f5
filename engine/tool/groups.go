package tool

import (
	"slices"
	"strings"
)

// Groups are OpenClaw's named tool groups, usable in allow and deny lists.
// group:openclaw holds every built-in tool.
var Groups = map[string][]string{
	"group:fs":         {"read", "write", "edit", "apply_patch", "grep", "find", "ls"},
	"group:runtime":    {"exec", "process"},
	"group:sessions":   {"sessions_list", "sessions_history", "sessions_send", "sessions_spawn", "session_status"},
	"group:memory":     {"memory_search", "memory_get"},
	"group:messaging":  {"message"},
	"group:automation": {"cron"},
	"group:openclaw": {
		"read", "write", "edit", "apply_patch", "grep", "find", "ls",
		"exec", "process",
		"sessions_list", "sessions_history", "sessions_send", "sessions_spawn", "session_status",
		"memory_search", "memory_get",
		"message", "cron",
	},
}

// Profiles are OpenClaw's base tool profiles (tools.profile). A nil list
// ("full") means no restriction.
var Profiles = map[string][]string{
	"minimal": {"session_status"},
	// coding and messaging add group:automation (cron) to OpenClaw's
	// lists: the shipped profile is coding, and "remind me at 9" must
	// work on a box with the shipped defaults.
	"coding":    {"group:fs", "group:runtime", "group:sessions", "group:memory", "group:automation"},
	"messaging": {"group:messaging", "sessions_list", "sessions_history", "sessions_send", "session_status", "group:automation"},
	"full":      nil,
}

// SmallWindowTools are the tools a prompt keeps when its window is too
// small for all of them (prompt.LevelMinimalTools): the cron tool, since
// "remind me at 9" is the first thing people ask an assistant and a box's
// default local model has a 4,096-token window. OpenClaw's "minimal"
// profile (session_status) does not fit beside it there, and /status
// answers the same question. The agent's own policy still applies.
var SmallWindowTools = []string{"cron"}

// ProfileAllow returns the allow list of a profile and whether the profile
// exists. "full" returns (nil, true): no restriction.
func ProfileAllow(profile string) ([]string, bool) {
	allow, ok := Profiles[strings.ToLower(strings.TrimSpace(profile))]
	return slices.Clone(allow), ok
}

// ExpandGroup expands a policy entry for engine/policy: "group:x" to its
// tools, "profile:x" to the profile's allow list ("profile:full" to "*").
// It returns nil for anything else, including unknown groups and profiles.
func ExpandGroup(entry string) []string {
	e := strings.ToLower(strings.TrimSpace(entry))
	if name, ok := strings.CutPrefix(e, "profile:"); ok {
		allow, ok := ProfileAllow(name)
		if !ok {
			return nil
		}
		if allow == nil {
			return []string{"*"}
		}
		return allow
	}
	return slices.Clone(Groups[e])
}

// KnownEntry reports whether entry is a built-in tool name, a group or a
// profile ("profile:x"), case-insensitively: the known func for
// policy.Validate when no registry is at hand.
func KnownEntry(entry string) bool {
	e := strings.ToLower(strings.TrimSpace(entry))
	if name, ok := strings.CutPrefix(e, "profile:"); ok {
		_, ok := Profiles[name]
		return ok
	}
	if _, ok := Groups[e]; ok {
		return true
	}
	return slices.Contains(Groups["group:openclaw"], e)
}
