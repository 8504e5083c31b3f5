package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/openclaw-edge/edge/engine/tool/exec/sandbox"

	"github.com/openclaw-edge/edge/cli/command"
	climigrate "github.com/openclaw-edge/edge/cli/migrate"
	"github.com/openclaw-edge/edge/engine/api/client"
	membleve "github.com/openclaw-edge/edge/engine/memory/bleve"
	"github.com/openclaw-edge/edge/engine/memory/bleveproc"
	"github.com/openclaw-edge/edge/models/openai/openaitest"
)

// TestMain makes this test binary double as the real binaries: scripts run
// `openclaw-gateway` and `openclaw` (and, through `openclaw migrate`,
// openclaw-migrate) as separate processes, so SIGKILL in a script kills a
// real gateway process.
// whatsappChild is openclaw-whatsapp's main in this test binary (set by
// channel_whatsapp_test.go where WhatsApp is built in).
var whatsappChild func()

func TestMain(m *testing.M) {
	// The gateway starts every exec child through `<its binary> sandbox …`.
	// (Local models run in openclaw-runner, a binary of its own: see
	// runner_test.go.)
	if len(os.Args) > 1 && os.Args[1] == "sandbox" {
		os.Exit(execute(os.Args[1:]))
	}
	cmds := command.TestscriptCommands()
	// `openclaw migrate …` becomes openclaw-migrate, found beside openclaw.
	cmds[command.MigrateBinary] = func() { os.Exit(climigrate.Main()) }
	cmds["openclaw-gateway"] = func() { os.Exit(execute(os.Args[1:])) }
	// The memory keyword index's child (engine/memory/bleveproc) is this
	// test binary too, under its name: what appliance/memindex runs.
	cmds[bleveproc.BinaryName] = func() {
		if err := membleve.Serve(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if whatsappChild != nil {
		cmds["openclaw-whatsapp"] = whatsappChild
	}
	if _, ok := cmds[filepath.Base(os.Args[0])]; !ok { // the test run itself
		dir, err := os.MkdirTemp("", "ocrun")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		runnerDir = dir
		if exe, err := os.Executable(); err == nil && os.Getenv(bleveproc.BinaryEnv) == "" {
			link := filepath.Join(dir, bleveproc.BinaryName)
			if os.Symlink(exe, link) == nil {
				os.Setenv(bleveproc.BinaryEnv, link)
			}
			if wa := filepath.Join(dir, "openclaw-whatsapp"); os.Getenv(whatsappEnv) == "" && os.Symlink(exe, wa) == nil {
				os.Setenv(whatsappEnv, wa)
			}
		}
	}
	testscript.Main(cleanupM{m}, cmds)
}

// TestScripts runs testdata/script/*.txtar end to end: real gateway, real
// CLI, real bbolt files, a loopback model server speaking OpenAI's wire
// format. A script's fake-replies.json (an array of openaitest.Reply) scripts
// the model; after it runs out the model echoes. $FAKE_URL is the model's
// base URL, $OPENCLAW_SOCKET a short socket path.
func TestScripts(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			var replies []openaitest.Reply
			if data, err := os.ReadFile(filepath.Join(env.WorkDir, "fake-replies.json")); err == nil {
				if err := json.Unmarshal(data, &replies); err != nil {
					return fmt.Errorf("fake-replies.json: %w", err)
				}
			}
			srv := openaitest.NewServer(replies...)
			env.Defer(srv.Close)
			env.Values[fakeServerKey{}] = srv
			env.Setenv("FAKE_URL", srv.URL)
			sockDir, err := os.MkdirTemp("", "oc")
			if err != nil {
				return err
			}
			env.Defer(func() { os.RemoveAll(sockDir) })
			env.Setenv("OPENCLAW_SOCKET", filepath.Join(sockDir, "gw.sock"))
			env.Setenv("OPENCLAW_STATE_DIR", filepath.Join(env.WorkDir, "state"))
			shared, err := filepath.Abs("../../shared/models")
			if err != nil {
				return err
			}
			env.Setenv("SHARED_MODELS", shared)
			env.Setenv("HOME", env.WorkDir)
			// Local models: the openclaw-runner that [llamacpp] builds.
			env.Setenv("OPENCLAW_RUNNER", runnerPath())
			// A -race binary sleeps 1 s at exit by default.
			env.Setenv("GORACE", "atexit_sleep_ms=0")
			return nil
		},
		// [llamacpp]: a real openclaw-runner is available ($OPENCLAW_RUNNER
		// of the scripts; built once on first use, see runner_test.go).
		Condition: func(cond string) (bool, error) {
			if cond == "llamacpp" {
				if why := buildRunner(); why != "" {
					fmt.Fprintln(os.Stderr, "[llamacpp] is false:", why)
					return false, nil
				}
				return true, nil
			}
			if cond == "long" {
				// The 30-turn conversations: make test-conversation.
				return os.Getenv("OPENCLAW_LONG_TESTS") == "1", nil
			}
			if cond == "landlock" {
				active, _ := sandbox.New(sandbox.Config{Helper: []string{"openclaw-gateway", "sandbox"}}).Status()
				return active, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitgw":   cmdWaitGateway,
			"jsonleq":  cmdJSONLinesEqual,
			"waitreqs": cmdWaitRequests,
			"waitmem":  cmdWaitMemorySync,
		},
	})
}

