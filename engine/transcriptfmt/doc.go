// Package transcriptfmt is the part of the OpenClaw transcript format (the
// pi-coding-agent session JSONL that engine/transcript reads and writes)
// which the CLI's reader of OpenClaw state dirs (cli/openclawdir) shares
// with the engine: the session header line, the session id rules, the line
// bound, and the JSON object codec every line uses (known fields first, in
// a fixed order; unknown ones kept as they were read). It imports only the
// standard library, so the CLI links it without the entry tree, the model
// context or the vocabulary.
package transcriptfmt
