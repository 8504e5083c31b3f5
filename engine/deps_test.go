package engine_test

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/openclaw-edge/edge"

type pkg struct {
	ImportPath string
	Name       string
	Doc        string
	Standard   bool
	Deps       []string
	Imports    []string
}

// listPackages runs `go list -deps -json` over the module, as tailscale's
// deptest does, so a wrong import fails `make test`.
func listPackages(t *testing.T, patterns ...string) map[string]pkg {
	t.Helper()
	if testing.Short() {
		t.Skip("runs go list")
	}
	args := append([]string{"list", "-json"}, patterns...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[p.ImportPath] = p
	}
	return pkgs
}

func rel(p string) string { return strings.TrimPrefix(strings.TrimPrefix(p, module), "/") }

// TestImportRules keeps the one-way data flow of docs/design.md §2.
func TestImportRules(t *testing.T) {
	pkgs := listPackages(t, module+"/...")
	// forbidden[prefix of importer] = prefixes it must never depend on.
	forbidden := map[string][]string{
		"engine/agent":    {"engine/store", "engine/session", "engine/transcript", "engine/gateway", "engine/channel", "engine/config", "models/"},
		"engine/tool":     {"engine/gateway", "engine/channel", "engine/store", "models/"},
		"engine/store":    {"engine/gateway", "engine/channel", "engine/tool", "models/"},
		"engine/session":  {"engine/gateway", "engine/channel", "engine/tool", "models/", "engine/agent"},
		"engine/policy":   {"engine/"},
		"engine/prompt":   {"engine/gateway", "engine/channel", "engine/store", "engine/session", "models/"},
		"engine/delivery": {"engine/gateway", "engine/store", "engine/session", "models/"},
		"engine/config":   {"engine/gateway", "engine/channel", "engine/store", "models/"},
		"engine/api":      {"engine/gateway", "engine/store", "engine/session", "engine/tool", "engine/channel", "models/"},
		// The turn core: runner, lanes, budget, compaction, commands,
		// approvals. Channel messages reach it through RunTurn
		// (engine/inbound), the control API through its exported calls
		// (engine/localapi); it knows neither, nor channels, access
		// control, the config file or the doctor. (Its test fakes,
		// engine/gateway/gatewaytest, are exempt: see testSupport.)
		"engine/gateway": {"models/", "appliance", "engine/inbound", "engine/schedule", "engine/outbox", "engine/localapi", "engine/channel", "engine/access", "engine/config", "engine/doctor", "engine/routing", "engine/pair"},
		// The channel side: inbox, dedup, per-chat workers, access,
		// routing, pairing codes; it hands turns to the gateway and replies
		// to the outbox, and never serves HTTP or sees a model or adapter.
		"engine/inbound": {"engine/localapi", "engine/schedule", "models/", "appliance", "cli", "engine/store", "engine/channel/email", "engine/channel/whatsapp", "engine/channel/imessage", "engine/channel/bluebubbles", "engine/channel/telegram"},
		// The scheduler produces turns like a channel does: it holds the
		// gateway (RunTurn) and reaches the channels only through its own
		// Targets interface (engine/inbound implements it); no HTTP, no
		// store, no model, no adapter.
		"engine/schedule": {"engine/inbound", "engine/outbox", "engine/localapi", "engine/channel", "engine/store", "engine/config", "models/", "appliance", "cli"},
		// The durable outbox: the store and the adapters it is handed.
		"engine/outbox": {"engine/gateway", "engine/inbound", "engine/localapi", "engine/agent", "engine/tool", "engine/routing", "models/", "appliance", "cli", "engine/store"},
		// The control API's handlers translate HTTP to calls: no models,
		// no store (only appliance imports them).
		"engine/localapi": {"models/", "engine/store", "appliance", "cli"},
		// The dashboard's files: the wire vocabulary at most.
		"engine/dashboard": {"engine/gateway", "engine/inbound", "engine/localapi", "engine/store", "engine/session", "engine/tool", "engine/channel", "engine/config", "models/", "appliance", "cli"},
		"engine/logfile":   {"engine/"},
		// Seeding a workspace writes our templates, nothing more.
		"engine/workspace": {"engine/", "models/", "appliance", "cli"},
		// The memory index reads files and calls embedders through its own
		// interfaces: never the gateway, sessions, the store, tools,
		// channels or a model provider (the wiring passes those in).
		"engine/memory": {"engine/gateway", "engine/session", "engine/store", "engine/tool", "engine/channel", "engine/agent", "engine/prompt", "engine/config", "models/", "appliance", "cli"},
		// A channel in a child process: the pipe, never an adapter.
		"engine/channel/channelproc": {"engine/channel/whatsapp", "engine/channel/email", "engine/channel/imessage", "engine/gateway", "engine/store", "models/", "appliance", "cli"},
		// WhatsApp's config, linked by the gateway: not the adapter.
		"engine/channel/whatsapp/waconfig": {"engine/channel/whatsapp", "engine/channel/channelproc", "engine/gateway", "engine/store", "models/", "appliance", "cli"},
		// The keyword index's child-process client: the gateway links it,
		// so never bleve itself (the child, appliance/memindex, does).
		"engine/memory/bleveproc": {"engine/memory/bleve", "engine/gateway", "engine/session", "engine/store", "engine/tool", "engine/channel", "engine/agent", "engine/prompt", "engine/config", "models/", "appliance", "cli"},
		"engine/doctor":           {"engine/gateway", "engine/store", "engine/session", "engine/tool", "engine/channel", "engine/config", "models/", "appliance", "cli"},
		"models/":                 {"engine/channel", "engine/gateway", "engine/store", "engine/session", "engine/tool", "appliance", "cli"},
		"cli":                     {"engine/store", "engine/session", "engine/tool", "engine/gateway", "engine/channel", "models/", "appliance", "engine/pair/lan", "engine/localapi"},
		// Pairing, one tree: the protocol (engine/pair) and discovery
		// (engine/pair/mdns), which the CLI links for its side, and the
		// gateway's TLS listener (engine/pair/lan, the LAN side's
		// authentication layer), which the CLI must not link. None of it
		// reaches the turn core, storage, tools, channels, models or the
		// handlers behind it (it learns records through engine.Records).
		"engine/pair":       {"engine/gateway", "engine/inbound", "engine/outbox", "engine/localapi", "engine/store", "engine/session", "engine/tool", "engine/channel", "engine/agent", "models/", "appliance", "cli"},
		"engine/transcript": {"engine/store", "engine/session", "engine/gateway"},
		// Channel adapters translate platform events only: they never see
		// policy, routing, sessions, the store, tools, models or each other
		// (bluebubbles is the iMessage adapter's second backend).
		"engine/channel": {"engine/gateway", "engine/access", "engine/routing", "engine/session", "engine/store", "engine/tool", "engine/agent", "engine/prompt", "engine/config", "models/", "appliance"},
		// The identity rules and the access-key check: a leaf that
		// config, and so the CLI, link (standard library only, checked
		// below by TestLeavesAreStandardLibrary).
		"engine/access/identity": {"engine/", "models/", "appliance", "cli"},
		"engine/access":          {"engine/gateway", "engine/session", "engine/tool", "engine/agent", "engine/routing", "models/", "engine/channel/email", "engine/channel/whatsapp", "engine/channel/imessage", "engine/channel/bluebubbles", "engine/channel/telegram"},
		// The OpenClaw state-dir reader (openclaw-migrate links it) reads foreign
		// files only: the vocabulary and the transcript line format
		// (engine/transcriptfmt), nothing else of ours — not even
		// engine/transcript's tree and context code ("engine/transcript/"
		// bans it and what is under it, not engine/transcriptfmt).
		"cli/openclawdir": {"engine/access", "engine/agent", "engine/api", "engine/channel", "engine/config", "engine/delivery", "engine/doctor", "engine/gateway", "engine/logfile", "engine/memory", "engine/policy", "engine/prompt", "engine/routing", "engine/session", "engine/store", "engine/tool", "engine/transcript/", "models/", "appliance", "cli/command"},
		// The transcript line format the CLI shares with the engine: a leaf
		// (standard library only, checked by TestLeavesAreStandardLibrary).
		"engine/transcriptfmt": {"engine/", "models/", "appliance", "cli"},
		// Routing builds session keys from ids in access's canonical form
		// (access.Canonical, the one identity rule; access brings the
		// channel vocabulary, never an adapter); access never imports
		// routing.
		"engine/routing": {"engine/gateway", "engine/session", "engine/store", "engine/tool", "engine/agent", "engine/channel/email", "engine/channel/whatsapp", "engine/channel/imessage", "engine/channel/bluebubbles", "engine/channel/telegram", "models/"},
		// The model resolver builds provider clients only: no channel side,
		// no storage (cooldowns come as a failover.Store), no memory or exec.
		"appliance/modelset": {"engine/inbound", "engine/outbox", "engine/localapi", "engine/channel", "engine/store", "engine/memory", "engine/tool/exec", "cli"},
	}
	// testSupport are test-fake packages under a rule's prefix that play
	// the parts the rule keeps out (gatewaytest is a channel adapter).
	testSupport := map[string]string{"engine/gateway/gatewaytest": "engine/gateway"}
	// allowed are packages a rule's bans would catch that its importers may
	// use: policy the vocabulary; adapters the identity leaf (standard
	// library only: ASCII-only case folding, no access policy).
	allowed := map[string][]string{
		"engine/policy":  {"engine"},
		"engine/channel": {"engine/access/identity"},
	}
	for _, p := range pkgs {
		from := rel(p.ImportPath)
		for prefix, bans := range forbidden {
			if from != strings.TrimSuffix(prefix, "/") && !strings.HasPrefix(from, prefix) {
				continue
			}
			if testSupport[from] == prefix {
				continue
			}
			for _, d := range p.Deps {
				if !strings.HasPrefix(d, module+"/") {
					continue
				}
				to := rel(d)
				for _, ban := range bans {
					if to == strings.TrimSuffix(ban, "/") || strings.HasPrefix(to, ban) {
						if slices.Contains(allowed[prefix], to) {
							continue
						}
						t.Errorf("%s depends on %s (forbidden by docs/design.md §2)", from, to)
					}
				}
			}
		}
	}
}

