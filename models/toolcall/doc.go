// Package toolcall is tool calling for local models: the dialect a model
// calls tools in (Family), the system-prompt section that teaches tool calling
// to a model whose chat template has none (ToolsSystemPrompt), the parser that
// turns model output into visible text and engine.ToolCall values, batch
// (Parse) or streamed (Parser), and JSON Schemas a grammar compiler can use to
// constrain the sampler (CallSchema, SimplifySchema). Rendering chat templates
// is models/chattemplate.
//
// Choices made where the spec is silent:
//   - One scanner serves every family; the family only adds its own markers
//     (<|tool_call|> for Granite, <|python_tag|> for Llama 3). <tool_call>
//     blocks, ```json fences holding only calls, and a bare JSON call object
//     at the start of the output (or right after a call) are accepted from any
//     model, because small models drift between these forms.
//   - Broken markup is never shown to the user: a call cut off by the token
//     limit, or markup that holds no valid call, is dropped and reported as an
//     error (ErrTruncated, ErrMalformed) next to the text and the good calls.
//     An unterminated <tool_call> whose JSON is complete is recovered.
//   - Whitespace before call markup is dropped with it, whitespace after it
//     is kept only between visible text: "Let me check.\n<tool_call>…" shows
//     "Let me check." and "A <tool_call>…</tool_call> B" shows "A B".
//   - JSON is read leniently (single quotes, unquoted keys, trailing commas,
//     True/False/None) and re-encoded compact with key order kept; arguments
//     given as a JSON string are decoded; missing arguments are {}.
//   - Call ids are call_1, call_2… per reply; callers that need ids unique
//     across a session rewrite them.
//   - Schema simplification removes a too-large maxLength/maxItems instead of
//     clamping it: a clamped bound would make the grammar reject values the
//     tool accepts.
package toolcall
