package tool

import "strings"

// readOnly are the built-in tools that change nothing: calls to them may run
// in parallel with each other. Every other tool, one registered later
// included, counts as mutating until it is listed here, because running two
// writers at once loses updates (two parallel edits of one file: the second
// overwrites the first) and running a reader beside a writer makes what it
// sees depend on timing.
var readOnly = map[string]bool{
	"read": true, "grep": true, "find": true, "ls": true,
	"memory_search": true, "memory_get": true,
	"sessions_list": true, "sessions_history": true, "session_status": true,
}

// Mutating reports whether a call to the tool called name may change
// something (a file, a process, a message sent): write, edit, apply_patch,
// exec, process and any tool not known to be read-only. The agent loop runs
// such calls one at a time, in call order, and never beside a read-only
// one. Names match case-insensitively, as Set.Run looks them up.
func Mutating(name string) bool {
	return !readOnly[strings.ToLower(strings.TrimSpace(name))]
}

// Mutating reports whether a call to name may change something; see the
// package function. It lets the agent loop order a turn's calls.
func (s *Set) Mutating(name string) bool {
	if _, canon, ok := s.lookup(name); ok {
		return Mutating(canon)
	}
	return Mutating(name)
}
