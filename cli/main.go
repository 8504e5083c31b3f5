// Command openclaw is the companion CLI of the OpenClaw Edge gateway; the
// command tree lives in cli/command.
package main

import (
	"os"

	"github.com/openclaw-edge/edge/cli/command"
)

func main() { os.Exit(command.Main()) }
