package command

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chzyer/readline"
	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/config"
)

// onboardCmd is OpenClaw's `openclaw onboard`: the first steps on a new box,
// as the dashboard's Set up page takes them (engine/dashboard/assets/
// onboard.js), with the same config keys written the same way: the model,
// the owner, the time zone, then a test message. Every change goes through
// the gateway's API (config set, model pull, import, upload), so it works
// on the local socket and on a paired gateway (--gateway) alike.
func (a *app) onboardCmd() *cobra.Command {
	f := &onboardFlags{}
	cmd := &cobra.Command{
		Use:   "onboard",
		Short: "Set up the gateway: model, owner, time zone, then a test message",
		Long: `Set up the gateway step by step, as the dashboard's Set up page does:

  1. the model: a local model from the catalog (downloaded by the gateway),
     a .gguf file from this computer, an Ollama model, or a remote provider
     (OpenAI, Anthropic, Google Gemini) with its API key
       → agents.defaults.model (its "primary" when it has fallbacks), and
         models.providers.<provider> for Ollama and remote providers
  2. the owner: the channel and handle you write to the assistant from
     (only the owner may talk to it, run /approve and change settings from
     a chat)
       → channels.<channel>.allowFrom and commands.ownerAllowFrom
         ("<channel>:<handle>"), added to what is there
  3. the time zone, for the date the assistant sees and the daily reset
       → agents.defaults.userTimezone (default: the one set, else this
         machine's: $TZ, else /etc/localtime)
  4. a test message to the default agent's main session; its reply
     streams on stdout

Every change is written by the gateway (openclaw config set does the
same), on this machine's socket or on a paired gateway (--gateway). What
is already so is left as it is. The gateway reads its config at start:
when a change needs a restart, onboard says how and skips the test (it
would still run on the old config): restart, then run ` + "`openclaw agent hello`" + `.

In a terminal onboard asks, with numbered choices; Enter takes the
[default], "-" skips a question, Ctrl-C or Ctrl-D stops (exit 130) and
says what was already written. A step given by flags is not asked.

With --non-interactive, or when stdin is not a terminal, only the flags
count: --model (or --skip-model) and --owner (or --skip-owner) are
required; the time zone defaults as above; a missing one is a usage error.

--model takes:
  NAME, local/NAME    a model of the catalog (` + "`openclaw models list`" + `), pulled by
                      the gateway unless installed
  https://…/F.gguf    a GGUF file the gateway downloads
  PATH (.gguf)        a file here: imported, or sent to a gateway on another
                      machine (as ` + "`openclaw models import`" + `)
  ollama/MODEL        an Ollama model (--ollama-url, default
                      http://127.0.0.1:11434)
  openai/MODEL, anthropic/MODEL, gemini/MODEL
                      a remote provider; the key is --api-key (or OpenClaw's
                      --openai-api-key, --anthropic-api-key, --gemini-api-key),
                      else $OPENAI_API_KEY, $ANTHROPIC_API_KEY, $GEMINI_API_KEY,
                      else the one the gateway has
  PROVIDER/MODEL      a provider the gateway's config already defines
--provider openai|anthropic|gemini with a bare --model (or none: the
provider's small default model) is the same as PROVIDER/MODEL. OpenClaw's
--auth-choice (ollama, openai-api-key, apiKey or anthropic-api-key,
gemini-api-key, skip) and --custom-model-id, --custom-base-url (with
ollama) are understood too.

API keys are written to the gateway's config file and never printed.

--json prints {"ok", "set": [{"key", "value"}], "restartNeeded",
"restartHow", "test": {"reply", "model"}} (secrets "[redacted]"; "test"
only when it ran); a failure prints {"ok": false, "error": {"code",
"message"}}, with "set" when something was written before it.`,
		Example: `  openclaw onboard
  openclaw onboard --gateway raspberrypi
  openclaw onboard --non-interactive --model qwen3-1.7b --owner whatsapp:+15551234567
  openclaw onboard --non-interactive --model ollama/qwen3:1.7b --ollama-url http://192.168.1.20:11434 \
      --owner email:you@example.com --timezone Europe/Madrid
  openclaw onboard --non-interactive --provider anthropic --api-key "$ANTHROPIC_API_KEY" \
      --owner imessage:+15551234567 --skip-test --json
  openclaw onboard --non-interactive --model ~/Downloads/Qwen3-4B-Q4_K_M.gguf --skip-owner --gateway raspberrypi
  openclaw onboard --non-interactive --auth-choice ollama --custom-model-id qwen3:4b --skip-owner`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := &onboarding{a: a, f: f, ctx: cmd.Context()}
			return o.finish(o.run(!f.nonInteractive && onboardInteractive(a)))
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.nonInteractive, "non-interactive", false, "ask nothing: only the flags count (so too when stdin is not a terminal)")
	fl.StringVar(&f.model, "model", "", "the model: NAME, local/NAME, https URL, PATH.gguf, ollama/MODEL, openai|anthropic|gemini/MODEL or PROVIDER/MODEL")
	fl.StringVar(&f.provider, "provider", "", "a remote provider for a bare --model: openai, anthropic or gemini (or ollama)")
	fl.StringVar(&f.apiKey, "api-key", "", "the remote provider's API key (default $OPENAI_API_KEY, $ANTHROPIC_API_KEY or $GEMINI_API_KEY, else the one set)")
	fl.StringVar(&f.ollamaURL, "ollama-url", "", "Ollama's address (default the one set, else "+defaultOllamaURL+")")
	fl.StringVar(&f.owner, "owner", "", "the owner: CHANNEL:HANDLE, e.g. whatsapp:+15551234567 or email:you@example.com")
	fl.StringVar(&f.timezone, "timezone", "", "IANA time zone, e.g. Europe/Madrid (default the one set, else this machine's)")
	fl.StringVar(&f.testMessage, "test-message", "", `the test message (default "Hello")`)
	fl.BoolVar(&f.skipModel, "skip-model", false, "leave the model as it is")
	fl.BoolVar(&f.skipOwner, "skip-owner", false, "leave the owner as it is")
	fl.BoolVar(&f.skipTimezone, "skip-timezone", false, "leave the time zone as it is")
	fl.BoolVar(&f.skipTest, "skip-test", false, "send no test message")
	fl.BoolVar(&f.asJSON, "json", false, "print what was set and the test's reply as JSON")
	// OpenClaw's spellings, so its onboard command lines work here.
	fl.StringVar(&f.authChoice, "auth-choice", "", "OpenClaw's choice: ollama, openai-api-key, apiKey (anthropic-api-key), gemini-api-key, local or skip")
	fl.StringVar(&f.openaiKey, "openai-api-key", "", "OpenAI's API key (--provider openai --api-key KEY)")
	fl.StringVar(&f.anthropicKey, "anthropic-api-key", "", "Anthropic's API key (--provider anthropic --api-key KEY)")
	fl.StringVar(&f.geminiKey, "gemini-api-key", "", "Google Gemini's API key (--provider gemini --api-key KEY)")
	fl.StringVar(&f.customModelID, "custom-model-id", "", "OpenClaw's name for the model id (--model)")
	fl.StringVar(&f.customBaseURL, "custom-base-url", "", "OpenClaw's name for Ollama's address (--ollama-url)")
	return cmd
}