// TestDomainSpeaksNoWire: the memory index and the model registry know
// nothing of the control API's wire types (engine/api) or its handlers;
// where their types meet the wire's, an adapter converts (appliance's
// memory_api.go, models/catalog/catalogapi). The index serves no HTTP at
// all. Exact packages: a prefix rule of TestImportRules would take
// catalogapi in too.
func TestDomainSpeaksNoWire(t *testing.T) {
	pkgs := listPackages(t, module+"/engine/memory", module+"/models/catalog")
	if len(pkgs) != 2 {
		t.Fatalf("go list found %d packages, want engine/memory and models/catalog", len(pkgs))
	}
	for _, p := range pkgs {
		for _, d := range p.Deps {
			if d == module+"/engine/api" || strings.HasPrefix(d, module+"/engine/localapi") {
				t.Errorf("%s depends on %s", rel(p.ImportPath), rel(d))
			}
			if p.ImportPath == module+"/engine/memory" && d == "net/http" {
				t.Errorf("engine/memory depends on net/http: the control API's memory routes are engine/localapi's")
			}
		}
	}
}

// TestHTTPStaysInTheHandlers: the turn core, the channel side and the
// outbox import no HTTP serving code; the control API is engine/localapi's
// (only appliance imports it).
func TestHTTPStaysInTheHandlers(t *testing.T) {
	pkgs := listPackages(t, module+"/...")
	for _, p := range []string{"engine/gateway", "engine/inbound", "engine/outbox"} {
		for _, imp := range pkgs[module+"/"+p].Imports {
			if imp == "net/http" || imp == "net/http/httptest" {
				t.Errorf("%s imports %s: handlers belong in engine/localapi", p, imp)
			}
		}
	}
	for _, p := range pkgs {
		from := rel(p.ImportPath)
		if from == "appliance" || strings.HasPrefix(from, "engine/localapi") {
			continue
		}
		for _, imp := range p.Imports {
			if imp == module+"/engine/localapi" {
				t.Errorf("%s imports engine/localapi; only the wiring (appliance) may", from)
			}
		}
	}
}

