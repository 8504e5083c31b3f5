// Command openclaw-whatsapp is the WhatsApp channel (engine/channel/whatsapp,
// go.mau.fi/whatsmeow and its SQLite device store) in a process of its own.
// The gateway starts it for each configured WhatsApp account and speaks
// engine/channel/channelproc's protocol with it on stdin and stdout, so a
// gateway without WhatsApp configured never loads WhatsApp's code (its
// package inits and memory: docs/benchmarks.md), and a WhatsApp crash takes
// down the channel only.
//
// It is not meant to be run by hand.
package main

import (
	"fmt"
	"os"

	"github.com/openclaw-edge/edge/engine/channel/whatsapp"
)

var version = "dev"

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "--version", "version":
			fmt.Println("openclaw-whatsapp", version)
			return
		default:
			fmt.Fprintln(os.Stderr, "openclaw-whatsapp: the gateway starts this program itself for channels.whatsapp; it takes no arguments")
			os.Exit(2)
		}
	}
	// Stdout is the protocol: a library's stray print goes to stderr.
	proto := os.Stdout
	os.Stdout = os.Stderr
	if err := whatsapp.ServeChild(os.Stdin, proto); err != nil {
		fmt.Fprintln(os.Stderr, "openclaw-whatsapp:", err)
		os.Exit(1)
	}
}
