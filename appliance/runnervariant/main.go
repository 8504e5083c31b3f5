// Command runnervariant tells the Makefile which CPU variants of
// openclaw-runner exist and how each is compiled (models/llamacpp.Variants),
// so the flags live in one place, beside the code that picks a variant at
// run time.
//
//	runnervariant host            the best variant for this CPU: "NAME CFLAGS"
//	runnervariant flags NAME      the cgo C/C++ flags of NAME
//	runnervariant list [GOARCH]   the variants of GOARCH (default: this one), best first
//	runnervariant cpu             the CPU features the gateway sees here
//
// CFLAGS always start with "-O3 -DNDEBUG -g" (llama.cpp's release flags,
// not Go's default "-O2 -g"): a plain `go build` of the runner therefore
// compiles llama.cpp once more, and slower; use `make build`.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/openclaw-edge/edge/models/llamacpp"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "runnervariant:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: runnervariant host | flags NAME | list [GOARCH] | cpu")
	}
	switch args[0] {
	case "host":
		v, ok := llamacpp.HostVariant()
		if !ok {
			return fmt.Errorf("no runner variants for %s", runtime.GOARCH)
		}
		fmt.Println(v.Name, v.CgoFlags())
	case "flags":
		if len(args) != 2 {
			return fmt.Errorf("usage: runnervariant flags NAME")
		}
		v, ok := llamacpp.VariantByName(args[1])
		if !ok {
			return fmt.Errorf("no variant %q", args[1])
		}
		fmt.Println(v.CgoFlags())
	case "list":
		arch := runtime.GOARCH
		if len(args) > 1 {
			arch = args[1]
		}
		var names []string
		for _, v := range llamacpp.VariantsFor(arch) {
			names = append(names, v.Name)
		}
		if len(names) == 0 {
			return fmt.Errorf("no runner variants for %s", arch)
		}
		fmt.Println(strings.Join(names, " "))
	case "cpu":
		fmt.Println(strings.Join(llamacpp.CPUFeatures(), " "))
	default:
		return fmt.Errorf("unknown command %q", args[0])
	}
	return nil
}