// onboardInteractive says whether onboard asks its questions: stdin is a
// terminal. A variable so that tests can answer through a pipe.
var onboardInteractive = func(a *app) bool { return isTerminal(a.stdin) }

// Onboarding's defaults: the dashboard's.
const (
	defaultOllamaURL   = "http://127.0.0.1:11434"
	defaultOllamaModel = "qwen3:1.7b"
	defaultTestMessage = "Hello"
	modelKey           = "agents.defaults.model"
	timezoneKey        = "agents.defaults.userTimezone"
	ownersKey          = "commands.ownerAllowFrom"
)

// remoteProvider is a remote provider onboard can define: its API, its
// endpoint, a small default model and the variable its key may come from.
type remoteProvider struct {
	api, baseURL, model, label, env string
}

// remoteProviders are the dashboard's (onboard.js remotes), in its order.
var (
	remoteProviders = map[string]remoteProvider{
		"openai":    {api: "openai-completions", baseURL: "https://api.openai.com/v1", model: "gpt-4o-mini", label: "OpenAI", env: "OPENAI_API_KEY"},
		"anthropic": {api: "anthropic-messages", baseURL: "https://api.anthropic.com", model: "claude-sonnet-4-5", label: "Anthropic", env: "ANTHROPIC_API_KEY"},
		"gemini":    {api: "gemini", baseURL: "https://generativelanguage.googleapis.com/v1beta", model: "gemini-2.5-flash", label: "Google Gemini", env: "GEMINI_API_KEY"},
	}
	remoteOrder = []string{"openai", "anthropic", "gemini"}
)

// handleHints are examples of a handle per channel (onboard.js).
var handleHints = map[string]string{"whatsapp": "+15551234567", "email": "you@example.com", "imessage": "+15551234567 or you@icloud.com",
	"telegram": "123456789, your numeric id: `openclaw pairing list telegram` shows it after you write to the bot"}

type onboardFlags struct {
	nonInteractive                     bool
	model, provider, apiKey, ollamaURL string
	owner, timezone, testMessage       string
	skipModel, skipOwner, skipTimezone bool
	skipTest, asJSON                   bool
	authChoice                         string
	openaiKey, anthropicKey, geminiKey string
	customModelID, customBaseURL       string
}

// Where a model comes from.
const (
	sourceCatalog = "catalog" // a catalog name, an installed local model or an https URL: pulled unless installed
	sourceFile    = "file"    // a GGUF file here
	sourceOllama  = "ollama"
	sourceRemote  = "remote" // openai, anthropic, gemini
	sourceRef     = "ref"    // PROVIDER/MODEL of a provider the config defines
)

// modelPlan is the model step, decided from the flags or the answers.
type modelPlan struct {
	source   string
	name     string // catalog: name or URL; file: absolute path; else the model id
	provider string // remote, ref
	baseURL  string // ollama: "" = the one set, else defaultOllamaURL
	apiKey   string // remote: "" = the one set
}

// ownerPlan is the owner step.
type ownerPlan struct{ channel, handle string }

// skippingModel says whether the flags skip the model step.
func (f *onboardFlags) skippingModel() bool {
	return f.skipModel || strings.EqualFold(f.authChoice, "skip")
}

// modelPlan reads the model flags; nil when none was given.
func (f *onboardFlags) modelPlan() (*modelPlan, error) {
	provider, key := strings.ToLower(strings.TrimSpace(f.provider)), ""
	setProvider := func(p, why string) error {
		if provider != "" && provider != p {
			return usagef("%s is for %s, but --provider is %s", why, p, provider)
		}
		provider = p
		return nil
	}
	choice := strings.ToLower(f.authChoice)
	local, skip := false, false
	var err error
	switch choice {
	case "":
	case "skip":
		skip = true
	case "local":
		local = true
	case "ollama":
		err = setProvider("ollama", "--auth-choice ollama")
	case "openai-api-key":
		err = setProvider("openai", "--auth-choice "+f.authChoice)
	case "apikey", "anthropic-api-key":
		err = setProvider("anthropic", "--auth-choice "+f.authChoice)
	case "gemini-api-key":
		err = setProvider("gemini", "--auth-choice "+f.authChoice)
	default:
		return nil, usagef("--auth-choice %q: want ollama, openai-api-key, apiKey (or anthropic-api-key), gemini-api-key, local or skip", f.authChoice)
	}
	if err != nil {
		return nil, err
	}
	for _, k := range []struct{ flag, provider, value string }{
		{"--openai-api-key", "openai", f.openaiKey}, {"--anthropic-api-key", "anthropic", f.anthropicKey},
		{"--gemini-api-key", "gemini", f.geminiKey}, {"--api-key", "", f.apiKey},
	} {
		if k.value == "" {
			continue
		}
		if key != "" {
			return nil, usagef("give one API key (%s and another)", k.flag)
		}
		key = strings.TrimSpace(k.value)
		if k.provider != "" {
			if err := setProvider(k.provider, k.flag); err != nil {
				return nil, err
			}
		}
	}
	if provider != "" && provider != "ollama" {
		if _, ok := remoteProviders[provider]; !ok {
			return nil, usagef("--provider %q: want openai, anthropic, gemini or ollama", f.provider)
		}
	}
	model := strings.TrimSpace(f.model)
	if f.customModelID != "" {
		if model != "" {
			return nil, usagef("give the model once: --model or --custom-model-id")
		}
		model = strings.TrimSpace(f.customModelID)
	}
	baseURL := strings.TrimSpace(f.ollamaURL)
	if f.customBaseURL != "" {
		if baseURL != "" {
			return nil, usagef("give Ollama's address once: --ollama-url or --custom-base-url")
		}
		baseURL = strings.TrimSpace(f.customBaseURL)
	}
	if skip || f.skipModel {
		if model != "" || provider != "" || key != "" || baseURL != "" || local {
			return nil, usagef("skipping the model (--skip-model, --auth-choice skip) goes with no other model flag")
		}
		return nil, nil
	}

	var plan *modelPlan
	switch {
	case provider == "ollama":
		id := strings.TrimPrefix(model, "ollama/") // as `ollama list` names it: "user/model:tag" too
		if id == "" {
			id = defaultOllamaModel
		}
		plan = &modelPlan{source: sourceOllama, name: id}
	case provider != "":
		id := model
		if p, rest, ok := strings.Cut(model, "/"); ok {
			if _, known := remoteProviders[p]; known {
				if p != provider {
					return nil, usagef("--model %s is not a %s model (--provider %s)", model, provider, provider)
				}
				id = rest
			}
		}
		if id == "" {
			id = remoteProviders[provider].model
		}
		plan = &modelPlan{source: sourceRemote, provider: provider, name: id}
	case model == "":
		switch {
		case key != "":
			return nil, usagef("--api-key needs --provider openai, anthropic or gemini (or --model PROVIDER/MODEL)")
		case local:
			return nil, usagef("--auth-choice local needs --model: a catalog name or a .gguf file")
		case baseURL != "":
			return nil, usagef("--ollama-url needs --model ollama/MODEL")
		}
		return nil, nil
	default:
		if plan, err = classifyModel(model); err != nil {
			return nil, err
		}
	}
	switch {
	case local && plan.source != sourceCatalog && plan.source != sourceFile:
		return nil, usagef("--auth-choice local is for a catalog model or a .gguf file, not %s", model)
	case key != "" && plan.source != sourceRemote:
		return nil, usagef("an API key is for a remote provider (openai, anthropic, gemini), not %s", model)
	case baseURL != "" && plan.source != sourceOllama:
		return nil, usagef("--ollama-url is for an Ollama model (ollama/MODEL)")
	}
	if plan.source == sourceOllama && baseURL != "" {
		if err := checkHTTPURL(baseURL); err != nil {
			return nil, usagef("--ollama-url: %v", err)
		}
		plan.baseURL = baseURL
	}
	if plan.source == sourceRemote {
		if key == "" {
			// OpenClaw's onboard reads the provider's variable too: a
			// key kept out of the command line (and ps).
			key = strings.TrimSpace(os.Getenv(remoteProviders[plan.provider].env))
		}
		plan.apiKey = key
	}
	return plan, nil
}

