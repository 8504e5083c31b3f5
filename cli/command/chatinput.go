package command

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/chzyer/readline"

	"github.com/openclaw-edge/edge/engine/api"
)

// chatInput is where chat's messages come from: a terminal with line
// editing (ttyInput) or piped lines (pipedInput).
type chatInput interface {
	// readLine reads one line at prompt. io.EOF: end of input (Ctrl-D);
	// errLineCleared: Ctrl-C with text typed (the line is dropped);
	// errPromptInterrupt: Ctrl-C at an empty prompt.
	readLine(prompt string) (string, error)
	// remember adds a message the user typed to the history.
	remember(line string)
	// duringTurn returns the lines typed while a turn runs (nil: none are
	// read then) and a func that stops reading them.
	duringTurn(ctx context.Context) (<-chan string, func())
	close()
}

var (
	errLineCleared     = errors.New("line cleared")
	errPromptInterrupt = errors.New("interrupted at the prompt")
)

// pipedInput reads lines from a pipe or file, as chat always has: one
// message per line, no prompt, no history. Approval answers are the next
// lines, read by the approval callback through lines.
type pipedInput struct {
	ctx    context.Context
	lines  <-chan string
	prompt bool // stdin is a terminal but stdout is not: show "you> " on stdout as before
	out    io.Writer
}

func (p *pipedInput) readLine(prompt string) (string, error) {
	if p.prompt {
		fmt.Fprint(p.out, prompt)
	}
	select {
	case l, ok := <-p.lines:
		if !ok {
			if p.prompt {
				fmt.Fprintln(p.out)
			}
			return "", io.EOF
		}
		return l, nil
	case <-p.ctx.Done():
		return "", p.ctx.Err()
	}
}

func (p *pipedInput) remember(string) {}

// duringTurn: piped lines are messages; only an approval reads one during
// a turn, from lines directly.
func (p *pipedInput) duringTurn(context.Context) (<-chan string, func()) { return nil, func() {} }
func (p *pipedInput) close()                                             {}

// readLines reads r line by line (any length, without the line ending) into
// the returned channel, which is closed at the end of input or when ctx is
// done. A read error other than EOF ends the input too.
func readLines(ctx context.Context, r io.Reader) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadString('\n')
			if line != "" || err == nil {
				line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
				select {
				case ch <- line:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// ttyInput is a terminal: line editing, history and completion from
// chzyer/readline, which holds the terminal in raw mode only while it
// reads a line. During a turn the terminal is in its normal mode — Ctrl-C
// is a SIGINT, which stops the turn — and lines typed then are read by
// pollLines.
type ttyInput struct {
	rl   *readline.Instance
	in   *os.File
	hist *history
}

// newTTYInput starts line editing on in (a terminal) with the history in
// histPath ("" = none); a history it cannot use is a warning on warn.
func newTTYInput(in *os.File, out, errw io.Writer, histPath string) (*ttyInput, error) {
	rl, err := readline.NewEx(&readline.Config{
		Stdin:           in,
		Stdout:          out,
		Stderr:          errw,
		AutoComplete:    slashCompleter{},
		HistoryLimit:    historyLimit,
		InterruptPrompt: "^C",
		EOFPrompt:       "\n", // readline's way of saying "print nothing but a newline"
		// The history file is ours (history.go): 0600, no symlinks, no
		// approval answers; readline keeps only the in-memory list.
		HistoryFile:       "",
		HistorySearchFold: true,
	})
	if err != nil {
		return nil, fmt.Errorf("start line editing: %w", err)
	}
	t := &ttyInput{rl: rl, in: in}
	if histPath != "" {
		h, lines, err := openHistory(histPath, historyLimit)
		if err != nil {
			fmt.Fprintf(errw, "openclaw: warning: %v; history is not saved this time\n", err)
		} else {
			t.hist = h
		}
		for _, l := range lines {
			_ = rl.SaveHistory(l) // in memory only: cannot fail
		}
	}
	return t, nil
}

func (t *ttyInput) readLine(prompt string) (string, error) {
	t.rl.SetPrompt(prompt)
	line, err := t.rl.Readline()
	switch {
	case errors.Is(err, readline.ErrInterrupt):
		if strings.TrimSpace(line) != "" {
			return "", errLineCleared
		}
		return "", errPromptInterrupt
	case err != nil:
		return "", err
	}
	return line, nil
}

func (t *ttyInput) remember(line string) {
	if t.hist == nil || !historyWorthy(line) {
		return
	}
	if err := t.hist.add(line); err != nil {
		fmt.Fprintf(t.rl.Stderr(), "openclaw: warning: %v; history is not saved from now on\n", err)
		t.hist.close()
		t.hist = nil
	}
}

func (t *ttyInput) duringTurn(ctx context.Context) (<-chan string, func()) {
	ctx, cancel := context.WithCancel(ctx)
	ch, done := pollLines(ctx, t.in)
	return ch, func() {
		cancel()
		<-done // never two readers of the terminal at once
	}
}

func (t *ttyInput) close() {
	t.rl.Close()
	if t.hist != nil {
		t.hist.close()
	}
}

// slashCommandNames are what chat completes and passes to the gateway:
// the gateway's commands, and chat's own /quit and /exit.
func slashCommandNames() []string {
	names := make([]string, 0, len(api.Commands)+2)
	for _, c := range api.Commands {
		names = append(names, "/"+c.Name)
	}
	return append(names, "/quit", "/exit")
}

// slashCompleter completes a slash command at the start of the line.
type slashCompleter struct{}

// Do is readline's AutoCompleter: the suffixes that complete the word
// before the cursor, and how many runes of it they share.
func (slashCompleter) Do(line []rune, pos int) ([][]rune, int) {
	word := string(line[:pos])
	if !strings.HasPrefix(word, "/") || strings.ContainsAny(word, " \t") {
		return nil, 0
	}
	var out [][]rune
	for _, c := range completeSlash(word) {
		out = append(out, []rune(c[len(word):]+" "))
	}
	return out, len([]rune(word))
}

// completeSlash returns the slash commands that start with prefix (case
// folded, sorted).
func completeSlash(prefix string) []string {
	prefix = strings.ToLower(prefix)
	var out []string
	for _, n := range slashCommandNames() {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// unknownCommand reports whether text starts with a word that looks like
// a slash command ("/word", letters, digits, - and _) the gateway does not
// know. Other text starting with "/" — a path like /etc/hosts — goes to
// the model as it is.
func unknownCommand(text string) (string, bool) {
	word, _, _ := strings.Cut(text, " ")
	if i := strings.IndexAny(word, "\t\n"); i >= 0 {
		word = word[:i]
	}
	if len(word) < 2 || word[0] != '/' {
		return "", false
	}
	for _, r := range word[1:] {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return "", false
		}
	}
	if slices.Contains(slashCommandNames(), strings.ToLower(word)) {
		return "", false
	}
	return word, true
}

// commandList is chat's answer to an unknown command.
func commandList(word string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "unknown command %s (not sent). Commands:\n", api.EscapeControl(word))
	for _, c := range api.Commands {
		fmt.Fprintf(&b, "  %-34s %s\n", c.Usage, c.Help)
	}
	fmt.Fprintf(&b, "  %-34s %s", "/quit, /exit", "leave chat (or Ctrl-D)")
	return b.String()
}

// historyPath is chat's history file in the CLI's config dir.
func historyPath() (string, error) {
	dir, err := configDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "chat_history"), nil
}
