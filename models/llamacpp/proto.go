package llamacpp

// The runner protocol: newline-delimited JSON over the runner process's
// stdin (requests) and stdout (replies); stderr carries llama.cpp's log.
// One request runs at a time — a Pi has one model's worth of memory
// bandwidth — and Cancel stops the running one. A reply names the request
// it answers by ID.

// Request is one line the gateway writes to a runner.
type Request struct {
	Op Op    `json:"op"`
	ID int64 `json:"id"`

	// complete
	Session     string  `json:"session,omitempty"` // prefix-cache key
	Prompt      string  `json:"prompt,omitempty"`  // rendered chat template
	MaxTokens   int     `json:"maxTokens,omitempty"`
	Temperature float32 `json:"temperature,omitempty"`
	TopK        int     `json:"topK,omitempty"`
	TopP        float32 `json:"topP,omitempty"`
	MinP        float32 `json:"minP,omitempty"`
	// RepeatPenalty penalises tokens repeated in the last 64; 0 or 1: off.
	RepeatPenalty float32 `json:"repeatPenalty,omitempty"`
	Seed          uint32  `json:"seed,omitempty"`
	Grammar       string  `json:"grammar,omitempty"` // GBNF constraining the sampler
	// JSONSchema, when set, constrains the output to JSON matching it (the
	// runner compiles it to a grammar; Grammar is then ignored).
	JSONSchema string   `json:"jsonSchema,omitempty"`
	Stop       []string `json:"stop,omitempty"` // stop strings (not included in the output)
	// IgnoreEOS generates through end-of-generation tokens up to
	// MaxTokens (benchmarks, like llama.cpp's --ignore-eos).
	IgnoreEOS bool `json:"ignoreEos,omitempty"`

	// embed
	Texts []string `json:"texts,omitempty"`

	// tokenize
	Text string `json:"text,omitempty"`
}

// Op names a runner operation.
type Op string

// Runner operations.
const (
	OpComplete Op = "complete"
	OpEmbed    Op = "embed"
	OpTokenize Op = "tokenize"
	// OpCached asks how many of Prompt's tokens Session's cache slot
	// holds (ReplyCached: Usage.Prompt and Usage.Cached); nothing is run.
	OpCached Op = "cached"
	OpCancel Op = "cancel" // ID names the request to stop
)

// Reply is one line a runner writes.
type Reply struct {
	Type ReplyType `json:"type"`
	ID   int64     `json:"id,omitempty"`

	Text    string      `json:"text,omitempty"`    // piece: generated text
	Stop    StopCause   `json:"stop,omitempty"`    // done: why generation ended
	Usage   *RunUsage   `json:"usage,omitempty"`   // done, embeddings
	Vectors [][]float32 `json:"vectors,omitempty"` // embeddings: L2-normalised
	Tokens  []int       `json:"tokens,omitempty"`  // tokens
	Error   string      `json:"error,omitempty"`   // error
	Info    *ModelInfo  `json:"info,omitempty"`    // ready
}

// ReplyType names a runner reply.
type ReplyType string

// Reply types.
const (
	ReplyReady      ReplyType = "ready" // first line: the model is loaded
	ReplyPiece      ReplyType = "piece"
	ReplyDone       ReplyType = "done"
	ReplyEmbeddings ReplyType = "embeddings"
	ReplyTokens     ReplyType = "tokens"
	ReplyCached     ReplyType = "cached"
	ReplyError      ReplyType = "error"
)

// StopCause says why a completion ended.
type StopCause string

// Stop causes.
const (
	StopEOS       StopCause = "eos"       // the model ended its turn
	StopLength    StopCause = "length"    // maxTokens reached
	StopContext   StopCause = "context"   // the session's context is full
	StopString    StopCause = "stop"      // a stop string matched (Matched says which)
	StopCancelled StopCause = "cancelled" // OpCancel
)

// RunUsage counts the tokens of one request. Prompt = Cached + Processed.
type RunUsage struct {
	Prompt    int `json:"prompt"`
	Cached    int `json:"cached"`    // prompt tokens whose KV cache was reused
	Processed int `json:"processed"` // prompt tokens decoded now
	Generated int `json:"generated"`
	// Durations in milliseconds: prompt processing, generation.
	PromptMS   float64 `json:"promptMs"`
	GenerateMS float64 `json:"generateMs"`
	// SampleMS is the part of GenerateMS spent choosing tokens (the
	// sampler chain, grammar included), the rest being llama.cpp's decode
	// and the runner's own work.
	SampleMS float64 `json:"sampleMs,omitempty"`
	// Matched is the stop string that ended the completion (StopString).
	Matched string `json:"matched,omitempty"`
	// SlotTokens is what each session slot's KV cache holds after the
	// request, in tokens (complete).
	SlotTokens []int `json:"slotTokens,omitempty"`
}

// ModelInfo describes the loaded model (the ready line).
type ModelInfo struct {
	Path       string `json:"path"`
	ContextLen int    `json:"contextLen"` // tokens per session slot
	Slots      int    `json:"slots"`      // sessions whose KV cache is kept
	NEmbd      int    `json:"nEmbd"`
	NVocab     int    `json:"nVocab"`
	Threads    int    `json:"threads"`
	LoadMS     int64  `json:"loadMs"`
	// RestoredSlots is how many sessions' KV caches were read back from
	// the runner's --kv-dir at load; SlotTokens what each slot holds then.
	RestoredSlots int   `json:"restoredSlots,omitempty"`
	SlotTokens    []int `json:"slotTokens,omitempty"`
	// Variant is the CPU variant the runner was built for (Variants);
	// "" from a build that does not say (go build by hand).
	Variant string `json:"variant,omitempty"`
	// CPUFeatures are the instruction sets llama.cpp's CPU backend was
	// compiled to use, as ggml reports them ("AVX2 FMA F16C …").
	CPUFeatures string `json:"cpuFeatures,omitempty"`
}
