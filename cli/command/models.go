package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/engine/api"
)

// modelsCmd is `openclaw models`: the gateway's local GGUF models.
func (a *app) modelsCmd() *cobra.Command {
	c := group("models", "List, pull, import and remove local models",
		a.modelsListCmd(), a.modelsPullCmd(), a.modelsImportCmd(), a.modelsRemoveCmd(), a.modelsInfoCmd())
	c.Long = `Manage the local GGUF models the gateway runs itself (provider "local"): the
catalog of known models, downloads, and files you already have. An installed
model NAME is used by agents as "local/NAME".

Everything happens in the gateway: pull downloads into its models directory
(<state-dir>/models); import reads a file on the gateway's machine, or
sends one from this machine to a gateway on another (--gateway).`
	c.Example = `  openclaw models list
  openclaw models pull qwen3-1.7b
  openclaw models import ~/Downloads/Qwen3-4B-Q4_K_M.gguf --name qwen3-4b
  openclaw models info qwen3-1.7b
  openclaw models rm qwen3-1.7b`
	return c
}

func (a *app) modelsListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List installed models and the catalog's",
		Long: `List the installed models and the models of the catalog that can be pulled:
name, whether it is installed, size, context window (tokens), kind (chat or
embedding) and a description. A size with "~" is the catalog's estimate.`,
		Example: `  openclaw models list
  openclaw models list --json | jq -r '.[] | select(.installed) | .ref'`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			list, err := a.client().Models(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				if list == nil {
					list = []api.ModelInfo{}
				}
				return writeJSON(a.stdout, list)
			}
			return a.printModels(cmd.Context(), list)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the models as JSON")
	return cmd
}

// noLocalRunner is the gateway's reason it cannot run local models (no
// openclaw-runner: the pure build), "" when it can or cannot say. Hints
// that would suggest pulling a model ask it first: a pulled file could
// not run.
func (a *app) noLocalRunner(ctx context.Context) string {
	st, err := a.client().Status(ctx)
	if err != nil {
		return ""
	}
	return st.LocalRunnerError
}

