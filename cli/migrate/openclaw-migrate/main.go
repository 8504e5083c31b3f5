// Command openclaw-migrate is `openclaw migrate` in a program of its own.
// Reading an OpenClaw state dir takes modernc.org/sqlite and
// klauspost/compress/zstd (cli/openclawdir); linked into openclaw, their
// size and package inits slowed every command's start (`openclaw status`
// 22.1 ms against 19.5 ms without them, `openclaw --version` 17.6 against
// 14.5 ms) for the sake of one command run once per install.
//
// openclaw's `migrate` becomes this program (syscall.Exec) with the same
// command line and environment; it runs openclaw's command tree with the
// real migrate built in (cli/migrate), so `openclaw migrate openclaw
// --apply` behaves as it did when openclaw held it. By hand, give it an
// openclaw command line: `openclaw-migrate migrate openclaw --help`.
// openclaw looks for it in $OPENCLAW_MIGRATE, beside its own executable,
// then on $PATH: `make build` writes both to bin/, the image installs both
// in /usr/bin.
package main

import (
	"os"

	"github.com/openclaw-edge/edge/cli/command"
	"github.com/openclaw-edge/edge/cli/migrate"
)

// version is set by the Makefile through -ldflags "-X main.version=…", as
// for openclaw.
var version string

func main() {
	if version != "" {
		command.Version = version
	}
	os.Exit(migrate.Main())
}