// TestVocabularyIsStandardLibrary: the engine package imports only std.
func TestVocabularyIsStandardLibrary(t *testing.T) {
	pkgs := listPackages(t, "-deps", module+"/engine")
	for _, p := range pkgs {
		if !p.Standard && p.ImportPath != module+"/engine" {
			t.Errorf("engine depends on %s; the vocabulary may import only the standard library", p.ImportPath)
		}
	}
}

// TestLeavesAreStandardLibrary: packages that every side links (package
// config, and with it the CLI, checks the owner's ids with
// engine/access/identity, the rules the gateway matches them with; the
// CLI's OpenClaw reader and engine/transcript share engine/transcriptfmt)
// import only the standard library.
func TestLeavesAreStandardLibrary(t *testing.T) {
	for _, leaf := range []string{"engine/access/identity", "engine/transcriptfmt"} {
		for _, p := range listPackages(t, "-deps", module+"/"+leaf) {
			if !p.Standard && p.ImportPath != module+"/"+leaf {
				t.Errorf("%s depends on %s; it may import only the standard library", leaf, p.ImportPath)
			}
		}
	}
}

// TestAdaptersIndependent: no channel adapter imports another (the
// iMessage adapter's BlueBubbles backend excepted), so each can be left
// out of a build by its tag.
func TestAdaptersIndependent(t *testing.T) {
	pkgs := listPackages(t, module+"/engine/channel/...")
	for _, p := range pkgs {
		from := rel(p.ImportPath)
		for _, d := range p.Deps {
			to := rel(d)
			if !strings.HasPrefix(to, "engine/channel/") || to == from || to == "engine/channel/channeltest" {
				continue
			}
			// A test-support package (whatsapptest) drives its own adapter.
			if strings.HasSuffix(from, "test") && strings.HasPrefix(from, to+"/") {
				continue
			}
			if from == "engine/channel/imessage" && to == "engine/channel/bluebubbles" {
				continue
			}
			// channelproc is the pipe to a child process, not an adapter;
			// an adapter's own config package is its own.
			if to == "engine/channel/channelproc" || strings.HasPrefix(from, "engine/channel/whatsapp") && to == "engine/channel/whatsapp/waconfig" {
				continue
			}
			t.Errorf("adapter %s imports adapter %s", from, to)
		}
	}
}