func (a *app) printModels(ctx context.Context, list []api.ModelInfo) error {
	if len(list) == 0 {
		fmt.Fprintln(a.stdout, "no models")
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tINSTALLED\tSIZE\tCONTEXT\tKIND\tDESCRIPTION")
	chatInstalled := 0
	defaultChat := ""
	for _, m := range list {
		state := "no"
		switch {
		case m.Missing:
			state = "missing"
		case m.Installed:
			state = "yes"
			if m.Kind == "chat" {
				chatInstalled++
			}
		}
		if m.Default == "chat" {
			defaultChat = m.Name
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", m.Name, state, modelSize(m), contextSize(m.ContextWindow),
			orDash(m.Kind), clip(oneLine(modelDescription(m)), 60))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if chatInstalled == 0 && defaultChat != "" {
		if why := a.noLocalRunner(ctx); why != "" {
			hint := api.NoRunnerHint
			fmt.Fprintf(a.stderr, "No chat model is installed (%s).\n%s.\n", oneLine(why), strings.ToUpper(hint[:1])+hint[1:])
		} else {
			fmt.Fprintf(a.stderr, "No chat model is installed. Download the default one with:\n  openclaw models pull %s\n", defaultChat)
		}
	}
	return nil
}

func modelSize(m api.ModelInfo) string {
	if m.Size <= 0 {
		return "-"
	}
	if !m.Installed && !m.Verified {
		return "~" + formatBytes(m.Size)
	}
	return formatBytes(m.Size)
}

func modelDescription(m api.ModelInfo) string {
	d := m.Description
	if d == "" && m.Installed {
		d = strings.TrimSpace(m.Architecture + " " + m.Quantization)
		if m.Source != "" && m.Source != "catalog" {
			d += ", from " + m.Source
		}
	}
	if m.Default != "" {
		d = "(default " + m.Default + ") " + d
	}
	return orDash(d)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// contextSize renders a context window: 40960 → "40k", 512 → "512".
func contextSize(n int) string {
	switch {
	case n <= 0:
		return "-"
	case n >= 1024 && n%1024 == 0:
		return fmt.Sprintf("%dk", n/1024)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// formatBytes renders a size in decimal units, as Hugging Face shows file
// sizes: "1.1 GB", "397 MB", "36.8 MB".
func formatBytes(n int64) string {
	if n < 1000 {
		return fmt.Sprintf("%d B", n)
	}
	f := float64(n)
	for _, u := range []string{"kB", "MB", "GB", "TB"} {
		f /= 1000
		if f < 1000 || u == "TB" {
			if f >= 100 {
				return fmt.Sprintf("%.0f %s", f, u)
			}
			return fmt.Sprintf("%.1f %s", f, u)
		}
	}
	return fmt.Sprintf("%d B", n)
}

func (a *app) modelsPullCmd() *cobra.Command {
	var (
		name   string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "pull NAME|URL",
		Short: "Download a model into the gateway",
		Long: `Download a model of the catalog (see "openclaw models list"), or a GGUF file
from an https URL (Hugging Face: https://huggingface.co/<repo>/resolve/main/<file>),
into the gateway's models directory, and install it as local/NAME.

The gateway downloads to <file>.part: an interrupted pull (Ctrl-C, a lost
connection) resumes where it stopped when you run it again. The file's
sha256 is checked when the catalog knows it, and the file must be a complete
GGUF model, or nothing is installed. Progress shows on stderr.`,
		Example: `  openclaw models pull qwen3-1.7b
  openclaw models pull bge-small-en-v1.5
  openclaw models pull https://huggingface.co/unsloth/Qwen3-4B-GGUF/resolve/main/Qwen3-4B-Q4_K_M.gguf --name qwen3-4b`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeModels(false),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref := args[0]
			p := newPullProgress(a.stderr, writerIsTerminal(a.stderr), pullLabel(ref, name))
			info, err := a.client().PullModel(cmd.Context(), api.PullRequest{Name: ref, As: name}, p.update)
			p.finish(err == nil)
			if err != nil {
				var ae *api.Error
				switch {
				case errors.Is(err, context.Canceled):
					fmt.Fprintln(a.stderr, "pull stopped: the gateway keeps what it downloaded; run the same pull again to resume")
				case errors.As(err, &ae) && ae.Code == api.CodePullOffline && !asJSON:
					a.offlinePullHint(cmd.Context(), ref, name)
				}
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, info)
			}
			fmt.Fprintf(a.stdout, "pulled %s (%s): use it as %s\n", info.Name, formatBytes(info.Size), info.Ref)
			if !info.Verified {
				fmt.Fprintf(a.stderr, "note: sha256 not checked (no known checksum for %s); the download's sha256 is %s\n", info.Name, info.SHA256)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "install under this name (default: the catalog name, or one made from the URL's file name)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the installed model as JSON")
	return cmd
}

// offlinePullHint shows, for a pull the gateway's machine could not
// download (offline), the commands that download the file elsewhere and
// send it: here when this CLI talks to the gateway over the LAN (this
// machine may well be online), else on "a machine that is online".
func (a *app) offlinePullHint(ctx context.Context, ref, name string) {
	u, file := ref, ""
	if !strings.Contains(ref, "://") {
		u = ""
		if info, err := a.client().ModelInfo(ctx, ref); err == nil && info.URL != "" {
			u, file = info.URL, info.File
		}
		if name == "" {
			name = ref
		}
	}
	if file == "" && u != "" {
		file = pullLabel(strings.SplitN(u, "?", 2)[0], "")
	}
	if file == "" {
		file = "FILE"
	}
	where, gw := "On a machine that is online", " --gateway BOX"
	if a.client().Remote() {
		where, gw = "If this machine is online", ""
		if a.gateway != "" {
			gw = " --gateway " + a.gateway
		}
	}
	fmt.Fprintf(a.stderr, "%s, download the model and send it to the gateway:\n", where)
	if u != "" {
		fmt.Fprintf(a.stderr, "  curl -L -o %s '%s'\n", file, u)
	}
	cmd := "openclaw models import " + file
	if name != "" {
		cmd += " --name " + name
	}
	fmt.Fprintf(a.stderr, "  %s%s\n", cmd, gw)
}

func pullLabel(ref, name string) string {
	if name != "" {
		return name
	}
	if strings.Contains(ref, "://") {
		return filepath.Base(ref)
	}
	return ref
}

// pullProgress shows a transfer's progress on stderr (a pull, an upload):
// a progress bar on a terminal, else a line at every 10 %.
type pullProgress struct {
	w     io.Writer
	tty   bool
	verb  string // "pulling", "sending"
	label string

	bar      *progressbar.ProgressBar
	started  bool
	lastStep int64 // plain lines: the last 10 % step (or 100 MB step) printed
	base     int64 // bar: bytes already there when the pull resumed
	done     int64
	total    int64
}

func newPullProgress(w io.Writer, tty bool, label string) *pullProgress {
	return &pullProgress{w: w, tty: tty, verb: "pulling", label: label, lastStep: -1}
}

func (p *pullProgress) update(done, total int64) {
	first := !p.started
	p.started, p.done, p.total = true, done, total
	if p.tty {
		if p.bar == nil {
			// A resumed download's bar counts only what is left, so the
			// speed and time estimate are right.
			desc, max := p.verb+" "+p.label, total
			if done > 0 {
				p.base = done
				if total > 0 {
					desc = fmt.Sprintf("%s %s (resumed at %d%%)", p.verb, p.label, done*100/total)
					max = total - done
				}
			}
			p.bar = progressbar.NewOptions64(max,
				progressbar.OptionSetWriter(p.w),
				progressbar.OptionSetDescription(desc),
				progressbar.OptionShowBytes(true),
				progressbar.OptionShowCount(),
				progressbar.OptionSetWidth(30),
				progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionSetPredictTime(true),
				progressbar.OptionOnCompletion(func() { fmt.Fprintln(p.w) }),
				// No redraw goroutine for an unknown size: the spinner
				// turns as bytes arrive, and nothing writes after Exit.
				progressbar.OptionSetSpinnerChangeInterval(0),
			)
		}
		_ = p.bar.Set64(done - p.base) // an error only means the bar could not be drawn
		return
	}
	if first && done > 0 {
		if total > 0 {
			fmt.Fprintf(p.w, "resuming %s at %d%% (%s of %s)\n", p.label, done*100/total, formatBytes(done), formatBytes(total))
		} else {
			fmt.Fprintf(p.w, "resuming %s at %s\n", p.label, formatBytes(done))
		}
	}
	step := done / 100_000_000 // unknown size: a line per 100 MB
	if total > 0 {
		step = done * 10 / total
	}
	if step == p.lastStep {
		return
	}
	p.lastStep = step
	if total > 0 {
		fmt.Fprintf(p.w, "%s %s: %d%% (%s of %s)\n", p.verb, p.label, done*100/total, formatBytes(done), formatBytes(total))
	} else {
		fmt.Fprintf(p.w, "%s %s: %s\n", p.verb, p.label, formatBytes(done))
	}
}

// finish ends the bar's line.
func (p *pullProgress) finish(ok bool) {
	if p.bar == nil {
		return
	}
	if ok {
		_ = p.bar.Finish()
		return
	}
	_ = p.bar.Exit() // ends the line (OnCompletion)
}

func (a *app) modelsImportCmd() *cobra.Command {
	var (
		name     string
		copyFile bool
		upload   bool
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Install a GGUF file you already have",
		Long: `Install a GGUF model file as local/NAME. The gateway checks that it is a
complete GGUF model (a truncated download or another kind of file is
refused, and nothing is installed) and records its sha256.

With --gateway (a paired gateway on another machine), or --upload, FILE is
a file here: it is sent to the gateway, with a progress bar, into its models
directory. An upload cut short (a dropped connection, Ctrl-C) resumes where
it stopped when you run the same import again (within 24 hours); the
gateway checks the file's sha256 and its free disk space, and installs
nothing until the whole file arrived intact.

Otherwise the import runs in the gateway process, on the gateway's machine:
FILE is a path there, made absolute here, and the gateway's user must be
able to read it. Without --copy the file is used where it is and must stay
there; with --copy it is copied into the gateway's models directory.

NAME defaults to the file name in lowercase ("Qwen3-4B-Q4_K_M.gguf" →
"qwen3-4b-q4_k_m").`,
		Example: `  openclaw models import ~/models/Qwen3-4B-Q4_K_M.gguf --name qwen3-4b
  openclaw models import ./smollm2-1.7b-instruct-q4_k_m.gguf --copy
  openclaw models import ~/Downloads/Qwen3-1.7B-Q4_K_M.gguf --name qwen3-1.7b --gateway raspberrypi`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := filepath.Abs(args[0])
			if err != nil {
				return fmt.Errorf("import %s: %w", args[0], err)
			}
			if upload || a.client().Remote() {
				return a.uploadModel(cmd.Context(), path, name, asJSON)
			}
			info, err := a.client().ImportModel(cmd.Context(), api.ImportModelRequest{Path: path, Name: name, Copy: copyFile})
			if err != nil {
				var ae *api.Error
				if errors.As(err, &ae) && ae.Code == api.CodeForbidden && !asJSON {
					fmt.Fprintf(a.stderr, "or send the file's bytes to the gateway instead: openclaw models import %s --upload\n", args[0])
				}
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, info)
			}
			what := strings.TrimSpace(info.Architecture + " " + info.Quantization)
			fmt.Fprintf(a.stdout, "imported %s from %s (%s, %s, %s, context %d): use it as %s\n",
				info.Name, path, formatBytes(info.Size), orDash(what), orDash(info.Kind), info.ContextWindow, info.Ref)
			if info.Path != path {
				fmt.Fprintf(a.stdout, "copied to %s\n", info.Path)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "model name (lowercase letters, digits, . _ -; default from the file name)")
	cmd.Flags().BoolVar(&copyFile, "copy", false, "copy the file into the gateway's models directory")
	cmd.Flags().BoolVar(&upload, "upload", false, "send the file from here to the gateway (always so with a gateway on another machine)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the installed model as JSON")
	return cmd
}

// uploadModel sends the file at path to the gateway and installs it, with
// a progress bar on stderr.
func (a *app) uploadModel(ctx context.Context, path, name string, asJSON bool) error {
	p := newPullProgress(a.stderr, writerIsTerminal(a.stderr), filepath.Base(path))
	p.verb = "sending"
	info, err := a.client().UploadModel(ctx, path, name, p.update)
	p.finish(err == nil)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintln(a.stderr, "import stopped: the gateway keeps what it received for 24 hours; run the same import again to resume")
		}
		return err
	}
	if asJSON {
		return writeJSON(a.stdout, info)
	}
	what := strings.TrimSpace(info.Architecture + " " + info.Quantization)
	fmt.Fprintf(a.stdout, "imported %s from %s (%s, %s, %s, context %d): use it as %s\n",
		info.Name, path, formatBytes(info.Size), orDash(what), orDash(info.Kind), info.ContextWindow, info.Ref)
	fmt.Fprintf(a.stdout, "sent to %s\n", info.Path)
	return nil
}

func (a *app) modelsRemoveCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "rm NAME",
		Aliases: []string{"remove"},
		Short:   "Remove an installed model",
		Long: `Remove the model NAME from the gateway. Its file is deleted when it is in
the gateway's models directory (pulled, or imported with --copy); a file
imported from elsewhere is left where it is.`,
		Example:           `  openclaw models rm qwen3-0.6b`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeModels(true),
		RunE: func(cmd *cobra.Command, args []string) error {
			info, err := a.client().RemoveModel(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "removed %s\n", info.Name)
			return nil
		},
	}
	return cmd
}

func (a *app) modelsInfoCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "info NAME",
		Short: "Show a model's details",
		Long: `Show what the catalog and the installed file say about the model NAME: kind,
size and sha256, context window, architecture and quantization, chat
template and its quirks, licence, default parameters, and the file's header
(layers, embedding size, tokenizer). --json adds every header key and the
chat template itself.`,
		Example: `  openclaw models info qwen3-1.7b
  openclaw models info qwen3-1.7b --json | jq -r .details.chatTemplate`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeModels(false),
		RunE: func(cmd *cobra.Command, args []string) error {
			info, err := a.client().ModelInfo(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, info)
			}
			noRunner := ""
			if !info.Installed && !info.Missing {
				noRunner = a.noLocalRunner(cmd.Context())
			}
			a.printModelInfo(info, noRunner)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the model as JSON, with every header key")
	return cmd
}

