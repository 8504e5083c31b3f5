// Command ggufshape writes GGUF files with the exact shape of real catalog
// models and random weights (gguftest.WriteShape), so benchmarks measure
// real-size speed without downloading the models:
//
//	go run ./models/gguf/gguftest/cmd/ggufshape [-dir DIR] [-seed N] NAME...
//
// NAME is a catalog name with or without the "-shape" suffix
// (qwen3-0.6b, qwen3-1.7b-shape, llama-3.2-1b-instruct). Each file is
// written once to DIR/<name>-shape.gguf (default: openclaw-edge/shapes in
// the user's cache directory, $XDG_CACHE_HOME or ~/.cache) and reused after;
// the paths are printed, one per line, in the order given (`make bench-local
// MODEL=qwen3-1.7b-shape` reads them).
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/openclaw-edge/edge/models/gguf/gguftest"
)

func main() { os.Exit(run()) }

func run() int {
	dir := flag.String("dir", "", "where the files are kept (default: openclaw-edge/shapes in the user's cache directory)")
	seed := flag.Uint64("seed", 1, "seed of the random weights (a file already there is reused whatever its seed)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: ggufshape [-dir DIR] [-seed N] NAME...\nnames: %s (with or without -shape)\n", strings.Join(gguftest.ShapeNames(), ", "))
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		return 2
	}
	// Check every name before writing anything: a typo in the second name
	// should not cost the first one's gigabyte.
	for _, name := range flag.Args() {
		if _, ok := gguftest.LookupShape(name); !ok {
			fmt.Fprintf(os.Stderr, "ggufshape: no shape %q (known: %s)\n", name, strings.Join(gguftest.ShapeNames(), ", "))
			return 2
		}
	}
	if *dir == "" {
		d, err := gguftest.DefaultShapeDir()
		if err != nil {
			fmt.Fprintln(os.Stderr, "ggufshape:", err)
			return 1
		}
		*dir = d
	}
	for _, name := range flag.Args() {
		path, err := gguftest.WriteShape(name, *dir, *seed)
		if err != nil {
			fmt.Fprintln(os.Stderr, "ggufshape:", err)
			return 1
		}
		fmt.Println(path)
	}
	return 0
}