// classifyModel tells what --model names by its form.
func classifyModel(model string) (*modelPlan, error) {
	lower := strings.ToLower(model)
	switch {
	case strings.Contains(model, "://"):
		return &modelPlan{source: sourceCatalog, name: model}, nil
	case strings.HasSuffix(lower, ".gguf") || filepath.IsAbs(model) || model == "~" ||
		strings.HasPrefix(model, "~/") || strings.HasPrefix(model, "./") || strings.HasPrefix(model, "../"):
		path, err := localModelFile(model)
		if err != nil {
			return nil, usagef("--model: %v", err)
		}
		return &modelPlan{source: sourceFile, name: path}, nil
	}
	p, id, ok := strings.Cut(model, "/")
	if !ok {
		return &modelPlan{source: sourceCatalog, name: model}, nil
	}
	if p == "" || id == "" {
		return nil, usagef("--model %q: want PROVIDER/MODEL", model)
	}
	switch _, remote := remoteProviders[p]; {
	case p == "ollama":
		return &modelPlan{source: sourceOllama, name: id}, nil
	case remote:
		return &modelPlan{source: sourceRemote, provider: p, name: id}, nil
	case p == config.LocalProvider:
		return &modelPlan{source: sourceCatalog, name: id}, nil
	}
	return &modelPlan{source: sourceRef, provider: p, name: id}, nil
}

// localModelFile is the absolute path of a model file here, which must
// exist ("~/" is the home directory: a value given as --model=~/… is not
// expanded by the shell).
func localModelFile(path string) (string, error) {
	if rest, ok := strings.CutPrefix(path, "~"); ok && (rest == "" || rest[0] == '/') {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		path = home + rest
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("no model file %s: %w", abs, errors.Unwrap(err))
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a file", abs)
	}
	return abs, nil
}

// checkHTTPURL accepts an http or https URL with a host.
func checkHTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q: want http://HOST:PORT", s)
	}
	return nil
}

var channelName = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

// parseOwner reads CHANNEL:HANDLE.
func parseOwner(s string) (ownerPlan, error) {
	ch, handle, ok := strings.Cut(strings.TrimSpace(s), ":")
	ch, handle = strings.ToLower(strings.TrimSpace(ch)), strings.TrimSpace(handle)
	if !ok || !channelName.MatchString(ch) {
		return ownerPlan{}, fmt.Errorf("%q: want CHANNEL:HANDLE, e.g. whatsapp:+15551234567 or email:you@example.com", s)
	}
	if err := checkHandle(handle); err != nil {
		return ownerPlan{}, err
	}
	return ownerPlan{channel: ch, handle: handle}, nil
}

// checkHandle accepts a handle without spaces or control characters.
func checkHandle(h string) error {
	switch {
	case h == "":
		return errors.New("the handle is empty (a phone number like +15551234567, or an address)")
	case strings.ContainsFunc(h, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return fmt.Errorf("%q: a handle has no spaces (a phone number like +15551234567, or an address)", h)
	}
	return nil
}

// checkZone accepts an IANA time zone name this machine knows.
func checkZone(z string) error {
	if z == "" || z == "Local" {
		return fmt.Errorf("%q is not a time zone (want an IANA name like Europe/Madrid)", z)
	}
	if _, err := time.LoadLocation(z); err != nil {
		return fmt.Errorf("unknown time zone %q (want an IANA name like Europe/Madrid)", z)
	}
	return nil
}

// Where machineZone looks; variables for tests.
var (
	localtimePath    = "/etc/localtime"
	timezoneFilePath = "/etc/timezone"
)

// machineZone is this machine's IANA time zone: $TZ ("Europe/Madrid",
// ":Europe/Madrid" or a zoneinfo path), else the zoneinfo file
// /etc/localtime links to, else /etc/timezone (Debian); "" when none
// names one (a POSIX rule such as "CET-1CEST" is not a name).
func machineZone() string {
	if tz := strings.TrimPrefix(os.Getenv("TZ"), ":"); tz != "" {
		if z := zoneOfPath(tz); checkZone(z) == nil {
			return z
		}
	}
	if target, err := os.Readlink(localtimePath); err == nil {
		if z := zoneOfPath(target); checkZone(z) == nil {
			return z
		}
	}
	if data, err := os.ReadFile(timezoneFilePath); err == nil {
		if z := strings.TrimSpace(string(data)); checkZone(z) == nil {
			return z
		}
	}
	return ""
}

// zoneOfPath is the zone name in a zoneinfo path
// (/usr/share/zoneinfo/Europe/Madrid → Europe/Madrid), or s itself.
func zoneOfPath(s string) string {
	if _, rest, ok := strings.Cut(filepath.ToSlash(s), "zoneinfo/"); ok {
		for _, p := range []string{"posix/", "right/"} {
			rest = strings.TrimPrefix(rest, p)
		}
		return rest
	}
	return s
}

// onboardSet is one key written, as --json shows it.
type onboardSet struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"` // secrets "[redacted]"
}

