package llamacpp_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/models/llamacpp"
	"github.com/openclaw-edge/edge/models/llamacpp/runner"
)

// TestMain lets the test binary act as a runner process: the real one
// (llama.cpp), or a fake engine for supervisor tests without a model.
func TestMain(m *testing.M) {
	switch os.Getenv("LLAMACPP_TEST_RUNNER") {
	case "real":
		os.Exit(runner.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	case "crash":
		// Dies while "loading", as an out-of-memory kill would.
		fmt.Fprintln(os.Stderr, "ggml: out of memory")
		os.Exit(3)
	case "toolcaller":
		if err := runner.Serve(toolEngine{}, os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	case "findrunner":
		// Prints what FindRunner finds from this executable's location.
		path, err := llamacpp.FindRunner()
		fmt.Println(path)
		if err != nil {
			fmt.Println(err)
		}
		os.Exit(0)
	case "sampler":
		if err := runner.Serve(samplerEngine{}, os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	case "fake":
		if err := runner.Serve(slowEngine{}, os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	for _, f := range afterTests {
		f()
	}
	os.Exit(code)
}

// afterTests run when the test binary's tests are done (removing files
// shared between tests, such as the big-vocabulary model).
var afterTests []func()

func testCommand(kind string) func(args ...string) *exec.Cmd {
	return func(args ...string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "LLAMACPP_TEST_RUNNER="+kind)
		return cmd
	}
}

// slowEngine writes a word every 5 ms for up to 10 s.
type slowEngine struct{}

func (slowEngine) Info() llamacpp.ModelInfo         { return llamacpp.ModelInfo{Path: "fake", Slots: 1} }
func (slowEngine) Close()                           {}
func (slowEngine) Tokenize(s string) ([]int, error) { return []int{len(s)}, nil }
func (slowEngine) Embed(context.Context, []string) ([][]float32, int, error) {
	return nil, 0, fmt.Errorf("no")
}
func (slowEngine) Complete(ctx context.Context, req *llamacpp.Request, piece func(string)) (llamacpp.StopCause, llamacpp.RunUsage, error) {
	if strings.Contains(req.Prompt, "quick") {
		piece("done")
		return llamacpp.StopEOS, llamacpp.RunUsage{Prompt: 3, Processed: 3, Generated: 1}, nil
	}
	for i := range 2000 {
		select {
		case <-ctx.Done():
			return llamacpp.StopCancelled, llamacpp.RunUsage{Generated: i}, nil
		case <-time.After(5 * time.Millisecond):
		}
		piece("word ")
	}
	return llamacpp.StopLength, llamacpp.RunUsage{Generated: 2000}, nil
}

// toolEngine plays a model that decides to call a tool: free text up to the
// call opener, a call under the JSON-schema constraint, then nothing more.
type toolEngine struct{ slowEngine }

func (toolEngine) Complete(_ context.Context, req *llamacpp.Request, piece func(string)) (llamacpp.StopCause, llamacpp.RunUsage, error) {
	switch {
	case req.JSONSchema != "":
		if !strings.Contains(req.JSONSchema, `"read"`) || !strings.HasSuffix(req.Prompt, "<tool_call>\n") {
			return "", llamacpp.RunUsage{}, fmt.Errorf("constrained phase got schema %q, prompt tail %q", req.JSONSchema, req.Prompt[max(0, len(req.Prompt)-20):])
		}
		piece(`{"name": "read", "arguments": {"path": "notes.md"}}`)
		return llamacpp.StopEOS, llamacpp.RunUsage{Prompt: 10, Cached: 9, Processed: 1, Generated: 12}, nil
	case strings.HasSuffix(req.Prompt, "</tool_call>\n"):
		return llamacpp.StopEOS, llamacpp.RunUsage{Prompt: 30, Cached: 29, Processed: 1}, nil
	case len(req.Stop) == 1 && req.Stop[0] == "<tool_call>":
		piece("Let me look. ")
		return llamacpp.StopString, llamacpp.RunUsage{Prompt: 8, Processed: 8, Generated: 4, Matched: "<tool_call>"}, nil
	}
	return "", llamacpp.RunUsage{}, fmt.Errorf("unexpected request %+v", req)
}
