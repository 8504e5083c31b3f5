package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/openclaw-edge/edge/engine"
)

// Set is the tool set of one turn: the registry's tools filtered by policy,
// bound to the turn's environment. The agent loop sees it through its own
// Toolset interface (Specs and Run). Safe for concurrent use.
type Set struct {
	tools    map[string]Tool // every registered tool, by exact name
	names    []string        // allowed tool names, sorted
	allowed  func(string) bool
	env      Env
	maxChars int
}

// NewSet builds the tool set of one turn. allowed is the policy predicate
// (engine/policy.Allowed); nil allows every registered tool.
func NewSet(reg *Registry, allowed func(name string) bool, env Env, trunc TruncateConfig) *Set {
	if allowed == nil {
		allowed = func(string) bool { return true }
	}
	s := &Set{
		tools:    map[string]Tool{},
		allowed:  allowed,
		env:      env,
		maxChars: MaxResultChars(trunc.ContextWindow),
	}
	if s.env.ResultChars <= 0 || s.env.ResultChars > s.maxChars {
		s.env.ResultChars = s.maxChars
	}
	if reg != nil {
		for _, t := range reg.Tools() {
			name := t.Spec().Name
			s.tools[name] = t
			if allowed(name) {
				s.names = append(s.names, name)
			}
		}
	}
	slices.Sort(s.names)
	return s
}

// Names returns the allowed tool names, sorted.
func (s *Set) Names() []string { return slices.Clone(s.names) }

// Allowed reports whether the model may call name in this turn.
func (s *Set) Allowed(name string) bool {
	_, canon, ok := s.lookup(name)
	return ok && s.allowed(canon)
}

// Specs returns the specs of the allowed tools, sorted by name.
func (s *Set) Specs() []engine.ToolSpec {
	specs := make([]engine.ToolSpec, 0, len(s.names))
	for _, n := range s.names {
		specs = append(specs, s.tools[n].Spec())
	}
	return specs
}

// lookup finds a tool by exact name, then case-insensitively.
func (s *Set) lookup(name string) (Tool, string, bool) {
	if t, ok := s.tools[name]; ok {
		return t, name, true
	}
	for n, t := range s.tools {
		if strings.EqualFold(n, strings.TrimSpace(name)) {
			return t, n, true
		}
	}
	return nil, "", false
}

// Run runs one tool call and always returns a result for the model: unknown
// tools, policy refusals, malformed arguments and panics become error
// results. Every text block of the result is truncated to the turn's budget.
func (s *Set) Run(ctx context.Context, call engine.ToolCall) (res engine.ToolResult) {
	t, name, ok := s.lookup(call.Name)
	if !ok {
		avail := strings.Join(s.names, ", ")
		if avail == "" {
			avail = "(none)"
		}
		return engine.ErrorResult("unknown tool %q; available: %s", call.Name, avail)
	}
	if !s.allowed(name) {
		return engine.ErrorResult("tool %q is not allowed by policy", name)
	}
	args, err := objectArgs(call.Arguments)
	if err != nil {
		return engine.ErrorResult("tool %q: %v", name, err)
	}
	defer func() {
		if r := recover(); r != nil {
			res = engine.ErrorResult("tool %q failed: internal error: %v", name, r)
		}
		res = s.finish(res)
	}()
	return t.Run(ctx, s.env, args)
}

// finish truncates text blocks and makes sure the result is not empty.
func (s *Set) finish(res engine.ToolResult) engine.ToolResult {
	if len(res.Content) == 0 {
		res.Content = []engine.Block{engine.TextBlock("(no output)")}
		return res
	}
	content := make([]engine.Block, len(res.Content))
	for i, b := range res.Content {
		if b.Type == engine.BlockText {
			b.Text = Truncate(b.Text, s.maxChars)
		}
		content[i] = b
	}
	res.Content = content
	return res
}

// objectArgs checks that raw is a JSON object; empty and null become {}.
func objectArgs(raw json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return json.RawMessage("{}"), nil
	}
	// Some models encode the arguments twice: a JSON string holding the
	// object. Unwrap that one level.
	var inner string
	if trimmed[0] == '"' && json.Unmarshal(trimmed, &inner) == nil {
		if in := bytes.TrimSpace([]byte(inner)); len(in) > 0 && in[0] == '{' && json.Valid(in) {
			trimmed = in
		}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return nil, fmt.Errorf("arguments must be a JSON object, got %s", typeErr.Value)
		}
		return nil, fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	return json.RawMessage(trimmed), nil
}