// onboardTest is the test message's answer.
type onboardTest struct {
	Reply string `json:"reply"`
	Model string `json:"model"`
}

// onboardResult is what --json prints.
type onboardResult struct {
	OK            bool         `json:"ok"`
	Set           []onboardSet `json:"set"`
	RestartNeeded bool         `json:"restartNeeded"`
	RestartHow    string       `json:"restartHow,omitempty"`
	Test          *onboardTest `json:"test,omitempty"`
	Error         *api.Error   `json:"error,omitempty"`
}

// onboarding is one run of onboard.
type onboarding struct {
	a   *app
	f   *onboardFlags
	ctx context.Context
	cl  *client.Client
	st  *api.Status
	p   *prompter // nil: non-interactive

	set           []onboardSet
	restartNeeded bool
	restartHow    string
	test          *onboardTest
}

// readError is a failure to read the gateway's state: asking the
// question again would not help.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// errSkip is a question skipped with "-".
var errSkip = errors.New("skipped")

// errEndOfInput is stdin's end at a question (Ctrl-D).
var errEndOfInput = errors.New("end of input")

// run takes the steps.
func (o *onboarding) run(interactive bool) error {
	f := o.f
	// The flags first: a usage error comes before anything is asked or
	// written.
	plan, err := f.modelPlan()
	if err != nil {
		return err
	}
	var owner *ownerPlan
	switch {
	case f.owner != "" && f.skipOwner:
		return usagef("--owner and --skip-owner: give one")
	case f.owner != "":
		p, err := parseOwner(f.owner)
		if err != nil {
			return usagef("--owner: %v", err)
		}
		owner = &p
	}
	switch {
	case f.timezone != "" && f.skipTimezone:
		return usagef("--timezone and --skip-timezone: give one")
	case f.timezone != "":
		if err := checkZone(f.timezone); err != nil {
			return usagef("--timezone: %v", err)
		}
	}
	if f.testMessage != "" && f.skipTest {
		return usagef("--test-message and --skip-test: give one")
	}
	if !interactive {
		switch {
		case plan == nil && !f.skippingModel():
			return usagef("--model is required with --non-interactive (a catalog name, a .gguf file, ollama/MODEL or openai|anthropic|gemini/MODEL), or --skip-model")
		case owner == nil && !f.skipOwner:
			return usagef("--owner is required with --non-interactive (CHANNEL:HANDLE, e.g. whatsapp:+15551234567), or --skip-owner")
		}
	}

	o.cl = o.a.client()
	if o.st, err = o.cl.Status(o.ctx); err != nil {
		return err
	}
	if o.cl.Remote() {
		if who, err := o.cl.WhoAmI(o.ctx); err == nil && who.Device != nil && who.Device.Role == api.RoleViewer {
			return &api.Error{Code: api.CodeForbidden, Message: "this device is a viewer of the gateway: it may look but not change it. Onboard from an operator device, or on the box itself"}
		}
	}
	if interactive {
		o.p = &prompter{ctx: o.ctx, in: o.a.stdin, br: bufio.NewReader(o.a.stdin), w: o.a.stderr}
		return o.interactive(plan, owner)
	}

	// The time zone's default needs the config: read before any write, so
	// that a missing --timezone stops nothing half done.
	zone := f.timezone
	if zone == "" && !f.skipTimezone {
		if zone, err = o.defaultZone(); err != nil {
			return err
		}
		if zone == "" {
			return usagef("--timezone is required: this machine's time zone is not known ($TZ is not set, /etc/localtime names none), or --skip-timezone")
		}
	}
	if plan != nil {
		if err := o.applyModel(plan); err != nil {
			return err
		}
	}
	if owner != nil {
		if err := o.applyOwner(*owner); err != nil {
			return err
		}
	}
	if zone != "" {
		if err := o.applyZone(zone); err != nil {
			return err
		}
	}
	if f.skipTest {
		return nil
	}
	if o.restartNeeded {
		return nil // finish says to restart first
	}
	text := f.testMessage
	if text == "" {
		text = defaultTestMessage
	}
	return o.sendTest(text)
}

// interactive asks for each step the flags did not give.
func (o *onboarding) interactive(plan *modelPlan, owner *ownerPlan) error {
	f, w := o.f, o.a.stderr
	where := o.cl.Socket()
	if o.a.gateway != "" {
		where = o.a.gateway + " (" + where + ")"
	}
	fmt.Fprintf(w, "Setting up the gateway at %s.\n", api.EscapeControl(where))
	fmt.Fprintln(w, `Enter takes the [default], "-" skips a question, Ctrl-C stops (what is written stays written).`)

	// 1. The model.
	switch {
	case plan != nil:
		fmt.Fprintln(w, "\n1. Model: as the command line says")
		if err := o.applyModel(plan); err != nil {
			return err
		}
	case !f.skippingModel():
		if err := o.retry(o.askModel); err != nil {
			return err
		}
	}
	// 2. The owner.
	switch {
	case owner != nil:
		fmt.Fprintln(w, "\n2. Owner: as the command line says")
		if err := o.applyOwner(*owner); err != nil {
			return err
		}
	case !f.skipOwner:
		if err := o.retry(o.askOwner); err != nil {
			return err
		}
	}
	// 3. The time zone.
	switch {
	case f.timezone != "":
		fmt.Fprintln(w, "\n3. Time zone: as the command line says")
		if err := o.applyZone(f.timezone); err != nil {
			return err
		}
	case !f.skipTimezone:
		if err := o.retry(o.askZone); err != nil {
			return err
		}
	}
	// 4. The test.
	if f.skipTest {
		return nil
	}
	if o.restartNeeded {
		return nil // finish says to restart first
	}
	text := f.testMessage
	if text == "" {
		fmt.Fprintln(w, "\n4. Test: a message to the default agent's main session, answered by the model the gateway runs now.")
		var err error
		if text, err = o.p.text("Message", defaultTestMessage, false); errors.Is(err, errSkip) {
			return nil
		} else if err != nil {
			return err
		}
	}
	return o.sendTest(text)
}