// TestCLIDeps: the CLI links only the API client, wire types, vocabulary and
// config — never storage, channels, models or the gateway. SQLite and zstd
// are linked for one job, reading a foreign OpenClaw store (issue 12's
// migration), and only by openclaw-migrate (cli/migrate/openclaw-migrate):
// in openclaw they slowed every command's start (`openclaw status` 22.1 ms
// against 19.5 ms without them, `openclaw --version` 17.6 against 14.5 ms),
// so openclaw's `migrate` runs that program. Within it only cli/openclawdir
// may import SQLite.
func TestCLIDeps(t *testing.T) {
	const helper = module + "/cli/migrate/openclaw-migrate"
	cli := listPackages(t, "-deps", module+"/cli")
	for p := range cli {
		if strings.HasPrefix(p, "modernc.org/sqlite") || strings.HasPrefix(p, "github.com/klauspost/compress") ||
			p == module+"/cli/migrate" || p == module+"/cli/openclawdir" {
			t.Errorf("the openclaw CLI links %s; OpenClaw's store is read by openclaw-migrate (cli/migrate/openclaw-migrate) only", p)
		}
	}
	migrate := listPackages(t, "-deps", helper)
	if _, ok := migrate[module+"/cli/openclawdir"]; !ok {
		t.Errorf("openclaw-migrate (cli/migrate/openclaw-migrate) does not link cli/openclawdir")
	}
	for _, pkgs := range []map[string]pkg{cli, migrate} {
		for _, p := range pkgs {
			if strings.Contains(p.ImportPath, "bbolt") || strings.Contains(p.ImportPath, "bleve") || strings.Contains(p.ImportPath, "llama") ||
				strings.Contains(p.ImportPath, "whatsmeow") || strings.Contains(p.ImportPath, "go-imap") {
				t.Errorf("the CLI links %s", p.ImportPath)
			}
			// The OpenClaw reader links, of ours, the transcript line format
			// and the vocabulary only: a new package it imports must be as pure.
			if p.ImportPath == module+"/cli/openclawdir" {
				for _, d := range p.Deps {
					if strings.HasPrefix(d, module+"/") && d != module+"/engine/transcriptfmt" && d != module+"/engine" {
						t.Errorf("cli/openclawdir depends on %s; it may link only engine/transcriptfmt and the vocabulary of ours", rel(d))
					}
				}
			}
			if !strings.HasPrefix(p.ImportPath, module+"/") || p.ImportPath == module+"/cli/openclawdir" {
				continue
			}
			for _, imp := range p.Imports {
				if strings.HasPrefix(imp, "modernc.org/sqlite") {
					t.Errorf("%s imports %s; only cli/openclawdir may (it reads OpenClaw's store)", rel(p.ImportPath), imp)
				}
			}
		}
	}
}