func (a *app) printModelInfo(m *api.ModelInfo, noRunner string) {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...)) }
	row("name", "%s (%s)", m.Name, m.Ref)
	switch {
	case m.Missing:
		row("installed", "registered, but the file %s is missing", m.Path)
	case m.Installed:
		row("installed", "yes, %s", m.Path)
	case noRunner != "":
		row("installed", "no (this gateway cannot run local models: %s)", oneLine(noRunner))
	default:
		row("installed", "no: openclaw models pull %s", m.Name)
	}
	kind := orDash(m.Kind)
	if m.Default != "" {
		kind += " (the default " + m.Default + " model)"
	}
	row("kind", "%s", kind)
	if m.Description != "" {
		row("description", "%s", oneLine(m.Description))
	}
	if m.Family != "" {
		row("family", "%s", m.Family)
	}
	row("size", "%s", modelSize(*m))
	if m.SHA256 != "" {
		check := "not checked against a known checksum"
		if m.Verified {
			check = "verified"
		}
		row("sha256", "%s (%s)", m.SHA256, check)
	}
	if m.ContextWindow > 0 {
		row("context", "%d tokens", m.ContextWindow)
	}
	if arch := strings.TrimSpace(m.Architecture + " " + m.Quantization); arch != "" {
		row("architecture", "%s", arch)
	}
	if m.Installed && m.Kind == "chat" {
		tmpl := "none: prompt-based tool calling"
		if m.HasTemplate {
			tmpl = "yes"
		}
		row("chat template", "%s", tmpl)
	}
	// The catalog's word on tools is about its file's template: an
	// installed file without one cannot render them.
	if m.Tools && (!m.Installed || m.HasTemplate) {
		row("tools", "the chat template renders tools")
	}
	for _, n := range m.TemplateNotes {
		row("note", "%s", oneLine(n))
	}
	if m.QueryPrefix != "" || m.DocumentPrefix != "" {
		row("prefixes", "query %q, document %q", m.QueryPrefix, m.DocumentPrefix)
	}
	if len(m.Params) > 0 {
		keys := make([]string, 0, len(m.Params))
		for k := range m.Params {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s %g", k, m.Params[k])
		}
		row("parameters", "%s", strings.Join(parts, ", "))
	}
	if m.License != "" {
		row("license", "%s", m.License)
	}
	if m.Installed && m.Source != "" {
		row("source", "%s", m.Source)
	}
	if !m.Installed && m.URL != "" {
		row("url", "%s", m.URL)
	}
	if !m.AddedAt.IsZero() {
		row("added", "%s", m.AddedAt.Local().Format("2006-01-02 15:04"))
	}
	if d := m.Details; d != nil {
		var parts []string
		if d.GGUFName != "" {
			parts = append(parts, fmt.Sprintf("%q", d.GGUFName))
		}
		parts = append(parts, fmt.Sprintf("GGUF v%d", d.GGUFVersion), fmt.Sprintf("%d tensors", d.TensorCount))
		if d.BlockCount > 0 {
			parts = append(parts, fmt.Sprintf("%d layers", d.BlockCount))
		}
		if d.EmbeddingLength > 0 {
			parts = append(parts, fmt.Sprintf("width %d", d.EmbeddingLength))
		}
		if d.Pooling != "" {
			parts = append(parts, d.Pooling+" pooling")
		}
		row("header", "%s", strings.Join(parts, ", "))
		if d.Tokenizer != "" {
			row("tokenizer", "%s, %d tokens", d.Tokenizer, d.VocabSize)
		}
	}
	tw.Flush()
}

// completeModels completes model names from the gateway's list: only
// installed ones when installed is set. It gives up quietly when the
// gateway is down.
func (a *app) completeModels(installed bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Second)
		defer cancel()
		list, err := a.client().Models(ctx)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, m := range list {
			if (!installed || m.Installed) && strings.HasPrefix(m.Name, toComplete) {
				out = append(out, cobra.CompletionWithDesc(m.Name, clip(oneLine(modelDescription(m)), 50)))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// writerIsTerminal reports whether w is a terminal.
func writerIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}