// retry runs an asked step again after an error the user can answer
// differently (a model that does not pull, a key the gateway refuses);
// "-" skips it.
func (o *onboarding) retry(step func() error) error {
	for {
		err := step()
		switch {
		case err == nil, errors.Is(err, errSkip):
			return nil
		case o.ctx.Err() != nil, errors.Is(err, errEndOfInput), errors.Is(err, client.ErrGatewayDown), errors.Is(err, errInterrupted),
			errors.As(err, new(*readError)):
			return err
		}
		fmt.Fprintf(o.a.stderr, "openclaw: %s\n(try again, or - to skip)\n", api.EscapeControl(err.Error()))
	}
}

func (o *onboarding) askModel() error {
	w := o.a.stderr
	now := "none"
	if o.st.Model != "" {
		now = o.st.Model
	}
	fmt.Fprintf(w, "\n1. Model (now: %s)\n", api.EscapeControl(now))
	def := 0
	if why := o.st.LocalRunnerError; why != "" {
		fmt.Fprintf(w, "This gateway cannot run local models: %s\n", api.EscapeControl(oneLine(why)))
		def = 2
	}
	i, err := o.p.choose("Where the model comes from:", []string{
		"a local model from the catalog", "a model file (.gguf) from this computer", "an Ollama model", "a remote provider (API key)",
	}, def, "skip: keep the model as it is")
	if err != nil {
		return err
	}
	switch i {
	case 0:
		return o.askCatalog()
	case 1:
		path, err := o.p.text("Path of the .gguf file", "", false)
		if err != nil {
			return err
		}
		if path == "" {
			return errSkip
		}
		abs, err := localModelFile(path)
		if err != nil {
			return err
		}
		return o.applyModel(&modelPlan{source: sourceFile, name: abs})
	case 2:
		return o.askOllama()
	}
	return o.askRemote()
}

func (o *onboarding) askCatalog() error {
	list, err := o.cl.Models(o.ctx)
	if err != nil {
		return &readError{fmt.Errorf("list the models: %w", err)}
	}
	var chat []api.ModelInfo
	var labels []string
	def := 0
	for _, m := range list {
		if m.Kind == "embedding" || !m.Catalog && !m.Installed {
			continue
		}
		if m.Default == "chat" {
			def = len(chat)
		}
		state := formatBytes(m.Size)
		if m.Installed {
			state = "installed"
		}
		label := m.Name + " — " + state
		if m.Description != "" {
			label += " — " + clip(oneLine(m.Description), 60)
		}
		chat = append(chat, m)
		labels = append(labels, api.EscapeControl(label))
	}
	if len(chat) == 0 {
		return errors.New("the catalog lists no chat models")
	}
	i, err := o.p.choose("Model:", labels, def, "")
	if err != nil {
		return err
	}
	return o.applyModel(&modelPlan{source: sourceCatalog, name: chat[i].Name})
}

func (o *onboarding) askOllama() error {
	addr := defaultOllamaURL
	if v, ok, err := o.configString("models.providers.ollama.baseUrl"); err != nil {
		return err
	} else if ok && v != "" {
		addr = v
	}
	for {
		u, err := o.p.text("Ollama address", addr, false)
		if err != nil {
			return err
		}
		if err := checkHTTPURL(u); err != nil {
			fmt.Fprintln(o.a.stderr, err)
			continue
		}
		addr = u
		break
	}
	id, err := o.p.text("Model, as `ollama list` names it", defaultOllamaModel, false)
	if err != nil {
		return err
	}
	return o.applyModel(&modelPlan{source: sourceOllama, name: strings.TrimPrefix(id, "ollama/"), baseURL: addr})
}

func (o *onboarding) askRemote() error {
	labels := make([]string, len(remoteOrder))
	for i, p := range remoteOrder {
		labels[i] = remoteProviders[p].label
	}
	i, err := o.p.choose("Provider:", labels, 0, "")
	if err != nil {
		return err
	}
	p := remoteOrder[i]
	_, has, err := o.configValue("models.providers." + p + ".apiKey")
	if err != nil {
		return err
	}
	label := "API key (not shown)"
	if has {
		label = "API key (not shown; Enter keeps the one set)"
	}
	var key string
	for {
		if key, err = o.p.text(label, "", true); err != nil {
			return err
		}
		if key != "" || has {
			break
		}
		fmt.Fprintln(o.a.stderr, "the provider needs an API key (- skips)")
	}
	id, err := o.p.text("Model", remoteProviders[p].model, false)
	if err != nil {
		return err
	}
	return o.applyModel(&modelPlan{source: sourceRemote, provider: p, name: id, apiKey: key})
}

func (o *onboarding) askOwner() error {
	fmt.Fprintln(o.a.stderr, "\n2. Owner: where you write to the assistant from. Only the owner may talk to it, run /approve and change settings from a chat; others get a pairing code.")
	chans := []string{"whatsapp"}
	if list, err := o.cl.Channels(o.ctx); err == nil { // whatsapp is offered anyway
		for _, c := range list {
			if channelName.MatchString(c.Channel) && !slices.Contains(chans, c.Channel) {
				chans = append(chans, c.Channel)
			}
		}
	}
	i, err := o.p.choose("Channel:", chans, 0, "skip: leave the owners as they are")
	if err != nil {
		return err
	}
	ch := chans[i]
	label := "Your number or address on " + ch
	if h := handleHints[ch]; h != "" {
		label += " (e.g. " + h + ")"
	}
	for {
		handle, err := o.p.text(label, "", false)
		if err != nil {
			return err
		}
		if handle == "" {
			return errSkip
		}
		if err := checkHandle(handle); err != nil {
			fmt.Fprintln(o.a.stderr, err)
			continue
		}
		return o.applyOwner(ownerPlan{channel: ch, handle: handle})
	}
}

func (o *onboarding) askZone() error {
	def, err := o.defaultZone()
	if err != nil {
		return err
	}
	fmt.Fprintln(o.a.stderr, "\n3. Time zone: for the date the assistant sees and the daily session reset.")
	for {
		z, err := o.p.text("IANA time zone (e.g. Europe/Madrid)", def, false)
		if err != nil {
			return err
		}
		if z == "" {
			return errSkip
		}
		if err := checkZone(z); err != nil {
			fmt.Fprintln(o.a.stderr, err)
			continue
		}
		return o.applyZone(z)
	}
}

// defaultZone is the time zone the config sets, else this machine's.
func (o *onboarding) defaultZone() (string, error) {
	z, ok, err := o.configString(timezoneKey)
	if err != nil || ok && z != "" {
		return z, err
	}
	return machineZone(), nil
}

