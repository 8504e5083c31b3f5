// Command openclaw-gateway is the OpenClaw Edge appliance daemon: the single
// process that owns all state (sessions, transcripts, tools, models) and
// serves the control API the openclaw CLI talks to.
//
//	openclaw-gateway run [--config F] [--state-dir D] [--socket P]
//
// Everything is wired in one place, the Main struct (main_struct.go), so
// end-to-end tests build the whole gateway in-process.
package main

import "os"

func main() { os.Exit(execute(os.Args[1:])) }
