// Package openclawdir reads a real OpenClaw (2026.9) state dir — by
// default ~/.openclaw — for `openclaw migrate openclaw`. It only reads.
package openclawdir