// applyModel installs or defines the model and makes it the default.
func (o *onboarding) applyModel(plan *modelPlan) error {
	var ref string
	switch plan.source {
	case sourceCatalog:
		info, err := o.installCatalog(plan.name)
		if err != nil {
			return err
		}
		ref = info.Ref
	case sourceFile:
		info, err := o.importFile(plan.name)
		if err != nil {
			return err
		}
		ref = info.Ref
	case sourceOllama:
		if plan.baseURL == "" {
			plan.baseURL = defaultOllamaURL
			if v, ok, err := o.configString("models.providers.ollama.baseUrl"); err != nil {
				return err
			} else if ok && v != "" {
				plan.baseURL = v
			}
		}
		if err := o.provider("ollama", "ollama", plan.baseURL, plan.name, ""); err != nil {
			return err
		}
		ref = "ollama/" + plan.name
	case sourceRemote:
		def := remoteProviders[plan.provider]
		if plan.apiKey == "" {
			_, has, err := o.configValue("models.providers." + plan.provider + ".apiKey")
			if err != nil {
				return err
			}
			if !has {
				return usagef("--api-key is required: the gateway has no key for %s (or set $%s)", plan.provider, def.env)
			}
		}
		if err := o.provider(plan.provider, def.api, def.baseURL, plan.name, plan.apiKey); err != nil {
			return err
		}
		ref = plan.provider + "/" + plan.name
	case sourceRef:
		_, has, err := o.configValue("models.providers." + plan.provider)
		if err != nil {
			return err
		}
		if !has {
			return usagef("--model %s/%s: the gateway's config defines no provider %s (use ollama/MODEL, openai/MODEL, anthropic/MODEL or gemini/MODEL, or define it with openclaw config set)",
				plan.provider, plan.name, plan.provider)
		}
		ref = plan.provider + "/" + plan.name
	default:
		return fmt.Errorf("unknown model source %q", plan.source)
	}
	return o.useModel(ref)
}

// localModels refuses a local model on a gateway that cannot run one: a
// download it could not use.
func (o *onboarding) localModels() error {
	if why := o.st.LocalRunnerError; why != "" {
		return fmt.Errorf("this gateway cannot run local models (%s): use an Ollama model or a remote provider", oneLine(why))
	}
	return nil
}

// installCatalog pulls a catalog model or URL unless it is installed.
func (o *onboarding) installCatalog(name string) (*api.ModelInfo, error) {
	if err := o.localModels(); err != nil {
		return nil, err
	}
	if !strings.Contains(name, "://") {
		info, err := o.cl.ModelInfo(o.ctx, name)
		var ae *api.Error
		switch {
		case err == nil && info.Kind == "embedding":
			return nil, fmt.Errorf("%s is an embedding model (for memory search), not a chat model", name)
		case err == nil && info.Installed && !info.Missing:
			o.note("%s is installed", info.Name)
			return info, nil
		case err != nil && !(errors.As(err, &ae) && ae.Code == api.CodeNotFound):
			return nil, err
		}
		// Not found: the pull says why.
	}
	p := newPullProgress(o.a.stderr, writerIsTerminal(o.a.stderr), pullLabel(name, ""))
	info, err := o.cl.PullModel(o.ctx, api.PullRequest{Name: name}, p.update)
	p.finish(err == nil)
	if err != nil {
		var ae *api.Error
		switch {
		case o.ctx.Err() != nil:
			fmt.Fprintln(o.a.stderr, "pull stopped: the gateway keeps what it downloaded; onboard again to resume")
		case errors.As(err, &ae) && ae.Code == api.CodePullOffline:
			fmt.Fprintln(o.a.stderr, "download the .gguf file on a machine that is online and give its path as the model (openclaw onboard --model FILE.gguf)")
		}
		return nil, err
	}
	if info.Kind == "embedding" {
		return nil, fmt.Errorf("pulled %s, but it is an embedding model (for memory search), not a chat model", info.Name)
	}
	o.note("pulled %s (%s)", info.Name, formatBytes(info.Size))
	return info, nil
}

// importFile installs a GGUF file of this machine: imported by a gateway
// on this machine, sent to one on another (as `models import`), and sent
// too when the local gateway may not read the file (another user's home).
func (o *onboarding) importFile(path string) (*api.ModelInfo, error) {
	if err := o.localModels(); err != nil {
		return nil, err
	}
	var info *api.ModelInfo
	var err error
	if !o.cl.Remote() {
		info, err = o.cl.ImportModel(o.ctx, api.ImportModelRequest{Path: path})
		var ae *api.Error
		if errors.As(err, &ae) && ae.Code == api.CodeForbidden {
			o.note("the gateway may not read %s: sending it instead", path)
			info, err = nil, nil
		}
	}
	if info == nil && err == nil {
		p := newPullProgress(o.a.stderr, writerIsTerminal(o.a.stderr), filepath.Base(path))
		p.verb = "sending"
		info, err = o.cl.UploadModel(o.ctx, path, "", p.update)
		p.finish(err == nil)
		if err != nil && o.ctx.Err() != nil {
			fmt.Fprintln(o.a.stderr, "sending stopped: the gateway keeps what it received for 24 hours; onboard again to resume")
		}
	}
	if err != nil {
		return nil, err
	}
	if info.Kind == "embedding" {
		return nil, fmt.Errorf("imported %s, but it is an embedding model (for memory search), not a chat model", info.Name)
	}
	o.note("imported %s (%s)", info.Name, formatBytes(info.Size))
	return info, nil
}

// providerValue is a new models.providers.<name>, as onboard.js writes it.
type providerValue struct {
	API     string          `json:"api"`
	BaseURL string          `json:"baseUrl,omitempty"`
	Models  []providerModel `json:"models"`
	APIKey  string          `json:"apiKey,omitempty"`
}

type providerModel struct {
	ID string `json:"id"`
}

// provider defines models.providers.<name> with modelID, or adds to the
// one there: its address when it differs, the key when one is given, the
// model to a list that lacks it (its other models and keys stay).
func (o *onboarding) provider(name, apiName, baseURL, modelID, apiKey string) error {
	base := "models.providers." + name
	raw, has, err := o.configValue(base)
	if err != nil {
		return err
	}
	var cur map[string]json.RawMessage
	if !has || json.Unmarshal(raw, &cur) != nil || cur == nil {
		v := providerValue{API: apiName, BaseURL: baseURL, Models: []providerModel{{ID: modelID}}, APIKey: apiKey}
		shown := v
		if shown.APIKey != "" {
			shown.APIKey = config.Redacted
		}
		return o.setShown(base, v, shown)
	}
	var curURL string
	_ = json.Unmarshal(cur["baseUrl"], &curURL) // not a string: set it
	if baseURL != "" && curURL != baseURL {
		if err := o.setValue(base+".baseUrl", baseURL); err != nil {
			return err
		}
	}
	if apiKey != "" {
		if err := o.setShown(base+".apiKey", apiKey, config.Redacted); err != nil {
			return err
		}
	}
	var models []json.RawMessage
	if json.Unmarshal(cur["models"], &models) != nil || len(models) == 0 {
		return nil // no list: the provider takes any model id
	}
	for _, m := range models {
		var id struct{ ID string }
		if json.Unmarshal(m, &id) == nil && id.ID == modelID {
			return nil
		}
	}
	// The list as the gateway shows it goes back with the model added:
	// never a secret it hid.
	if strings.Contains(string(cur["models"]), `"`+config.Redacted+`"`) {
		return fmt.Errorf("cannot add %s to %s.models: the list holds hidden values; add {\"id\": %q} with openclaw config set", modelID, base, modelID)
	}
	entry, err := json.Marshal(providerModel{ID: modelID})
	if err != nil {
		return fmt.Errorf("encode the model entry: %w", err)
	}
	return o.setValue(base+".models", append(models, entry))
}

