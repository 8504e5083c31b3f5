package command

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

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
	// duringTurn hands the lines typed while a turn runs to t, until the
	// returned func is called (see keyboard); piped input ignores it.
	duringTurn(t *turnKeys) (end func())
	// answering makes the next line typed during the turn, echoed as it
	// is typed, the answer to a prompt just printed (on: an approval
	// waits); off drops an answer left unfinished.
	answering(on bool)
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
func (p *pipedInput) duringTurn(*turnKeys) func() { return func() {} }
func (p *pipedInput) answering(bool)              {}
func (p *pipedInput) close()                      {}

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
// chzyer/readline, which reads its keys from the keyboard: the terminal's
// one reader for the whole chat, in raw mode throughout (not on Windows,
// where readline reads the terminal itself and nothing reads it during a
// turn).
type ttyInput struct {
	rl   *readline.Instance
	kb   *keyboard // nil: readline reads the terminal itself
	hist *history
}

// newTTYInput starts line editing on in (a terminal) with the history in
// histPath ("" = none); a history it cannot use is a warning on errw.
// ctrlC is what Ctrl-C does while a turn runs.
func newTTYInput(in *os.File, out, errw io.Writer, histPath string, ctrlC func()) (*ttyInput, error) {
	kb, err := openKeyboard(in, errw, ctrlC)
	if err != nil {
		return nil, err
	}
	t, err := newLineEditor(in, kb, out, errw, histPath)
	if err != nil && kb != nil {
		kb.close()
		if rerr := kb.restore(); rerr != nil {
			err = fmt.Errorf("%w (and %w)", err, rerr)
		}
	}
	return t, err
}

