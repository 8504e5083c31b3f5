package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	_ "time/tzdata" // the zones the tests name, whatever this machine has

	"github.com/openclaw-edge/edge/engine/api"
)

// onboardGateway is the fake gateway with a config that remembers:
// GET /v1/config answers from cfg (dotted keys, matched exactly), POST
// /v1/config/set stores the value and records the request. Everything
// else is the fake gateway's (models, pulls, uploads, messages).
type onboardGateway struct {
	*fakeGateway
	socket string

	mu           sync.Mutex
	cfg          map[string]string // key → JSON value
	sets         []string          // "key=value" (compact JSON), as asked
	restart      bool              // set results say restartNeeded
	refuse       string            // a key whose set is refused (invalid_config)
	forbidImport bool              // import answers forbidden (the gateway may not read the file)
	failGet      string            // a key whose read fails (500)
}

func startOnboardGateway(t *testing.T, cfg map[string]string, opts ...func(*onboardGateway)) *onboardGateway {
	t.Helper()
	g, err := startFakeGateway()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.close)
	og := &onboardGateway{fakeGateway: g, socket: filepath.Join(g.dir, "ob.sock"), cfg: map[string]string{}}
	for k, v := range cfg {
		og.cfg[k] = v
	}
	for _, o := range opts {
		o(og) // before the server starts: its goroutines see the settings
	}
	ln, err := net.Listen("unix", og.socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(og)
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return og
}

func (og *onboardGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method + " " + r.URL.Path {
	case "GET " + api.PathConfig:
		og.getConfig(w, r)
	case "POST " + api.PathConfigSet:
		og.setConfig(w, r)
	case "POST " + api.PathModelImport:
		if og.forbidImport {
			fakeJSON(w, 403, api.Error{Code: api.CodeForbidden, Message: "import: permission denied"})
			return
		}
		og.fakeGateway.ServeHTTP(w, r)
	default:
		og.fakeGateway.ServeHTTP(w, r)
	}
}

func (og *onboardGateway) getConfig(w http.ResponseWriter, r *http.Request) {
	og.mu.Lock()
	defer og.mu.Unlock()
	key := r.URL.Query().Get("key")
	if key == og.failGet {
		fakeJSON(w, 500, api.Error{Code: "internal", Message: "the config file does not load"})
		return
	}
	v, ok := og.cfg[key]
	if !ok {
		fakeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: "the config has no key " + key})
		return
	}
	fakeJSON(w, 200, api.ConfigValue{Key: key, Value: json.RawMessage(v), File: fakeConfigFile})
}

func (og *onboardGateway) setConfig(w http.ResponseWriter, r *http.Request) {
	og.mu.Lock()
	defer og.mu.Unlock()
	var req api.ConfigSetRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		fakeJSON(w, 400, api.Error{Code: api.CodeBadRequest, Message: err.Error()})
		return
	}
	if req.Key == og.refuse {
		fakeJSON(w, 422, api.Error{Code: api.CodeInvalidConfig, Message: fakeConfigFile + " was not changed: " + req.Key + ": refused"})
		return
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, req.Value); err != nil {
		fakeJSON(w, 400, api.Error{Code: api.CodeBadRequest, Message: err.Error()})
		return
	}
	og.sets = append(og.sets, req.Key+"="+compact.String())
	og.cfg[req.Key] = compact.String()
	res := api.ConfigSetResult{OK: true, File: fakeConfigFile, Key: req.Key, Value: req.Value, RestartNeeded: og.restart}
	if og.restart {
		res.RestartHow = "sudo systemctl restart openclaw-gateway"
	}
	fakeJSON(w, 200, res)
}

func (og *onboardGateway) recorded() []string {
	og.mu.Lock()
	defer og.mu.Unlock()
	return slices.Clone(og.sets)
}

// onboardEnv isolates a test from this machine: HOME, the gateway
// variables, the provider keys; the machine's zone is Europe/Madrid.
func onboardEnv(t *testing.T) {
	t.Helper()
	doctorEnv(t)
	t.Setenv("OPENCLAW_SEND_RETRIES", "0")
	t.Setenv("TZ", "Europe/Madrid")
	for _, v := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"} {
		t.Setenv(v, "")
	}
}