// useModel makes ref the default agents' model: agents.defaults.model, or
// its primary when it is {primary, fallbacks} (the dashboard's
// setDefaultModel).
func (o *onboarding) useModel(ref string) error {
	key := modelKey
	raw, has, err := o.configValue(key)
	if err != nil {
		return err
	}
	var cur string
	if has {
		var obj struct {
			Primary string `json:"primary"`
		}
		if json.Unmarshal(raw, &cur) != nil && json.Unmarshal(raw, &obj) == nil {
			key, cur = key+".primary", obj.Primary
		}
	}
	if cur == ref {
		o.note("%s is already the default model", ref)
		return nil
	}
	return o.setValue(key, ref)
}

// applyOwner adds the owner to the channel's allowFrom and to
// commands.ownerAllowFrom.
func (o *onboarding) applyOwner(ow ownerPlan) error {
	allowKey := "channels." + ow.channel + ".allowFrom"
	allow, err := o.configList(allowKey)
	if err != nil {
		return err
	}
	if !slices.Contains(allow, ow.handle) {
		if err := o.setValue(allowKey, append(allow, ow.handle)); err != nil {
			return err
		}
	}
	owners, err := o.configList(ownersKey)
	if err != nil {
		return err
	}
	id := ow.channel + ":" + ow.handle
	if slices.Contains(owners, id) {
		o.note("%s is already an owner", id)
		return nil
	}
	return o.setValue(ownersKey, append(owners, id))
}

// applyZone sets agents.defaults.userTimezone.
func (o *onboarding) applyZone(z string) error {
	cur, _, err := o.configString(timezoneKey)
	if err != nil {
		return err
	}
	if cur == z {
		o.note("the time zone is already %s", z)
		return nil
	}
	return o.setValue(timezoneKey, z)
}

// sendTest sends the test message and prints the reply as it streams.
func (o *onboarding) sendTest(text string) error {
	if !o.f.asJSON {
		fmt.Fprintf(o.a.stderr, "Sending %q…\n", text)
	}
	v := &turnView{out: o.a.stdout, err: o.a.stderr, quiet: o.f.asJSON}
	v.approval = func(ap *api.Approval) { o.a.printApprovalHint(v, ap, "") }
	res, err := o.a.runTurn(o.ctx, o.cl, api.SendRequest{Text: text}, v, nil)
	if err != nil {
		v.breakLines()
		if errors.Is(err, errTurnStopped) || errors.Is(err, errInterrupted) {
			return errInterrupted
		}
		err = turnFailure(err)
		var ae *api.Error
		if errors.As(err, &ae) {
			return &api.Error{Code: ae.Code, Message: "the test message failed: " + ae.Message}
		}
		return fmt.Errorf("the test message failed: %w", err)
	}
	v.finish(res)
	o.test = &onboardTest{Reply: res.Reply, Model: res.Model}
	if res.Model != "" {
		o.note("answered by %s", res.Model)
	}
	return nil
}

// configValue reads key from the gateway's config (secrets redacted);
// false when the config has no such key.
func (o *onboarding) configValue(key string) (json.RawMessage, bool, error) {
	v, err := o.cl.ConfigGet(o.ctx, key)
	var ae *api.Error
	switch {
	case errors.As(err, &ae) && ae.Code == api.CodeNotFound:
		return nil, false, nil
	case err != nil:
		return nil, false, &readError{fmt.Errorf("read %s: %w", key, err)}
	case len(v.Value) == 0 || string(v.Value) == "null":
		return nil, false, nil
	}
	return v.Value, true, nil
}

// configString reads a string key ("" when it is not a string).
func (o *onboarding) configString(key string) (string, bool, error) {
	raw, has, err := o.configValue(key)
	if err != nil || !has {
		return "", false, err
	}
	var s string
	_ = json.Unmarshal(raw, &s) // not a string: ""
	return s, true, nil
}

// configList reads a list of strings (nil when unset or not a list).
func (o *onboarding) configList(key string) ([]string, error) {
	raw, has, err := o.configValue(key)
	if err != nil || !has {
		return nil, err
	}
	var list []string
	_ = json.Unmarshal(raw, &list) // not a list of strings: replaced, as the dashboard does
	return list, nil
}

// setValue writes key = value through the gateway.
func (o *onboarding) setValue(key string, value any) error {
	return o.setShown(key, value, value)
}

// setShown writes key = value through the gateway and records it, shown
// as shown (a secret hidden).
func (o *onboarding) setShown(key string, value, shown any) error {
	data, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	res, err := o.cl.ConfigSet(o.ctx, api.ConfigSetRequest{Key: key, Value: data})
	if err != nil {
		var ae *api.Error
		if errors.As(err, &ae) {
			return &api.Error{Code: ae.Code, Message: "set " + key + ": " + ae.Message}
		}
		return fmt.Errorf("set %s: %w", key, err)
	}
	if res.RestartNeeded {
		o.restartNeeded = true
		if res.RestartHow != "" {
			o.restartHow = res.RestartHow
		}
	}
	if res.Unchanged {
		o.note("%s already says so", key)
		return nil
	}
	show, err := json.Marshal(shown)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	o.set = append(o.set, onboardSet{Key: key, Value: show})
	if !o.f.asJSON {
		fmt.Fprintf(o.a.stdout, "set %s = %s\n", api.EscapeControl(key), api.EscapeControl(string(show)))
	}
	return nil
}

// note says something on stderr that changes nothing.
func (o *onboarding) note(format string, args ...any) {
	if !o.f.asJSON {
		fmt.Fprintln(o.a.stderr, api.EscapeControl(fmt.Sprintf(format, args...)))
	}
}

