// Command openclaw is the companion CLI of the OpenClaw Edge gateway; the
// command tree lives in cli/command.
package main

import (
	"os"

	"github.com/openclaw-edge/edge/cli/command"
)

// version is set by the Makefile through -ldflags "-X main.version=…", the
// same string the gateway gets, so `openclaw --version` and the gateway's
// version in `openclaw status` match.
var version string

func main() {
	if version != "" {
		command.Version = version
	}
	os.Exit(command.Main())
}