// cmdWaitGateway waits until the gateway on $OPENCLAW_SOCKET answers.
func cmdWaitGateway(ts *testscript.TestScript, neg bool, args []string) {
	c := client.New(ts.Getenv("OPENCLAW_SOCKET"))
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := c.Status(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("gateway did not come up: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cmdWaitMemorySync waits until the default agent's memory index has
// finished a sync: the gateway's first sync runs in the background after
// READY, so a status read at once may still show an empty index.
func cmdWaitMemorySync(ts *testscript.TestScript, neg bool, args []string) {
	c := client.New(ts.Getenv("OPENCLAW_SOCKET"))
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := c.MemoryStatus(ctx, "")
		cancel()
		if err == nil && !st.LastSync.IsZero() {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("the memory index did not finish its first sync: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type fakeServerKey struct{}

// cmdWaitRequests waits until the fake model has received N requests.
func cmdWaitRequests(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: waitreqs N")
	}
	var n int
	if _, err := fmt.Sscan(args[0], &n); err != nil {
		ts.Fatalf("waitreqs: %v", err)
	}
	srv := ts.Value(fakeServerKey{}).(*openaitest.Server)
	deadline := time.Now().Add(60 * time.Second)
	for len(srv.Requests()) < n {
		if time.Now().After(deadline) {
			ts.Fatalf("the model got %d requests, want %d", len(srv.Requests()), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cmdJSONLinesEqual compares two JSONL files line by line as JSON values
// (key order and spacing do not matter).
func cmdJSONLinesEqual(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: jsonleq a.jsonl b.jsonl")
	}
	read := func(name string) []any {
		data := ts.ReadFile(name)
		var out []any
		sc := bufio.NewScanner(strings.NewReader(data))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			var v any
			if err := json.Unmarshal(line, &v); err != nil {
				ts.Fatalf("%s: %v", name, err)
			}
			out = append(out, v)
		}
		return out
	}
	a, b := read(args[0]), read(args[1])
	equal := len(a) == len(b)
	for i := 0; equal && i < len(a); i++ {
		if !reflect.DeepEqual(a[i], b[i]) {
			ja, _ := json.Marshal(a[i])
			jb, _ := json.Marshal(b[i])
			ts.Logf("line %d differs:\n%s\n%s", i+1, ja, jb)
			equal = false
		}
	}
	if len(a) != len(b) {
		ts.Logf("%s has %d lines, %s has %d", args[0], len(a), args[1], len(b))
	}
	if equal == neg {
		ts.Fatalf("jsonleq %s %s: equal=%v", args[0], args[1], equal)
	}
}