// runOnboard runs `openclaw --socket S onboard ARGS…` in-process.
func runOnboard(ctx context.Context, og *onboardGateway, stdin io.Reader, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(ctx, append([]string{"--socket", og.socket, "onboard"}, args...), stdin, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// asTerminal makes onboard ask its questions though stdin is a pipe.
func asTerminal(t *testing.T) {
	t.Helper()
	prev := onboardInteractive
	onboardInteractive = func(*app) bool { return true }
	t.Cleanup(func() { onboardInteractive = prev })
}

const ollamaProvider = `{"api":"ollama","baseUrl":"http://127.0.0.1:11434","models":[{"id":"llama3.2"}]}`

// TestOnboardNonInteractive: the flags decide; each step writes the keys
// the dashboard writes, adds to what is there and leaves alone what
// already says so; the test runs when nothing needs a restart.
func TestOnboardNonInteractive(t *testing.T) {
	onboardEnv(t)
	model := filepath.Join(t.TempDir(), "Tiny-Q8_0.gguf")
	must(t, os.WriteFile(model, []byte("GGUF\x03\x00\x00\x00tiny"), 0o644))
	notModel := filepath.Join(t.TempDir(), "notes.txt")
	must(t, os.WriteFile(notModel, []byte("hi"), 0o644))

	tests := []struct {
		name     string
		cfg      map[string]string
		restart  bool
		refuse   string
		noRunner string
		forbid   bool
		env      map[string]string
		args     []string
		code     int
		sets     []string // nil: none
		stdout   []string // substrings; "=…" the whole of it
		stderr   []string
		absent   []string // in neither stream
	}{
		{name: "ollama, owner, zone, then the test",
			args: []string{"--non-interactive", "--model", "ollama/llama3.2", "--owner", "whatsapp:+15551234567", "--timezone", "America/New_York", "--test-message", "hello"},
			sets: []string{
				"models.providers.ollama=" + ollamaProvider,
				`agents.defaults.model="ollama/llama3.2"`,
				`channels.whatsapp.allowFrom=["+15551234567"]`,
				`commands.ownerAllowFrom=["whatsapp:+15551234567"]`,
				`agents.defaults.userTimezone="America/New_York"`,
			},
			stdout: []string{"set models.providers.ollama = " + ollamaProvider + "\n", "set agents.defaults.model = \"ollama/llama3.2\"\n", "Hello, world!\n"},
			stderr: []string{"Sending \"hello\"…", "answered by local/qwen3-1.7b"}},
		{name: "adds to the lists; the zone defaults to this machine's",
			cfg: map[string]string{
				"channels.whatsapp.allowFrom": `["+19995550000"]`,
				"commands.ownerAllowFrom":     `["whatsapp:+19995550000","email:x@example.com"]`,
			},
			args: []string{"--model", "ollama/llama3.2", "--ollama-url", "http://192.168.1.20:11434", "--owner", "WhatsApp:+15551234567", "--skip-test"},
			sets: []string{
				`models.providers.ollama={"api":"ollama","baseUrl":"http://192.168.1.20:11434","models":[{"id":"llama3.2"}]}`,
				`agents.defaults.model="ollama/llama3.2"`,
				`channels.whatsapp.allowFrom=["+19995550000","+15551234567"]`,
				`commands.ownerAllowFrom=["whatsapp:+19995550000","email:x@example.com","whatsapp:+15551234567"]`,
				`agents.defaults.userTimezone="Europe/Madrid"`,
			}},
		{name: "what already says so is left alone",
			cfg: map[string]string{
				"models.providers.ollama":      ollamaProvider,
				"agents.defaults.model":        `"ollama/llama3.2"`,
				"channels.whatsapp.allowFrom":  `["+15551234567"]`,
				"commands.ownerAllowFrom":      `["whatsapp:+15551234567"]`,
				"agents.defaults.userTimezone": `"Asia/Tokyo"`,
			},
			args:   []string{"--model", "ollama/llama3.2", "--owner", "whatsapp:+15551234567", "--skip-test"},
			stdout: []string{"=nothing to change: the gateway's config already says so\n"},
			stderr: []string{"ollama/llama3.2 is already the default model", "whatsapp:+15551234567 is already an owner", "the time zone is already Asia/Tokyo"}},
		{name: "a remote provider: its key is written, never shown", restart: true,
			args: []string{"--provider", "openai", "--api-key", "sk-secret-1", "--owner", "email:me@example.com", "--skip-timezone"},
			sets: []string{
				`models.providers.openai={"api":"openai-completions","baseUrl":"https://api.openai.com/v1","models":[{"id":"gpt-4o-mini"}],"apiKey":"sk-secret-1"}`,
				`agents.defaults.model="openai/gpt-4o-mini"`,
				`channels.email.allowFrom=["me@example.com"]`,
				`commands.ownerAllowFrom=["email:me@example.com"]`,
			},
			stdout: []string{`set models.providers.openai = {"api":"openai-completions","baseUrl":"https://api.openai.com/v1","models":[{"id":"gpt-4o-mini"}],"apiKey":"[redacted]"}`,
				"restart the gateway to apply it (sudo systemctl restart openclaw-gateway), then send a test message: openclaw agent hello --socket "},
			absent: []string{"sk-secret-1", "Hello", "Sending"}},
		{name: "a provider already defined: the key replaced, the model added",
			cfg: map[string]string{
				"models.providers.anthropic":        `{"api":"anthropic-messages","baseUrl":"https://api.anthropic.com","apiKey":"[redacted]","models":[{"id":"claude-x","contextWindow":200000}]}`,
				"models.providers.anthropic.apiKey": `"[redacted]"`,
				"agents.defaults.model":             `{"primary":"local/qwen3-1.7b","fallbacks":["ollama/llama3.2"]}`,
			},
			args: []string{"--anthropic-api-key", "sk-ant-2", "--model", "claude-y", "--skip-owner", "--skip-timezone", "--skip-test"},
			sets: []string{
				`models.providers.anthropic.apiKey="sk-ant-2"`,
				`models.providers.anthropic.models=[{"id":"claude-x","contextWindow":200000},{"id":"claude-y"}]`,
				`agents.defaults.model.primary="anthropic/claude-y"`,
			},
			stdout: []string{`set models.providers.anthropic.apiKey = "[redacted]"`},
			absent: []string{"sk-ant-2"}},
		{name: "the key from the environment", env: map[string]string{"GEMINI_API_KEY": "g-env-key"},
			args: []string{"--auth-choice", "gemini-api-key", "--skip-owner", "--skip-timezone", "--skip-test"},
			sets: []string{
				`models.providers.gemini={"api":"gemini","baseUrl":"https://generativelanguage.googleapis.com/v1beta","models":[{"id":"gemini-2.5-flash"}],"apiKey":"g-env-key"}`,
				`agents.defaults.model="gemini/gemini-2.5-flash"`,
			},
			absent: []string{"g-env-key"}},
		{name: "the key the gateway has is kept",
			cfg:  map[string]string{"models.providers.openai": `{"api":"openai-completions","baseUrl":"https://api.openai.com/v1","apiKey":"[redacted]"}`, "models.providers.openai.apiKey": `"[redacted]"`},
			args: []string{"--model", "openai/gpt-4.1", "--skip-owner", "--skip-timezone", "--skip-test"},
			sets: []string{`agents.defaults.model="openai/gpt-4.1"`}},
		{name: "no key anywhere",
			args:   []string{"--model", "openai/gpt-4.1", "--skip-owner"},
			code:   2,
			stderr: []string{"openclaw: --api-key is required: the gateway has no key for openai (or set $OPENAI_API_KEY)\n"}},
		{name: "a catalog model is pulled",
			args:   []string{"--model", "qwen3-1.7b", "--skip-owner", "--skip-timezone", "--skip-test"},
			sets:   []string{`agents.defaults.model="local/qwen3-1.7b"`},
			stderr: []string{"pulling qwen3-1.7b: 100% (1.1 GB of 1.1 GB)\n", "pulled qwen3-1.7b (1.1 GB)\n"}},
		{name: "an embedding model is no chat model",
			args:   []string{"--model", "local/bge-small-en-v1.5", "--skip-owner", "--skip-timezone"},
			code:   1,
			stderr: []string{"openclaw: bge-small-en-v1.5 is an embedding model (for memory search), not a chat model\n"}},
		{name: "a gateway that cannot run local models downloads nothing", noRunner: "openclaw-runner is not installed",
			args:   []string{"--model", "qwen3-1.7b", "--skip-owner", "--skip-timezone"},
			code:   1,
			stderr: []string{"openclaw: this gateway cannot run local models (openclaw-runner is not installed): use an Ollama model or a remote provider\n"},
			absent: []string{"pulling"}},
		{name: "a file is imported",
			args:   []string{"--model", model, "--skip-owner", "--skip-timezone", "--skip-test"},
			sets:   []string{`agents.defaults.model="local/tiny-q8_0"`},
			stderr: []string{"imported tiny-q8_0 (12 B)\n"}},
		{name: "a file the gateway may not read is sent", forbid: true,
			args:   []string{"--model", model, "--skip-owner", "--skip-timezone", "--skip-test"},
			sets:   []string{`agents.defaults.model="local/tiny-q8_0"`},
			stderr: []string{"the gateway may not read " + model + ": sending it instead\n", "sending Tiny-Q8_0.gguf: 100%", "imported tiny-q8_0 (12 B)\n"}},
		{name: "a provider the config defines",
			cfg:  map[string]string{"models.providers.acme": `{"api":"openai-completions","baseUrl":"http://192.168.1.30:8080/v1"}`},
			args: []string{"--model", "acme/big", "--skip-owner", "--skip-timezone", "--skip-test"},
			sets: []string{`agents.defaults.model="acme/big"`}},
		{name: "a provider it does not",
			args:   []string{"--model", "acme/big", "--skip-owner"},
			code:   2,
			stderr: []string{"openclaw: --model acme/big: the gateway's config defines no provider acme"}},
		{name: "a failed test", args: []string{"--model", "ollama/llama3.2", "--skip-owner", "--skip-timezone", "--test-message", "fail"},
			code:   1,
			sets:   []string{"models.providers.ollama=" + ollamaProvider, `agents.defaults.model="ollama/llama3.2"`},
			stderr: []string{"openclaw: already written: models.providers.ollama, agents.defaults.model\n", "openclaw: the test message failed: every model failed: ollama/llama3.2: unreachable (connection refused)\n"}},
		{name: "a refused set: what was written is said", refuse: "commands.ownerAllowFrom",
			args:   []string{"--skip-model", "--owner", "whatsapp:+15551234567"},
			code:   1,
			sets:   []string{`channels.whatsapp.allowFrom=["+15551234567"]`},
			stderr: []string{"openclaw: already written: channels.whatsapp.allowFrom\n", "openclaw: set commands.ownerAllowFrom: /var/lib/openclaw/openclaw.json was not changed: commands.ownerAllowFrom: refused\n"}},
		{name: "--json", restart: true,
			args: []string{"--auth-choice", "ollama", "--custom-model-id", "qwen3:4b", "--custom-base-url", "http://pi.local:11434", "--skip-owner", "--timezone", "UTC", "--json"},
			sets: []string{
				`models.providers.ollama={"api":"ollama","baseUrl":"http://pi.local:11434","models":[{"id":"qwen3:4b"}]}`,
				`agents.defaults.model="ollama/qwen3:4b"`,
				`agents.defaults.userTimezone="UTC"`,
			},
			stdout: []string{`"ok": true`, `"key": "agents.defaults.model"`, `"value": "ollama/qwen3:4b"`, `"restartNeeded": true`, `"restartHow": "sudo systemctl restart openclaw-gateway"`},
			absent: []string{`"test"`, "set agents"}},
		{name: "--json with the test", args: []string{"--skip-model", "--skip-owner", "--skip-timezone", "--test-message", "hello", "--json"},
			stdout: []string{`"reply": "Hello, world!"`, `"model": "local/qwen3-1.7b"`, `"set": []`, `"restartNeeded": false`}},
		{name: "--json: a failure after a set", refuse: "commands.ownerAllowFrom",
			args:   []string{"--skip-model", "--owner", "whatsapp:+15551234567", "--json"},
			code:   1,
			sets:   []string{`channels.whatsapp.allowFrom=["+15551234567"]`},
			stdout: []string{`"ok": false`, `"key": "channels.whatsapp.allowFrom"`, `"code": "invalid_config"`}},

		// Usage errors: nothing is written.
		{name: "--model missing", args: []string{"--owner", "whatsapp:+1555"}, code: 2,
			stderr: []string{"openclaw: --model is required with --non-interactive", "Run 'openclaw onboard --help' for usage."}},
		{name: "--owner missing", args: []string{"--model", "qwen3-1.7b"}, code: 2, stderr: []string{"openclaw: --owner is required with --non-interactive"}},
		{name: "bad --owner", args: []string{"--skip-model", "--owner", "+15551234567"}, code: 2, stderr: []string{"openclaw: --owner: \"+15551234567\": want CHANNEL:HANDLE"}},
		{name: "bad --timezone", args: []string{"--skip-model", "--skip-owner", "--timezone", "Mars/Olympus"}, code: 2,
			stderr: []string{`openclaw: --timezone: unknown time zone "Mars/Olympus" (want an IANA name like Europe/Madrid)`}},
		{name: "no such file", args: []string{"--model", "./nope.gguf", "--skip-owner"}, code: 2, stderr: []string{"openclaw: --model: no model file "}},
		{name: "a directory", args: []string{"--model", t.TempDir(), "--skip-owner"}, code: 2, stderr: []string{"is not a file"}},
		{name: "--skip-model with --model", args: []string{"--skip-model", "--model", "qwen3-1.7b", "--skip-owner"}, code: 2, stderr: []string{"goes with no other model flag"}},
		{name: "unknown --auth-choice", args: []string{"--auth-choice", "oauth", "--skip-owner"}, code: 2, stderr: []string{`--auth-choice "oauth": want ollama`}},
		{name: "a key without a provider", args: []string{"--api-key", "k", "--skip-owner"}, code: 2, stderr: []string{"--api-key needs --provider"}},
		{name: "two providers", args: []string{"--provider", "openai", "--anthropic-api-key", "k", "--skip-owner"}, code: 2, stderr: []string{"--anthropic-api-key is for anthropic, but --provider is openai"}},
		{name: "--ollama-url for another model", args: []string{"--model", "qwen3-1.7b", "--ollama-url", "http://x:1", "--skip-owner"}, code: 2, stderr: []string{"--ollama-url is for an Ollama model"}},
		{name: "not a file either", args: []string{"--model", notModel + "/x.gguf", "--skip-owner"}, code: 2, stderr: []string{"no model file"}},
		{name: "arguments", args: []string{"qwen3-1.7b"}, code: 2, stderr: []string{"unknown command \"qwen3-1.7b\""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			og := startOnboardGateway(t, tt.cfg, func(og *onboardGateway) {
				og.restart, og.refuse, og.forbidImport = tt.restart, tt.refuse, tt.forbid
				og.fakeGateway.mu.Lock()
				og.fakeGateway.noRunner = tt.noRunner
				og.fakeGateway.mu.Unlock()
			})
			code, stdout, stderr := runOnboard(context.Background(), og, strings.NewReader(""), tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			if got := og.recorded(); !slices.Equal(got, tt.sets) {
				t.Errorf("sets:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.sets, "\n"))
			}
			onboardCheck(t, "stdout", stdout, tt.stdout)
			onboardCheck(t, "stderr", stderr, tt.stderr)
			for _, s := range tt.absent {
				if strings.Contains(stdout+stderr, s) {
					t.Errorf("%q shown:\nstdout:\n%s\nstderr:\n%s", s, stdout, stderr)
				}
			}
			if strings.HasPrefix(stdout, "{") {
				var v map[string]any
				if err := json.Unmarshal([]byte(stdout), &v); err != nil {
					t.Errorf("stdout is not one JSON object: %v\n%s", err, stdout)
				}
			}
		})
	}
}

// onboardCheck: got holds each of want ("=…": is exactly …).
func onboardCheck(t *testing.T, name, got string, want []string) {
	t.Helper()
	for _, w := range want {
		if exact, ok := strings.CutPrefix(w, "="); ok {
			if got != exact {
				t.Errorf("%s = %q, want %q", name, got, exact)
			}
		} else if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", name, w, got)
		}
	}
}

// TestOnboardGatewayDown: a gateway that does not answer is said before
// anything is asked.
func TestOnboardGatewayDown(t *testing.T) {
	onboardEnv(t)
	asTerminal(t)
	down := filepath.Join(t.TempDir(), "down.sock")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--socket", down, "onboard"}, strings.NewReader("1\n"), &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "cannot reach the gateway") || strings.Contains(stderr.String(), "Choice") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}

// TestOnboardNoZone: with no zone set and none known here, --timezone is
// required, before anything is written.
func TestOnboardNoZone(t *testing.T) {
	onboardEnv(t)
	t.Setenv("TZ", "")
	dir := t.TempDir()
	prevL, prevT := localtimePath, timezoneFilePath
	localtimePath, timezoneFilePath = filepath.Join(dir, "localtime"), filepath.Join(dir, "timezone")
	t.Cleanup(func() { localtimePath, timezoneFilePath = prevL, prevT })
	og := startOnboardGateway(t, nil)
	code, _, stderr := runOnboard(context.Background(), og, strings.NewReader(""), "--model", "ollama/llama3.2", "--skip-owner")
	if code != 2 || !strings.Contains(stderr, "--timezone is required: this machine's time zone is not known") || len(og.recorded()) != 0 {
		t.Errorf("exit %d, sets %v, stderr %q", code, og.recorded(), stderr)
	}
}

// TestOnboardInteractive answers the questions through a pipe: Enter takes
// the default, "-" skips, a wrong answer is asked again, a step that fails
// is offered again.
func TestOnboardInteractive(t *testing.T) {
	onboardEnv(t)
	asTerminal(t)
	tests := []struct {
		name    string
		cfg     map[string]string
		args    []string
		restart bool
		failGet string
		input   string
		code    int
		sets    []string
		stdout  []string
		stderr  []string
		absent  []string
	}{
		{name: "ollama, owner, zone, test",
			input: "3\n\nllama3.2\n\n+15551234567\n\nhello\n",
			sets: []string{
				"models.providers.ollama=" + ollamaProvider,
				`agents.defaults.model="ollama/llama3.2"`,
				`channels.whatsapp.allowFrom=["+15551234567"]`,
				`commands.ownerAllowFrom=["whatsapp:+15551234567"]`,
				`agents.defaults.userTimezone="Europe/Madrid"`,
			},
			stdout: []string{"set agents.defaults.model = \"ollama/llama3.2\"\n", "Hello, world!\n"},
			stderr: []string{
				"Setting up the gateway at ",
				"1. Model (now: local/qwen3-1.7b)\nWhere the model comes from:\n  1) a local model from the catalog\n  2) a model file (.gguf) from this computer\n  3) an Ollama model\n  4) a remote provider (API key)\n  5) skip: keep the model as it is\nChoice [1]: ",
				"Ollama address [http://127.0.0.1:11434]: ",
				"Model, as `ollama list` names it [qwen3:1.7b]: ",
				"Channel:\n  1) whatsapp\n  2) skip: leave the owners as they are\nChoice [1]: ",
				"Your number or address on whatsapp (e.g. +15551234567): ",
				"IANA time zone (e.g. Europe/Madrid) [Europe/Madrid]: ",
				"Message [Hello]: ",
			}},
		{name: "Enter takes the catalog's default; - skips the rest",
			input:  "\n\n-\n-\n-\n",
			sets:   []string{`agents.defaults.model="local/qwen3-1.7b"`},
			stderr: []string{"  1) qwen3-1.7b — 1.1 GB — Qwen3 1.7B: small chat model with tool calling and thinking\n  2) smollm2-1.7b-instruct — 1.1 GB", "pulled qwen3-1.7b (1.1 GB)"}},
		{name: "wrong answers are asked again",
			input: "9\n3\nftp://x\n\n\n7\n-\nMars/Olympus\nAsia/Tokyo\n-\n",
			sets: []string{
				`models.providers.ollama={"api":"ollama","baseUrl":"http://127.0.0.1:11434","models":[{"id":"qwen3:1.7b"}]}`,
				`agents.defaults.model="ollama/qwen3:1.7b"`,
				`agents.defaults.userTimezone="Asia/Tokyo"`,
			},
			stderr: []string{"pick a number from 1 to 5 (- skips)\n", `"ftp://x": want http://HOST:PORT`, "pick a number from 1 to 2 (- skips)\n", `unknown time zone "Mars/Olympus"`}},
		{name: "a step that fails is offered again",
			input:  "1\n2\n-\n-\n-\n-\n",
			stderr: []string{"openclaw: checksum mismatch for smollm2-1.7b-instruct", "(try again, or - to skip)\n"}},
		{name: "a remote provider: the key is asked, never shown", restart: true,
			input: "4\n2\nsk-ant-typed\n\n1\nme@example.com\n\n",
			sets: []string{
				`models.providers.anthropic={"api":"anthropic-messages","baseUrl":"https://api.anthropic.com","models":[{"id":"claude-sonnet-4-5"}],"apiKey":"sk-ant-typed"}`,
				`agents.defaults.model="anthropic/claude-sonnet-4-5"`,
				`channels.whatsapp.allowFrom=["me@example.com"]`,
				`commands.ownerAllowFrom=["whatsapp:me@example.com"]`,
				`agents.defaults.userTimezone="Europe/Madrid"`,
			},
			stdout: []string{"restart the gateway to apply it (sudo systemctl restart openclaw-gateway), then send a test message: openclaw agent hello"},
			stderr: []string{"API key (not shown): ", "Model [claude-sonnet-4-5]: "},
			absent: []string{"sk-ant-typed", "Message [Hello]"}},
		{name: "an empty key is asked again; Enter keeps the one set",
			cfg:   map[string]string{"models.providers.openai.apiKey": `"[redacted]"`},
			input: "4\n1\n\ngpt-4.1\n-\n-\n-\n",
			sets: []string{
				`models.providers.openai={"api":"openai-completions","baseUrl":"https://api.openai.com/v1","models":[{"id":"gpt-4.1"}]}`,
				`agents.defaults.model="openai/gpt-4.1"`,
			},
			stderr: []string{"API key (not shown; Enter keeps the one set): "}},
		{name: "flags answer their steps",
			args:   []string{"--model", "ollama/llama3.2", "--skip-owner", "--test-message", "hello"},
			input:  "UTC\n",
			sets:   []string{"models.providers.ollama=" + ollamaProvider, `agents.defaults.model="ollama/llama3.2"`, `agents.defaults.userTimezone="UTC"`},
			stdout: []string{"Hello, world!"},
			absent: []string{"Choice", "Message [Hello]"}},
		{name: "Ctrl-D stops: what was written is said",
			input:  "3\n\nllama3.2\n",
			code:   130,
			sets:   []string{"models.providers.ollama=" + ollamaProvider, `agents.defaults.model="ollama/llama3.2"`},
			stderr: []string{"openclaw: onboarding stopped at the end of input; already written: models.providers.ollama, agents.defaults.model\n"}},
		{name: "a gateway that cannot read its config is not asked again", failGet: "agents.defaults.userTimezone",
			args:   []string{"--skip-model", "--skip-owner"},
			input:  "\n\n\n",
			code:   1,
			stderr: []string{"openclaw: read agents.defaults.userTimezone: the config file does not load\n"},
			absent: []string{"try again"}},
		{name: "Ctrl-D before anything",
			input:  "",
			code:   130,
			stderr: []string{"openclaw: onboarding stopped at the end of input; nothing was written\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			og := startOnboardGateway(t, tt.cfg, func(og *onboardGateway) { og.restart, og.failGet = tt.restart, tt.failGet })
			code, stdout, stderr := runOnboard(context.Background(), og, strings.NewReader(tt.input), tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			if got := og.recorded(); !slices.Equal(got, tt.sets) {
				t.Errorf("sets:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.sets, "\n"))
			}
			onboardCheck(t, "stdout", stdout, tt.stdout)
			onboardCheck(t, "stderr", stderr, tt.stderr)
			for _, s := range tt.absent {
				if strings.Contains(stdout+stderr, s) {
					t.Errorf("%q shown:\nstdout:\n%s\nstderr:\n%s", s, stdout, stderr)
				}
			}
		})
	}
}

// TestOnboardCtrlC: Ctrl-C at a question stops with 130 and says what was
// written; with --json the failure object lists it.
func TestOnboardCtrlC(t *testing.T) {
	onboardEnv(t)
	asTerminal(t)
	for _, asJSON := range []bool{false, true} {
		og := startOnboardGateway(t, nil)
		ctx, cancel := context.WithCancel(context.Background())
		in, typed := io.Pipe()
		go func() {
			io.WriteString(typed, "3\n\nllama3.2\n")
			// The owner's question waits; Ctrl-C once both keys are set.
			for len(og.recorded()) < 2 {
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
		}()
		args := []string{}
		if asJSON {
			args = append(args, "--json")
		}
		code, stdout, stderr := runOnboard(ctx, og, in, args...)
		typed.Close()
		if code != 130 || !strings.Contains(stderr, "openclaw: onboarding stopped; already written: models.providers.ollama, agents.defaults.model\n") {
			t.Errorf("json %v: exit %d, stderr:\n%s", asJSON, code, stderr)
		}
		if !asJSON {
			continue
		}
		var res onboardResult
		if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.OK || res.Error == nil || res.Error.Code != "interrupted" || len(res.Set) != 2 {
			t.Errorf("stdout %s: %v", stdout, err)
		}
	}
}

// TestOnboardModelPlan: what --model and its companions name.
func TestOnboardModelPlan(t *testing.T) {
	onboardEnv(t)
	home := os.Getenv("HOME")
	file := filepath.Join(home, "m.gguf")
	must(t, os.WriteFile(file, []byte("GGUF"), 0o644))
	tests := []struct {
		name string
		f    onboardFlags
		want *modelPlan
		err  string // usage error substring
	}{
		{"none", onboardFlags{}, nil, ""},
		{"catalog", onboardFlags{model: "qwen3-1.7b"}, &modelPlan{source: sourceCatalog, name: "qwen3-1.7b"}, ""},
		{"local/", onboardFlags{model: "local/qwen3-1.7b"}, &modelPlan{source: sourceCatalog, name: "qwen3-1.7b"}, ""},
		{"url", onboardFlags{model: "https://h.example/a/B.gguf"}, &modelPlan{source: sourceCatalog, name: "https://h.example/a/B.gguf"}, ""},
		{"~ file", onboardFlags{model: "~/m.gguf"}, &modelPlan{source: sourceFile, name: file}, ""},
		{"absolute file", onboardFlags{model: file, authChoice: "local"}, &modelPlan{source: sourceFile, name: file}, ""},
		{"ollama", onboardFlags{model: "ollama/qwen3:4b", ollamaURL: "http://pi:11434"}, &modelPlan{source: sourceOllama, name: "qwen3:4b", baseURL: "http://pi:11434"}, ""},
		{"--provider ollama", onboardFlags{provider: "ollama", model: "qwen3:4b"}, &modelPlan{source: sourceOllama, name: "qwen3:4b"}, ""},
		{"--auth-choice ollama, no model", onboardFlags{authChoice: "ollama"}, &modelPlan{source: sourceOllama, name: defaultOllamaModel}, ""},
		{"remote", onboardFlags{model: "anthropic/claude-x", apiKey: "k"}, &modelPlan{source: sourceRemote, provider: "anthropic", name: "claude-x", apiKey: "k"}, ""},
		{"--provider, bare model", onboardFlags{provider: "openai", model: "gpt-4.1"}, &modelPlan{source: sourceRemote, provider: "openai", name: "gpt-4.1"}, ""},
		{"--provider, prefixed model", onboardFlags{provider: "openai", model: "openai/gpt-4.1"}, &modelPlan{source: sourceRemote, provider: "openai", name: "gpt-4.1"}, ""},
		{"apiKey is anthropic", onboardFlags{authChoice: "apiKey", anthropicKey: "k"}, &modelPlan{source: sourceRemote, provider: "anthropic", name: "claude-sonnet-4-5", apiKey: "k"}, ""},
		{"ref", onboardFlags{model: "acme/big"}, &modelPlan{source: sourceRef, provider: "acme", name: "big"}, ""},
		{"skip", onboardFlags{authChoice: "skip"}, nil, ""},
		{"skip and a model", onboardFlags{authChoice: "skip", model: "x"}, nil, "goes with no other model flag"},
		{"unknown provider", onboardFlags{provider: "mistral"}, nil, `--provider "mistral"`},
		{"model of another provider", onboardFlags{provider: "openai", model: "anthropic/claude-x"}, nil, "is not a openai model"},
		{"two keys", onboardFlags{openaiKey: "a", apiKey: "b"}, nil, "give one API key"},
		{"--model and --custom-model-id", onboardFlags{model: "a", customModelID: "b"}, nil, "give the model once"},
		{"bad ollama url", onboardFlags{model: "ollama/x", ollamaURL: "pi:11434"}, nil, "--ollama-url: "},
		{"key for a local model", onboardFlags{model: "qwen3-1.7b", apiKey: "k"}, nil, "an API key is for a remote provider"},
		{"local, not local", onboardFlags{model: "ollama/x", authChoice: "local"}, nil, "--auth-choice local is for a catalog model"},
		{"empty id", onboardFlags{model: "ollama/"}, nil, `want PROVIDER/MODEL`},
		{"ollama model with a namespace", onboardFlags{provider: "ollama", model: "hf.co/u/r:Q4_K_M"}, &modelPlan{source: sourceOllama, name: "hf.co/u/r:Q4_K_M"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.f.modelPlan()
			if tt.err != "" {
				var ue *usageError
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.As(err, &ue) {
					t.Errorf("err %v, want usage error %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
				t.Errorf("plan %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestOnboardOwner: CHANNEL:HANDLE.
func TestOnboardOwner(t *testing.T) {
	tests := []struct {
		in   string
		want ownerPlan
		err  string
	}{
		{"whatsapp:+15551234567", ownerPlan{"whatsapp", "+15551234567"}, ""},
		{" Email : you@example.com ", ownerPlan{"email", "you@example.com"}, ""},
		{"imessage:you@icloud.com", ownerPlan{"imessage", "you@icloud.com"}, ""},
		{"+15551234567", ownerPlan{}, "want CHANNEL:HANDLE"},
		{"whatsapp:", ownerPlan{}, "the handle is empty"},
		{"whatsapp:+1 555", ownerPlan{}, "a handle has no spaces"},
		{"what sapp:+1555", ownerPlan{}, "want CHANNEL:HANDLE"},
	}
	for _, tt := range tests {
		got, err := parseOwner(tt.in)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("parseOwner(%q): %v, want %q", tt.in, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("parseOwner(%q) = %+v, %v", tt.in, got, err)
		}
	}
}

// TestMachineZone: $TZ, else the link /etc/localtime, else /etc/timezone.
func TestMachineZone(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "localtime")
	must(t, os.Symlink("/usr/share/zoneinfo/posix/Asia/Tokyo", link))
	tzFile := filepath.Join(dir, "timezone")
	must(t, os.WriteFile(tzFile, []byte("America/Chicago\n"), 0o644))
	prevL, prevT := localtimePath, timezoneFilePath
	t.Cleanup(func() { localtimePath, timezoneFilePath = prevL, prevT })
	tests := []struct {
		tz, localtime, tzfile, want string
	}{
		{"Europe/Madrid", link, tzFile, "Europe/Madrid"},
		{":Europe/Madrid", link, tzFile, "Europe/Madrid"},
		{"/usr/share/zoneinfo/Europe/Madrid", link, tzFile, "Europe/Madrid"},
		{"CET-1CEST", link, tzFile, "Asia/Tokyo"}, // a POSIX rule names no zone
		{"", link, tzFile, "Asia/Tokyo"},
		{"", filepath.Join(dir, "none"), tzFile, "America/Chicago"},
		{"", filepath.Join(dir, "none"), filepath.Join(dir, "none"), ""},
		{"Local", tzFile, filepath.Join(dir, "none"), ""}, // not a link
	}
	for _, tt := range tests {
		t.Setenv("TZ", tt.tz)
		localtimePath, timezoneFilePath = tt.localtime, tt.tzfile
		if got := machineZone(); got != tt.want {
			t.Errorf("TZ=%q localtime %s: %q, want %q", tt.tz, tt.localtime, got, tt.want)
		}
	}
}
