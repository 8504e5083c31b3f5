// Package engine is the vocabulary of the assistant pipeline: messages and
// their content blocks, tool calls and results, model requests and stream
// events, session keys, inbound messages and the error kinds that drive
// failover. It imports only the standard library so that every other package
// (channels, storage, models, tools, the gateway and the CLI's wire types) can
// share it without pulling anything else in.
//
// The JSON shapes follow OpenClaw's transcript format (the pi-coding-agent
// session JSONL, version 3): roles user | assistant | toolResult, content
// blocks text | thinking | image | toolCall, usage {input, output, cacheRead,
// cacheWrite, totalTokens}, stop reasons stop | length | toolUse | error |
// aborted. Keeping our in-memory types identical to the on-disk format means
// import and export are lossless by construction.
package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Role is who authored a message.
type Role string

// Roles, as OpenClaw writes them.
const (
	RoleUser       Role = "user"
	RoleAssistant  Role = "assistant"
	RoleToolResult Role = "toolResult"
)

// BlockType names the kind of a content block.
type BlockType string

// Content block types.
const (
	BlockText     BlockType = "text"
	BlockThinking BlockType = "thinking"
	BlockImage    BlockType = "image"
	BlockToolCall BlockType = "toolCall"
)

// Block is one piece of message content. Only the fields of its Type are set.
type Block struct {
	Type BlockType `json:"type"`

	// text
	Text string `json:"text,omitempty"`

	// thinking
	Thinking          string `json:"thinking,omitempty"`
	ThinkingSignature string `json:"thinkingSignature,omitempty"`

	// image: base64 data with its MIME type
	Data     string `json:"data,omitempty"`
	MimeType string `json:"mimeType,omitempty"`

	// toolCall
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// TextBlock returns a text block.
func TextBlock(s string) Block { return Block{Type: BlockText, Text: s} }

// Usage counts tokens for one model call (or a sum of them).
type Usage struct {
	Input       int `json:"input"`
	Output      int `json:"output"`
	CacheRead   int `json:"cacheRead"`
	CacheWrite  int `json:"cacheWrite"`
	TotalTokens int `json:"totalTokens"`
}

// Add accumulates o into u.
func (u *Usage) Add(o Usage) {
	u.Input += o.Input
	u.Output += o.Output
	u.CacheRead += o.CacheRead
	u.CacheWrite += o.CacheWrite
	u.TotalTokens += o.TotalTokens
}

// ContinuePrompt is the user message the agent loop sends to ask a model to
// continue a reply cut at its output-token limit. A provider that can
// continue the cut message itself (a local model, from the open assistant
// turn) may render the request that way instead.
const ContinuePrompt = "[continue] Your previous reply was cut off at the output limit. Continue exactly where it stopped, without repeating anything."

// StopReason says why a model stopped producing output.
type StopReason string

// Stop reasons, as OpenClaw writes them.
const (
	StopEnd     StopReason = "stop"
	StopLength  StopReason = "length"
	StopToolUse StopReason = "toolUse"
	StopError   StopReason = "error"
	StopAborted StopReason = "aborted"
)

// Message is one conversation message: a user turn, an assistant reply (which
// may carry tool calls) or the result of one tool call.
type Message struct {
	Role    Role    `json:"role"`
	Content []Block `json:"content"`

	// Assistant messages.
	API          string     `json:"api,omitempty"`
	Provider     string     `json:"provider,omitempty"`
	Model        string     `json:"model,omitempty"`
	Usage        *Usage     `json:"usage,omitempty"`
	StopReason   StopReason `json:"stopReason,omitempty"`
	ErrorMessage string     `json:"errorMessage,omitempty"`

	// Tool results.
	ToolCallID string          `json:"toolCallId,omitempty"`
	ToolName   string          `json:"toolName,omitempty"`
	Details    json.RawMessage `json:"details,omitempty"`
	IsError    bool            `json:"isError,omitempty"`

	// Timestamp in Unix milliseconds.
	Timestamp int64 `json:"timestamp,omitempty"`
}

// Text returns the concatenated text blocks of m.
func (m *Message) Text() string {
	var b strings.Builder
	for _, c := range m.Content {
		if c.Type == BlockText {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// ToolCalls returns the tool calls in m, in order.
func (m *Message) ToolCalls() []ToolCall {
	var calls []ToolCall
	for _, c := range m.Content {
		if c.Type == BlockToolCall {
			calls = append(calls, ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
	}
	return calls
}

// UserText returns a user message holding text, stamped now.
func UserText(text string) Message {
	return Message{Role: RoleUser, Content: []Block{TextBlock(text)}, Timestamp: time.Now().UnixMilli()}
}

// ToolCall is a model's request to run one tool.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Block returns c as a toolCall content block.
func (c ToolCall) Block() Block {
	return Block{Type: BlockToolCall, ID: c.ID, Name: c.Name, Arguments: c.Arguments}
}

// ToolSpec describes a tool to a model. Parameters is a JSON Schema object.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// ToolResult is what a tool returns. IsError results are still sent to the
// model: a refused or failed call is information the model can act on.
type ToolResult struct {
	Content []Block         `json:"content"`
	Details json.RawMessage `json:"details,omitempty"`
	IsError bool            `json:"isError,omitempty"`
}

// ErrorResult is a tool result that reports a failure in plain words.
func ErrorResult(format string, args ...any) ToolResult {
	return ToolResult{Content: []Block{TextBlock(fmt.Sprintf(format, args...))}, IsError: true}
}

// TextResult is a successful tool result holding text.
func TextResult(text string) ToolResult {
	return ToolResult{Content: []Block{TextBlock(text)}}
}

// Message turns r into the toolResult message that answers call.
func (r ToolResult) Message(call ToolCall) Message {
	return Message{
		Role:       RoleToolResult,
		Content:    r.Content,
		ToolCallID: call.ID,
		ToolName:   call.Name,
		Details:    r.Details,
		IsError:    r.IsError,
		Timestamp:  time.Now().UnixMilli(),
	}
}

// ThinkingLevel is the reasoning effort asked of a model.
type ThinkingLevel string

// Thinking levels accepted by /think.
const (
	ThinkingOff    ThinkingLevel = "off"
	ThinkingLow    ThinkingLevel = "low"
	ThinkingMedium ThinkingLevel = "medium"
	ThinkingHigh   ThinkingLevel = "high"
)

// ChatRequest is one call to a model.
type ChatRequest struct {
	// Model is the provider's own model id (without the "provider/" prefix).
	Model string
	// System is the system prompt. The first CacheBoundary bytes are stable
	// across turns (providers with prompt caching mark them cacheable; the
	// local runner keeps their KV cache). Zero means no known boundary.
	System        string
	CacheBoundary int
	Messages      []Message
	Tools         []ToolSpec
	// MaxTokens caps the output; zero lets the provider choose.
	MaxTokens int
	Thinking  ThinkingLevel
	// SessionID lets providers with a per-session cache (the local runner)
	// find their state. Informative only.
	SessionID string
}

// EventType names a stream event.
type EventType string

// Stream event types (docs/design.md §3.6).
const (
	EventTextDelta     EventType = "text_delta"
	EventThinkingDelta EventType = "thinking_delta"
	EventToolCall      EventType = "tool_call"
	EventMessageEnd    EventType = "message_end"
	EventError         EventType = "error"
)

// Event is one step of a streamed model reply. A provider emits deltas, one
// EventToolCall per complete call, then exactly one EventMessageEnd carrying
// the stop reason and usage.
type Event struct {
	Type       EventType  `json:"type"`
	Text       string     `json:"text,omitempty"`
	ToolCall   *ToolCall  `json:"toolCall,omitempty"`
	StopReason StopReason `json:"stopReason,omitempty"`
	Usage      *Usage     `json:"usage,omitempty"`
	// Signature, on a thinking_delta, is the provider's signature of the
	// thinking block so far (Anthropic): it must be sent back with the block.
	Signature string `json:"signature,omitempty"`
	Err       error  `json:"-"`
}

// ErrorKind classifies a model failure; failover acts on it (docs/design.md §7).
type ErrorKind string

// Error kinds.
const (
	ErrAuth            ErrorKind = "auth"             // 401/403, bad key: rotate auth profile
	ErrBilling         ErrorKind = "billing"          // 402, quota: cooldown + next model
	ErrRateLimit       ErrorKind = "rate_limit"       // 429: next model now
	ErrContextOverflow ErrorKind = "context_overflow" // prompt too long: compact + retry
	ErrTimeout         ErrorKind = "timeout"          // retry same model once
	ErrUnreachable     ErrorKind = "unreachable"      // connection refused, DNS, 5xx: next model
	ErrImageTooLarge   ErrorKind = "image_too_large"  // tell the user
	ErrBadRequest      ErrorKind = "bad_request"      // our request was wrong: not retried
	ErrAborted         ErrorKind = "aborted"          // /stop or shutdown
	ErrNoModel         ErrorKind = "no_model"         // nothing configured
	ErrInternal        ErrorKind = "internal"
)

// ModelError is a classified model failure.
type ModelError struct {
	Kind     ErrorKind
	Provider string
	Model    string
	Status   int    // HTTP status, if any
	Message  string // safe to show to the user
	Err      error
}

func (e *ModelError) Error() string {
	var b strings.Builder
	if e.Provider != "" {
		b.WriteString(e.Provider)
		if e.Model != "" {
			b.WriteString("/" + e.Model)
		}
		b.WriteString(": ")
	}
	b.WriteString(string(e.Kind))
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	} else if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

func (e *ModelError) Unwrap() error { return e.Err }

// KindOf returns the ErrorKind of err: the kind of a wrapped *ModelError,
// ErrAborted for context cancellation, ErrTimeout for a deadline, else
// ErrInternal.
func KindOf(err error) ErrorKind {
	var me *ModelError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &me):
		return me.Kind
	case errors.Is(err, errCanceled):
		return ErrAborted
	case isTimeout(err):
		return ErrTimeout
	}
	return ErrInternal
}

// ChatType is the kind of conversation a message came from.
type ChatType string

// Chat types.
const (
	ChatDirect  ChatType = "direct"
	ChatGroup   ChatType = "group"
	ChatChannel ChatType = "channel"
	ChatRoom    ChatType = "room"
)

// Inbound is one normalized inbound message from any channel (docs/design.md §3.1).
type Inbound struct {
	Channel    string   `json:"channel"`
	Account    string   `json:"account,omitempty"`
	ChatID     string   `json:"chatId,omitempty"`
	ChatType   ChatType `json:"chatType"`
	SenderID   string   `json:"senderId,omitempty"`
	SenderName string   `json:"senderName,omitempty"`
	MessageID  string   `json:"messageId,omitempty"`
	Text       string   `json:"text"`
	ReplyTo    string   `json:"replyTo,omitempty"`
	Quoted     string   `json:"quoted,omitempty"`
	Mentions   []string `json:"mentions,omitempty"`
	// Mentioned: the platform says the message mentions the assistant (a
	// WhatsApp @mention of its own number, a reply to its message).
	Mentioned bool `json:"mentioned,omitempty"`
	// Thread is adapter data handed back on the reply (channel.Outbound):
	// e.g. an email thread's subject and References. Opaque elsewhere.
	Thread string `json:"thread,omitempty"`
	// Topic is a thread of a group that keeps its own session (a
	// Telegram forum topic's id): routing appends ":topic:<Topic>" to the
	// group's key. Empty elsewhere.
	Topic string `json:"topic,omitempty"`
	// SenderUsername is the sender's public handle where the platform
	// has one apart from its id (Telegram's @username, without the "@"):
	// allowFrom entries "@name" match it. It never makes an owner
	// (usernames change hands); owners are listed by id.
	SenderUsername string `json:"senderUsername,omitempty"`
	// Button: Text is the command of an inline button the sender pressed
	// (channel.Outbound.Buttons), not words they typed. Only an owner's
	// press does anything; anyone else's is dropped without a word.
	Button    bool      `json:"button,omitempty"`
	Media     []Media   `json:"media,omitempty"`
	Timestamp time.Time `json:"timestamp"`
}

// Button is one inline button under a message the gateway sends (an
// approval, a pairing request): its label and the slash command a press
// sends back ("/approve 3f2a"; at most 64 bytes, Telegram's callback data).
type Button struct {
	Text    string `json:"text"`
	Command string `json:"command"`
}

// DedupKey is the per-channel key that identifies a delivery of m, e.g.
// "whatsapp:<msgid>". Empty when the channel gave no message id.
func (m *Inbound) DedupKey() string {
	if m.MessageID == "" {
		return ""
	}
	return m.Channel + ":" + m.MessageID
}

// Media is an attachment: a local path or a URL.
type Media struct {
	Path     string `json:"path,omitempty"`
	URL      string `json:"url,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
}

// SessionKey names a conversation container, e.g. "agent:main:main",
// "agent:main:whatsapp:group:<id>", "cron:<jobId>" (docs/design.md §3.3).
type SessionKey string

// AgentSessionKey returns "agent:<agentID>:<rest>".
func AgentSessionKey(agentID, rest string) SessionKey {
	return SessionKey("agent:" + agentID + ":" + rest)
}

// AgentID returns the agent named by an "agent:<id>:…" key, or "".
func (k SessionKey) AgentID() string {
	rest, ok := strings.CutPrefix(string(k), "agent:")
	if !ok {
		return ""
	}
	id, _, ok := strings.Cut(rest, ":")
	if !ok {
		return ""
	}
	return id
}

// Valid reports whether k is well formed: non-empty, printable, no spaces,
// at most 512 bytes, and if it starts with "agent:" it names an agent and a
// rest.
func (k SessionKey) Valid() error {
	s := string(k)
	if s == "" {
		return errors.New("session key is empty")
	}
	if len(s) > 512 {
		return errors.New("session key is longer than 512 bytes")
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("session key %q contains a space or control character", s)
		}
	}
	if strings.HasPrefix(s, "agent:") {
		rest := strings.TrimPrefix(s, "agent:")
		id, tail, ok := strings.Cut(rest, ":")
		if !ok || id == "" || tail == "" {
			return fmt.Errorf("session key %q: want agent:<agentId>:<name>", s)
		}
	}
	return nil
}

func (k SessionKey) String() string { return string(k) }

// Records is a store of small JSON records in named buckets with
// multi-record transactions (bbolt in the appliance): pairing requests, the
// outbox, channel cursors. Packages own their bucket names.
type Records interface {
	// UpdateRecords runs fn in one read-write transaction; an error from
	// fn writes nothing.
	UpdateRecords(fn func(RecordTx) error) error
	// ViewRecords runs fn in one read-only transaction.
	ViewRecords(fn func(RecordTx) error) error
}

// RecordTx is one transaction of Records; valid only inside its function.
type RecordTx interface {
	// Get decodes bucket/key into v; false when there is none.
	Get(bucket, key string, v any) (bool, error)
	// Put stores v as JSON at bucket/key.
	Put(bucket, key string, v any) error
	// Delete removes bucket/key; a missing one is no error.
	Delete(bucket, key string) error
	// ForEach calls fn for each record whose key starts with prefix, in
	// key order; fn must not keep raw nor write to the bucket.
	ForEach(bucket, prefix string, fn func(key string, raw []byte) error) error
}
