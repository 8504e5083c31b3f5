// Package policy resolves which tools an agent may use in a turn
// (docs/design.md §3.7). It is pure: no I/O, standard library only, and it does
// not import engine/tool — the caller passes the functions that expand group
// and profile entries, so the policy rules stay testable on their own.
//
// Rules, as OpenClaw applies them:
//   - Layers are stacked (profile → provider → global → agent → group →
//     sandbox → sub-agent) and the most restrictive wins: a tool is allowed
//     iff no layer denies it and every layer that restricts (a non-empty
//     allow list or a profile) allows it.
//   - Deny always beats allow, in any layer.
//   - Entries are exact tool names, "group:x" (expanded by the caller's
//     func, recursively), "*" and simple globs where "*" matches any run of
//     characters ("sessions_*"). Matching is case-insensitive.
//
// Choices where the spec was silent:
//   - A layer's Profile is resolved as the allow entry "profile:<name>"
//     through the same expand func; a profile that expands to nothing
//     allows nothing (fail closed). engine/tool.ExpandGroup resolves
//     "profile:full" to "*". Within one layer, the profile and the allow
//     list add up (OpenClaw's alsoAllow), so {profile: coding, allow:
//     [message]} allows the coding tools plus message.
//   - OpenClaw's aliases are honoured: "bash" means "exec", "apply-patch"
//     means "apply_patch". OpenClaw's rule that an allowed exec implies
//     apply_patch is not: every tool must be allowed by name, group or glob,
//     which keeps "most restrictive wins" literally true.
//   - A group that expand does not know matches nothing; Validate reports it.
package policy

import (
	"errors"
	"fmt"
	"strings"
)

// Layer is one level of tool policy. Name is informative ("profile",
// "global", "agent", "provider", "group", "sandbox", "subagent") and names
// the layer in validation errors.
type Layer struct {
	Name    string
	Profile string
	Allow   []string
	Deny    []string
}

// restricts reports whether l limits the tool set at all.
func (l Layer) restricts() bool { return l.Profile != "" || len(l.Allow) > 0 }

// maxExpandDepth bounds group-in-group expansion so a cyclic expand func
// cannot loop forever.
const maxExpandDepth = 8

// aliases maps OpenClaw's alternative tool names onto the canonical ones.
var aliases = map[string]string{
	"bash":        "exec",
	"apply-patch": "apply_patch",
}

// Normalize returns the canonical spelling of a tool name or entry:
// trimmed, lower case, aliases resolved.
func Normalize(name string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	if a, ok := aliases[n]; ok {
		return a
	}
	return n
}

// matcher is one compiled allow or deny list.
type matcher struct {
	exact map[string]bool
	globs []string // lower-case patterns containing '*'
	all   bool
}

func (m *matcher) match(name string) bool {
	if m.all || m.exact[name] {
		return true
	}
	for _, g := range m.globs {
		if globMatch(g, name) {
			return true
		}
	}
	return false
}

// compile expands entries (groups and profiles through expand) into a
// matcher.
func compile(entries []string, expand func(string) []string) *matcher {
	m := &matcher{exact: map[string]bool{}}
	var add func(e string, depth int)
	add = func(e string, depth int) {
		e = Normalize(e)
		switch {
		case e == "":
		case e == "*":
			m.all = true
		case isExpandable(e):
			if expand == nil || depth >= maxExpandDepth {
				return
			}
			for _, sub := range expand(e) {
				add(sub, depth+1)
			}
		case strings.Contains(e, "*"):
			m.globs = append(m.globs, e)
		default:
			m.exact[e] = true
		}
	}
	for _, e := range entries {
		add(e, 0)
	}
	return m
}

func isExpandable(e string) bool {
	return strings.HasPrefix(e, "group:") || strings.HasPrefix(e, "profile:")
}

// compiledLayer is a Layer ready for matching.
type compiledLayer struct {
	restricts bool
	allow     *matcher
	deny      *matcher
}

// Allowed compiles layers into a predicate over tool names. expand resolves
// "group:x" and "profile:x" entries to tool names (or further entries); it
// may be nil when no layer uses them. The returned func is safe for
// concurrent use.
func Allowed(layers []Layer, expand func(entry string) []string) func(tool string) bool {
	compiled := make([]compiledLayer, 0, len(layers))
	for _, l := range layers {
		allow := l.Allow
		if l.Profile != "" {
			allow = append([]string{"profile:" + l.Profile}, l.Allow...)
		}
		compiled = append(compiled, compiledLayer{
			restricts: l.restricts(),
			allow:     compile(allow, expand),
			deny:      compile(l.Deny, expand),
		})
	}
	return func(tool string) bool {
		name := Normalize(tool)
		if name == "" {
			return false
		}
		for _, c := range compiled {
			if c.deny.match(name) {
				return false
			}
		}
		for _, c := range compiled {
			if c.restricts && !c.allow.match(name) {
				return false
			}
		}
		return true
	}
}

// Validate checks that every entry of l is known, for config validation.
// known reports whether an exact tool name, a "group:x" or a "profile:x" is
// known; globs only need to be well formed. The error names the layer, the
// list and the entry.
func Validate(l Layer, known func(entry string) bool) error {
	var errs []error
	name := l.Name
	if name == "" {
		name = "tools"
	}
	if l.Profile != "" && !known("profile:"+Normalize(l.Profile)) {
		errs = append(errs, fmt.Errorf("%s: unknown tool profile %q", name, l.Profile))
	}
	check := func(list string, entries []string) {
		for _, e := range entries {
			n := Normalize(e)
			switch {
			case n == "":
				errs = append(errs, fmt.Errorf("%s.%s: empty tool entry", name, list))
			case strings.Contains(n, "*"):
				if strings.HasPrefix(n, "group:") || strings.HasPrefix(n, "profile:") {
					errs = append(errs, fmt.Errorf("%s.%s: %q: globs cannot name groups or profiles", name, list, e))
				}
			case !known(n):
				what := "tool"
				if strings.HasPrefix(n, "group:") {
					what = "tool group"
				} else if strings.HasPrefix(n, "profile:") {
					what = "tool profile"
				}
				errs = append(errs, fmt.Errorf("%s.%s: unknown %s %q", name, list, what, e))
			}
		}
	}
	check("allow", l.Allow)
	check("deny", l.Deny)
	return errors.Join(errs...)
}

// globMatch reports whether name matches pattern, where '*' matches any run
// of characters (including none) and everything else matches itself.
func globMatch(pattern, name string) bool {
	// Classic greedy wildcard matching with backtracking to the last star:
	// linear in practice, no regexp compilation per entry.
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case p < len(pattern) && pattern[p] == name[n]:
			p++
			n++
		case star >= 0:
			p = star + 1
			mark++
			n = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
