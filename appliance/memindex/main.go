// Command openclaw-memindex is the memory keyword index (bleve) in a
// process of its own: the gateway starts it when memory search or a sync
// needs the index and lets it go when idle (engine/memory/bleveproc), so
// bleve's start-up and memory are paid only while it is used.
//
// It speaks engine/memory/bleveproc's protocol on stdin and stdout and is
// not meant to be run by hand.
package main

import (
	"fmt"
	"os"

	membleve "github.com/openclaw-edge/edge/engine/memory/bleve"
)

var version = "dev"

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "--version", "version":
			fmt.Println("openclaw-memindex", version)
			return
		default:
			fmt.Fprintln(os.Stderr, "openclaw-memindex: the gateway starts this program itself; it takes no arguments")
			os.Exit(2)
		}
	}
	// Stdout is the protocol: a library's stray print goes to stderr.
	proto := os.Stdout
	os.Stdout = os.Stderr
	if err := membleve.Serve(os.Stdin, proto); err != nil {
		fmt.Fprintln(os.Stderr, "openclaw-memindex:", err)
		os.Exit(1)
	}
}
