package anthropictest

//lint:file-ignore ST1005 these are the provider's own error texts, sent on the wire as the real API words them

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// request is what the handler reads from a Messages request.
type request struct {
	Model     string             `json:"model"`
	MaxTokens *int               `json:"max_tokens"`
	Messages  *[]json.RawMessage `json:"messages"`
	System    json.RawMessage    `json:"system"`
	Tools     []json.RawMessage  `json:"tools"`
	Thinking  *struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	} `json:"thinking"`
	Stream bool `json:"stream"`
}

// vblock is any content block, for checking.
type vblock struct {
	Type      string  `json:"type"`
	Text      *string `json:"text"`
	Thinking  *string `json:"thinking"`
	Signature string  `json:"signature"`
	Data      string  `json:"data"`
	Source    *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content"`
	CacheControl json.RawMessage `json:"cache_control"`
}

var (
	idPattern   = `^[a-zA-Z0-9_-]+$`
	toolIDRe    = regexp.MustCompile(idPattern)
	toolNameRe  = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	imageMedias = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}
)

// validate checks a request the way the API does and returns the text of
// the last user message that has text, for echo replies.
func validate(req *request) (string, error) {
	if req.Model == "" {
		return "", fmt.Errorf("model: Field required")
	}
	if req.MaxTokens == nil {
		return "", fmt.Errorf("max_tokens: Field required")
	}
	if *req.MaxTokens < 1 {
		return "", fmt.Errorf("max_tokens: Input should be greater than or equal to 1")
	}
	if req.Messages == nil {
		return "", fmt.Errorf("messages: Field required")
	}
	if len(*req.Messages) == 0 {
		return "", fmt.Errorf("messages: at least one message is required")
	}
	cacheMarks := 0
	if len(req.System) > 0 && string(req.System) != "null" {
		var s string
		if json.Unmarshal(req.System, &s) != nil {
			var blocks []vblock
			if err := json.Unmarshal(req.System, &blocks); err != nil {
				return "", fmt.Errorf("system: Input should be a valid string or list of text blocks")
			}
			for i, b := range blocks {
				if b.Type != "text" || b.Text == nil || strings.TrimSpace(*b.Text) == "" {
					return "", fmt.Errorf("system.%d: text content blocks must be non-empty", i)
				}
				n, err := cacheMark(b.CacheControl, fmt.Sprintf("system.%d", i))
				if err != nil {
					return "", err
				}
				cacheMarks += n
			}
		}
	}
	for i, raw := range req.Tools {
		var t struct {
			Name         string          `json:"name"`
			InputSchema  json.RawMessage `json:"input_schema"`
			CacheControl json.RawMessage `json:"cache_control"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return "", fmt.Errorf("tools.%d: %v", i, err)
		}
		if !toolNameRe.MatchString(t.Name) {
			return "", fmt.Errorf("tools.%d.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'", i)
		}
		if len(t.InputSchema) == 0 || t.InputSchema[0] != '{' {
			return "", fmt.Errorf("tools.%d.custom.input_schema: Field required", i)
		}
		n, err := cacheMark(t.CacheControl, fmt.Sprintf("tools.%d", i))
		if err != nil {
			return "", err
		}
		cacheMarks += n
	}
	thinking := false
	if t := req.Thinking; t != nil {
		switch t.Type {
		case "disabled":
		case "enabled":
			thinking = true
			if t.BudgetTokens < 1024 {
				return "", fmt.Errorf("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
			}
			if *req.MaxTokens <= t.BudgetTokens {
				return "", fmt.Errorf("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size")
			}
		default:
			return "", fmt.Errorf("thinking: Input tag '%s' found using 'type' does not match any of the expected tags: 'disabled', 'enabled'", t.Type)
		}
	}

	msgs := *req.Messages
	var lastUser string
	var prevRole string
	var prevToolUses []string // tool_use ids of the previous (assistant) message
	var prevBlocks []vblock
	for i, raw := range msgs {
		var m struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return "", fmt.Errorf("messages.%d: %v", i, err)
		}
		if m.Role != "user" && m.Role != "assistant" {
			return "", fmt.Errorf("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		var blocks []vblock
		var s string
		switch {
		case len(m.Content) == 0 || string(m.Content) == "null":
			return "", fmt.Errorf("messages.%d.content: Field required", i)
		case json.Unmarshal(m.Content, &s) == nil:
			if strings.TrimSpace(s) == "" {
				return "", fmt.Errorf("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
			}
			blocks = []vblock{{Type: "text", Text: &s}}
		default:
			if err := json.Unmarshal(m.Content, &blocks); err != nil {
				return "", fmt.Errorf("messages.%d.content: Input should be a valid list", i)
			}
			if len(blocks) == 0 {
				return "", fmt.Errorf("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
			}
		}

		var results, uses []string
		var text []string
		for j, b := range blocks {
			where := fmt.Sprintf("messages.%d.content.%d", i, j)
			n, err := cacheMark(b.CacheControl, where)
			if err != nil {
				return "", err
			}
			cacheMarks += n
			if err := checkBlock(m.Role, b, where); err != nil {
				return "", err
			}
			switch b.Type {
			case "tool_use":
				uses = append(uses, b.ID)
			case "tool_result":
				results = append(results, b.ToolUseID)
				n, err := checkResultContent(b.Content, where)
				if err != nil {
					return "", err
				}
				cacheMarks += n
			case "text":
				text = append(text, *b.Text)
			}
		}

		// Pairing of tool_use and tool_result across neighbouring messages.
		if len(prevToolUses) > 0 {
			answered := map[string]bool{}
			for _, id := range results {
				answered[id] = true
			}
			var missing []string
			for _, id := range prevToolUses {
				if !answered[id] {
					missing = append(missing, id)
				}
			}
			if m.Role != "user" || len(missing) > 0 {
				return "", fmt.Errorf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, strings.Join(missing, ", "))
			}
		}
		if len(results) > 0 {
			known := map[string]bool{}
			if prevRole == "assistant" {
				for _, id := range prevToolUses {
					known[id] = true
				}
			}
			for j, id := range results {
				if !known[id] {
					return "", fmt.Errorf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, id)
				}
			}
			if thinking && i == len(msgs)-1 && prevBlocks[0].Type != "thinking" && prevBlocks[0].Type != "redacted_thinking" {
				return "", fmt.Errorf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking", i-1, prevBlocks[0].Type)
			}
		}
		if m.Role == "user" && len(text) > 0 {
			lastUser = strings.Join(text, "\n")
		}
		prevRole, prevToolUses, prevBlocks = m.Role, uses, blocks
	}
	if len(prevToolUses) > 0 {
		return "", fmt.Errorf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", len(msgs)-1, strings.Join(prevToolUses, ", "))
	}
	if cacheMarks > 4 {
		return "", fmt.Errorf("A maximum of 4 blocks with cache_control may be provided. Found %d.", cacheMarks)
	}
	return lastUser, nil
}

// checkBlock checks one content block of a message with role.
func checkBlock(role string, b vblock, where string) error {
	allowed := map[string][]string{
		"user":      {"text", "image", "tool_result", "document"},
		"assistant": {"text", "thinking", "redacted_thinking", "tool_use"},
	}[role]
	ok := false
	for _, t := range allowed {
		ok = ok || t == b.Type
	}
	if !ok {
		return fmt.Errorf("%s.type: Input tag '%s' found using 'type' does not match any of the expected tags for a %s message: '%s'", where, b.Type, role, strings.Join(allowed, "', '"))
	}
	switch b.Type {
	case "text":
		if b.Text == nil {
			return fmt.Errorf("%s.text: Field required", where)
		}
		if strings.TrimSpace(*b.Text) == "" {
			return fmt.Errorf("messages: text content blocks must contain non-whitespace text (%s)", where)
		}
	case "image":
		if b.Source == nil || b.Source.Type != "base64" {
			return fmt.Errorf("%s.source: Field required", where)
		}
		if !imageMedias[b.Source.MediaType] {
			return fmt.Errorf("%s.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'", where)
		}
		if b.Source.Data == "" {
			return fmt.Errorf("%s.source.base64.data: Field required", where)
		}
	case "thinking":
		if b.Thinking == nil {
			return fmt.Errorf("%s.thinking.thinking: Field required", where)
		}
		if b.Signature == "" {
			return fmt.Errorf("%s.thinking.signature: Field required", where)
		}
	case "redacted_thinking":
		if b.Data == "" {
			return fmt.Errorf("%s.redacted_thinking.data: Field required", where)
		}
	case "tool_use":
		if !toolIDRe.MatchString(b.ID) {
			return fmt.Errorf("%s.tool_use.id: String should match pattern '%s'", where, idPattern)
		}
		if b.Name == "" {
			return fmt.Errorf("%s.tool_use.name: Field required", where)
		}
		if len(b.Input) == 0 || b.Input[0] != '{' {
			return fmt.Errorf("%s.tool_use.input: Input should be a valid dictionary", where)
		}
	case "tool_result":
		if !toolIDRe.MatchString(b.ToolUseID) {
			return fmt.Errorf("%s.tool_result.tool_use_id: String should match pattern '%s'", where, idPattern)
		}
	}
	return nil
}

// checkResultContent checks a tool_result's content: absent, a string, or
// text and image blocks. It returns the cache marks inside.
func checkResultContent(c json.RawMessage, where string) (int, error) {
	if len(c) == 0 || string(c) == "null" {
		return 0, nil
	}
	var s string
	if json.Unmarshal(c, &s) == nil {
		return 0, nil
	}
	var blocks []vblock
	if err := json.Unmarshal(c, &blocks); err != nil {
		return 0, fmt.Errorf("%s.tool_result.content: Input should be a valid string or list", where)
	}
	marks := 0
	for k, b := range blocks {
		w := fmt.Sprintf("%s.tool_result.content.%d", where, k)
		if b.Type != "text" && b.Type != "image" {
			return 0, fmt.Errorf("%s.type: Input tag '%s' found using 'type' does not match any of the expected tags: 'text', 'image'", w, b.Type)
		}
		if err := checkBlock("user", b, w); err != nil {
			return 0, err
		}
		n, err := cacheMark(b.CacheControl, w)
		if err != nil {
			return 0, err
		}
		marks += n
	}
	return marks, nil
}

// cacheMark checks a cache_control value and counts it.
func cacheMark(cc json.RawMessage, where string) (int, error) {
	if len(cc) == 0 || string(cc) == "null" {
		return 0, nil
	}
	var v struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(cc, &v) != nil || v.Type != "ephemeral" {
		return 0, fmt.Errorf("%s.cache_control.type: Input should be 'ephemeral'", where)
	}
	return 1, nil
}