// TestGatewayDeps: the gateway (appliance) never links llama.cpp — not even
// in the default (cgo) build — so its idle RSS stays the pure build's
// (docs/design.md §11); local models run in openclaw-runner (appliance/runner),
// which must link it.
func TestGatewayDeps(t *testing.T) {
	const llama = "github.com/ollama/ollama/llama"
	for p := range listPackages(t, "-deps", module+"/appliance") {
		if p == llama || strings.HasPrefix(p, llama+"/") {
			t.Errorf("the gateway links %s; local models belong in openclaw-runner", p)
		}
		// bleve's inits and open index cost every start and every idle
		// hour: the keyword index runs in openclaw-memindex
		// (engine/memory/bleveproc).
		if strings.HasPrefix(p, "github.com/blevesearch/") || p == module+"/engine/memory/bleve" {
			t.Errorf("the gateway links %s; the memory keyword index belongs in openclaw-memindex (appliance/memindex)", p)
		}
		// WhatsApp's library, protobufs and SQLite: openclaw-whatsapp
		// (engine/channel/channelproc); the gateway links its config only.
		if strings.HasPrefix(p, "go.mau.fi/") || strings.HasPrefix(p, "modernc.org/sqlite") || p == module+"/engine/channel/whatsapp" {
			t.Errorf("the gateway links %s; WhatsApp belongs in openclaw-whatsapp (appliance/whatsapp)", p)
		}
	}
	if _, ok := listPackages(t, "-deps", module+"/appliance/memindex")[module+"/engine/memory/bleve"]; !ok {
		t.Errorf("openclaw-memindex (appliance/memindex) does not link engine/memory/bleve")
	}
	// The Makefile's helpers run with `go run` before every build and
	// bench: linking llama.cpp would compile it (minutes) with the wrong
	// flags first.
	for _, tool := range []string{"appliance/runnervariant", "appliance/benchlocal"} {
		for p := range listPackages(t, "-deps", module+"/"+tool) {
			if p == llama || strings.HasPrefix(p, llama+"/") {
				t.Errorf("%s links %s; it must stay pure Go", tool, p)
			}
		}
	}
	if _, ok := listPackages(t, "-deps", module+"/appliance/runner")[llama]; !ok {
		t.Errorf("openclaw-runner (appliance/runner) does not link %s", llama)
	}
}

// TestPackageDocs: every package says what it is for; no util packages.
func TestPackageDocs(t *testing.T) {
	pkgs := listPackages(t, module+"/...")
	for _, p := range pkgs {
		switch path.Base(p.ImportPath) {
		case "util", "utils", "common", "helpers", "misc":
			t.Errorf("package %s: name it after what it does", p.ImportPath)
		}
		if strings.TrimSpace(p.Doc) == "" {
			t.Errorf("package %s has no doc comment", rel(p.ImportPath))
		}
	}
}

// TestDesignCitations: every "docs/design.md §N" a comment cites names a
// section that docs/design.md has (its anchor <a id="sN">), so the
// citations cannot drift from the document.
func TestDesignCitations(t *testing.T) {
	doc, err := os.ReadFile("../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	cite := regexp.MustCompile(`docs/design\.md §([0-9]+(?:\.[0-9]+)?)`)
	n := 0
	err = filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || (!strings.HasSuffix(p, ".go") && d.Name() != "Makefile") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range cite.FindAllSubmatch(src, -1) {
			n++
			if !strings.Contains(string(doc), `<a id="s`+string(m[1])+`"></a>`) {
				t.Errorf("%s cites docs/design.md §%s, which has no such section", p, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("found no citations at all: is the walk wrong?")
	}
}