// aborted says whether err is the user's stop: Ctrl-C (at a question, a
// pull, a turn) or Ctrl-D at a question.
func (o *onboarding) aborted(err error) bool {
	return o.ctx.Err() != nil || errors.Is(err, errEndOfInput) || errors.Is(err, errInterrupted) || errors.Is(err, errTurnStopped)
}

// written says what was written, for a stop or a failure.
func (o *onboarding) written() string {
	if len(o.set) == 0 {
		return "nothing was written"
	}
	keys := make([]string, len(o.set))
	for i, s := range o.set {
		keys[i] = s.Key
	}
	msg := "already written: " + strings.Join(keys, ", ")
	if o.restartNeeded {
		msg += " (restart the gateway to apply: " + o.restartText() + ")"
	}
	return msg
}

// restartText is how to restart the gateway.
func (o *onboarding) restartText() string {
	switch {
	case o.restartHow != "":
		return o.restartHow
	case o.cl != nil && o.cl.Remote():
		return "restart openclaw-gateway on the gateway's machine"
	}
	return "openclaw gateway restart, or stop openclaw-gateway run and start it again"
}

// finish prints the outcome: the JSON object, or what is left to do.
func (o *onboarding) finish(err error) error {
	a := o.a
	res := onboardResult{OK: err == nil, Set: o.set, RestartNeeded: o.restartNeeded, Test: o.test}
	if res.Set == nil {
		res.Set = []onboardSet{}
	}
	if o.restartNeeded {
		res.RestartHow = o.restartText()
	}
	if err != nil {
		if o.aborted(err) {
			how := "stopped"
			if errors.Is(err, errEndOfInput) {
				how = "stopped at the end of input"
			}
			err = &exitError{code: 130, msg: "onboarding " + how + "; " + o.written()}
		} else if len(o.set) > 0 && !o.f.asJSON {
			fmt.Fprintf(a.stderr, "openclaw: %s\n", o.written())
		}
		if o.f.asJSON && (len(o.set) > 0 || o.aborted(err)) {
			// The standard failure object, with what was written.
			res.Error = &api.Error{Code: errorCode(err), Message: strings.TrimSpace(err.Error())}
			if werr := writeJSON(a.stdout, res); werr != nil {
				return errors.Join(err, werr)
			}
		}
		return err
	}
	if o.f.asJSON {
		return writeJSON(a.stdout, res)
	}
	if len(o.set) == 0 {
		fmt.Fprintln(a.stdout, "nothing to change: the gateway's config already says so")
	}
	if o.restartNeeded {
		target := ""
		switch {
		case a.gateway != "":
			target = " --gateway " + shellQuote(a.gateway)
		case a.socket != "":
			target = " --socket " + shellQuote(a.socket)
		}
		fmt.Fprintf(a.stdout, "restart the gateway to apply it (%s), then send a test message: openclaw agent hello%s\n",
			api.EscapeControl(o.restartText()), target)
	}
	return nil
}

// prompter asks questions on a terminal: the question on w, the answer
// from in, one line at a time.
type prompter struct {
	ctx context.Context
	in  io.Reader
	br  *bufio.Reader
	w   io.Writer
}

// read prints prompt and returns the line typed, trimmed: without echo
// when secret and in is a terminal. Ctrl-C is ctx's error, Ctrl-D
// errEndOfInput.
func (p *prompter) read(prompt string, secret bool) (string, error) {
	type answer struct {
		s   string
		err error
	}
	ch := make(chan answer, 1)
	var restore func()
	if f, ok := p.in.(*os.File); ok && secret && isTerminal(f) {
		// The terminal echoes nothing until the line ends. Its state is
		// put back here, after the line and at a Ctrl-C meanwhile:
		// readline.ReadPassword's own restore keeps echo off (it saves a
		// pointer to the state it then changes). Echo goes off before
		// the prompt shows (raw mode, set at once, TCSANOW: nothing typed
		// ahead is lost), not in ReadPassword's goroutine: a key typed as
		// soon as the prompt appears was echoed otherwise.
		fd := int(f.Fd())
		if st, err := readline.GetState(fd); err == nil {
			restore = func() { _ = readline.Restore(fd, st) }
			if _, err := readline.MakeRaw(fd); err != nil {
				restore()
				return "", fmt.Errorf("turn the terminal's echo off: %w", err)
			}
		}
		fmt.Fprint(p.w, prompt)
		go func() {
			b, err := readline.ReadPassword(fd)
			ch <- answer{string(b), err}
		}()
	} else {
		fmt.Fprint(p.w, prompt)
		go func() {
			s, err := p.br.ReadString('\n')
			ch <- answer{s, err}
		}()
	}
	select {
	case <-p.ctx.Done():
		if restore != nil {
			restore()
		}
		fmt.Fprintln(p.w)
		return "", p.ctx.Err()
	case ans := <-ch:
		if restore != nil {
			restore()
			fmt.Fprintln(p.w) // the Enter was not echoed
		}
		s := strings.TrimSpace(ans.s)
		switch {
		case ans.err != nil && s == "" && errors.Is(ans.err, io.EOF):
			fmt.Fprintln(p.w)
			return "", errEndOfInput
		case ans.err != nil && s == "":
			return "", fmt.Errorf("read the answer: %w", ans.err)
		}
		return s, nil
	}
}

// choose shows numbered options and returns the index picked (Enter: def);
// skip, when set, is one more option that returns errSkip, as "-" does.
func (p *prompter) choose(title string, options []string, def int, skip string) (int, error) {
	fmt.Fprintln(p.w, title)
	all := options
	if skip != "" {
		all = append(slices.Clip(options), skip)
	}
	for i, o := range all {
		fmt.Fprintf(p.w, "  %d) %s\n", i+1, o)
	}
	for {
		s, err := p.read(fmt.Sprintf("Choice [%d]: ", def+1), false)
		if err != nil {
			return 0, err
		}
		if s == "" {
			return def, nil
		}
		if s == "-" {
			return 0, errSkip
		}
		n, err := strconv.Atoi(s)
		switch {
		case err == nil && n >= 1 && n <= len(options):
			return n - 1, nil
		case err == nil && n == len(all) && skip != "":
			return 0, errSkip
		}
		fmt.Fprintf(p.w, "pick a number from 1 to %d (- skips)\n", len(all))
	}
}

// text asks for a line; Enter takes def, "-" is errSkip.
func (p *prompter) text(label, def string, secret bool) (string, error) {
	prompt := label
	if def != "" {
		prompt += " [" + def + "]"
	}
	s, err := p.read(prompt+": ", secret)
	switch {
	case err != nil:
		return "", err
	case s == "-":
		return "", errSkip
	case s == "":
		return def, nil
	}
	return s, nil
}