// newLineEditor is newTTYInput once the keyboard is open (nil: readline
// reads in itself).
func newLineEditor(in *os.File, kb *keyboard, out, errw io.Writer, histPath string) (*ttyInput, error) {
	cfg := &readline.Config{
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
	}
	if kb != nil {
		cfg.Stdin = kb
		// The keyboard holds the terminal raw from start to end: readline
		// switching modes around each line is what lost keys typed
		// between two lines. Raw again at each line in case a shell reset
		// it while chat was suspended (Ctrl-Z).
		cfg.FuncMakeRaw = kb.raw
		cfg.FuncExitRaw = func() error { return nil }
		cfg.FuncIsTerminal = func() bool { return true }
		cfg.FuncGetWidth = func() int { return termWidth(out) }
	}
	rl, err := readline.NewEx(cfg)
	if err != nil {
		return nil, fmt.Errorf("start line editing: %w", err)
	}
	t := &ttyInput{rl: rl, kb: kb}
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

func (t *ttyInput) duringTurn(tk *turnKeys) func() {
	if t.kb == nil {
		return func() {}
	}
	return t.kb.startTurn(tk)
}

func (t *ttyInput) answering(on bool) {
	if t.kb != nil {
		t.kb.answering(on)
	}
}

func (t *ttyInput) close() {
	if t.kb != nil {
		t.kb.close() // first: readline's reader then sees the end instead of waiting for a key
	}
	t.rl.Close()
	if t.kb != nil {
		if err := t.kb.restore(); err != nil {
			fmt.Fprintf(t.rl.Stderr(), "openclaw: warning: %v\n", err)
		}
	}
	if t.hist != nil {
		t.hist.close()
	}
}

// Keys the keyboard acts on while a turn runs.
const (
	keyCtrlC     = 0x03
	keyCtrlD     = 0x04
	keyBackspace = 0x08
	keyCtrlU     = 0x15
	keyCtrlW     = 0x17
	keyEsc       = 0x1b
	keyDelete    = 0x7f
)

// keyboard is chat's one reader of the terminal, for the whole chat, with
// the terminal in raw mode from start to end: every key typed reaches the
// line editor in the order typed, whenever it was typed. (Switching the
// terminal back to its line mode during a turn lost keys: a Ctrl-D typed
// while a reply streamed became an empty read there, and the chat went
// on.) readline reads the keys through Read.
//
// While a turn runs nothing reads the keys but the keyboard itself, which
// acts on some: Ctrl-C calls ctrlC (raw mode sends it as a key, not as
// SIGINT) and is not kept; a line "/stop" goes to the turn, and so does the
// line typed after answering(true) (an approval waits for it), echoed as
// it is typed. Any other key — a line ended by Enter, half a line, Ctrl-D
// — waits, not echoed, for the next prompt, where the line editor applies
// it as if typed there: typed-ahead text shows in the prompt, a line is
// sent, Ctrl-D at an empty prompt leaves.
type keyboard struct {
	echo    io.Writer     // where an answer is echoed
	ctrlC   func()        // Ctrl-C while a turn runs
	raw     func() error  // puts the terminal in raw mode (again)
	restore func() error  // the terminal as it was
	more    chan struct{} // capacity 1: buf grew, a turn ended or the input did
	stop    chan struct{} // closed by close: the reader stops
	done    chan struct{} // closed once the reader has stopped

	mu   sync.Mutex
	buf  []byte    // keys typed and not read yet, in order
	end  error     // why the input ended, once buf is read
	turn *turnKeys // non-nil while a turn runs
}

// turnKeys is what a running turn does with the lines typed meanwhile.
type turnKeys struct {
	stop   func()       // "/stop" was typed
	answer func(string) // the answer (see chatInput.answering)
	ahead  func(string) // any other line: it waits for the next prompt

	answering bool
	start     int // where in buf the line being typed starts
}

func newKeyboard(echo io.Writer, ctrlC func(), raw, restore func() error) *keyboard {
	if raw == nil {
		raw = func() error { return nil }
	}
	if restore == nil {
		restore = func() error { return nil }
	}
	return &keyboard{echo: echo, ctrlC: ctrlC, raw: raw, restore: restore,
		more: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

func (k *keyboard) signal() {
	select {
	case k.more <- struct{}{}:
	default:
	}
}

// Read is readline's stdin: the keys typed, in order. It waits while a
// turn runs, so that a key typed then stays where the turn can act on it.
func (k *keyboard) Read(p []byte) (int, error) {
	for {
		k.mu.Lock()
		switch {
		case k.turn == nil && len(k.buf) > 0:
			n := copy(p, k.buf)
			k.buf = k.buf[n:]
			k.mu.Unlock()
			return n, nil
		case k.end != nil && (len(k.buf) == 0 || k.turn != nil):
			err := k.end
			k.mu.Unlock()
			return 0, err
		}
		k.mu.Unlock()
		<-k.more
	}
}

// Close is readline's: the keyboard is closed by ttyInput.
func (k *keyboard) Close() error { return nil }

// close stops the reader; Read returns io.EOF once the keys read are.
func (k *keyboard) close() {
	select {
	case <-k.stop:
	default:
		close(k.stop)
	}
	<-k.done
	k.ended(io.EOF)
}

// ended records why the input ended (the first reason).
func (k *keyboard) ended(err error) {
	if err == nil {
		err = io.EOF
	}
	k.mu.Lock()
	if k.end == nil {
		k.end = err
	}
	k.mu.Unlock()
	k.signal()
}

// feed takes keys as read from the terminal.
func (k *keyboard) feed(keys []byte) {
	for _, c := range keys {
		k.key(c)
	}
	k.signal()
}

func (k *keyboard) key(c byte) {
	k.mu.Lock()
	t := k.turn
	if t == nil {
		k.buf = append(k.buf, c)
		k.mu.Unlock()
		return
	}
	if c == keyCtrlC {
		k.mu.Unlock()
		k.ctrlC()
		return
	}
	line := editLine(k.buf[t.start:])
	k.buf = append(k.buf, c)
	var then func()
	switch {
	case t.answering && (c == '\r' || c == '\n' || c == keyCtrlD && line == ""):
		// Ctrl-D at an empty answer is the end of input, which denies.
		k.buf = k.buf[:t.start]
		t.answering = false
		io.WriteString(k.echo, "\n")
		then = func() { t.answer(line) }
	case t.answering:
		echoEdit(k.echo, line, editLine(k.buf[t.start:]))
	case (c == '\r' || c == '\n') && strings.EqualFold(strings.TrimSpace(line), "/stop"):
		k.buf = k.buf[:t.start]
		then = t.stop
	case c == '\r' || c == '\n':
		t.start = len(k.buf)
		then = func() { t.ahead(line) }
	case c == keyCtrlD && line == "":
		t.start = len(k.buf) // it ends the chat at the prompt; what follows is a line of its own
	}
	k.mu.Unlock()
	if then != nil {
		then()
	}
}

// startTurn hands the lines typed from now on to t, until end is called.
func (k *keyboard) startTurn(t *turnKeys) (end func()) {
	k.mu.Lock()
	t.start = len(k.buf)
	k.turn = t
	k.mu.Unlock()
	return func() {
		k.mu.Lock()
		if k.turn == t {
			k.turn = nil
		}
		k.mu.Unlock()
		k.signal()
	}
}

// answering starts (on) or ends the wait for an answer typed during the
// turn; an answer left unfinished is dropped.
func (k *keyboard) answering(on bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	t := k.turn
	if t == nil || t.answering == on {
		return
	}
	if !on {
		if editLine(k.buf[t.start:]) != "" {
			io.WriteString(k.echo, "\n")
		}
		k.buf = k.buf[:t.start]
	}
	t.answering = on
	t.start = len(k.buf)
}

// editLine is the text of the keys typed for a line, as a simple line
// editor sees it: Backspace deletes a character, Ctrl-U the line, Ctrl-W a
// word; escape sequences (arrow keys) and other control keys do nothing.
func editLine(keys []byte) string {
	var b []byte
	for i := 0; i < len(keys); i++ {
		switch c := keys[i]; {
		case c == keyDelete || c == keyBackspace:
			_, n := utf8.DecodeLastRune(b)
			b = b[:len(b)-n]
		case c == keyCtrlU:
			b = b[:0]
		case c == keyCtrlW:
			b = bytes.TrimRight(b, " ")
			b = b[:bytes.LastIndexByte(b, ' ')+1]
		case c == keyEsc:
			i = skipEscape(keys, i)
		case c >= ' ':
			b = append(b, c)
		}
	}
	return string(b)
}

// skipEscape returns the index of the last byte of the escape sequence at
// keys[i] (ESC [ … final, ESC O x, ESC x).
func skipEscape(keys []byte, i int) int {
	if i+1 >= len(keys) {
		return i
	}
	switch keys[i+1] {
	case '[':
		for j := i + 2; j < len(keys); j++ {
			if keys[j] >= 0x40 && keys[j] <= 0x7e {
				return j
			}
		}
		return len(keys) - 1
	case 'O':
		return min(i+2, len(keys)-1)
	}
	return i + 1
}

// echoEdit shows the change of a line from was to now on a terminal whose
// cursor is at its end.
func echoEdit(w io.Writer, was, now string) {
	common := 0
	for common < len(was) && common < len(now) && was[common] == now[common] {
		common++
	}
	for common > 0 && common < len(was) && !utf8.RuneStart(was[common]) {
		common-- // never keep half a character
	}
	if n := utf8.RuneCountInString(was[common:]); n > 0 {
		io.WriteString(w, strings.Repeat("\b \b", n))
	}
	io.WriteString(w, now[common:])
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
