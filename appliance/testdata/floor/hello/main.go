// Command hello is BenchmarkBox's floor for a Go program's start: what
// `--version` of any Go binary costs on this machine.
package main

import "os"

func main() { _, _ = os.Stdout.WriteString("hello\n") }
