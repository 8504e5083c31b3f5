// Package safebin decides whether an exec command is SAFE: harmless enough
// to run without asking the owner (docs/design.md §3.7). Looking at characters
// is not enough (GNU long options abbreviate, options take file names,
// attached or not), so a command is safe only when all of this holds:
//
//   - It parses (mvdan.cc/sh/v3/syntax, the parser only, never its
//     interpreter) as exactly ONE simple command: no pipes, lists, `;`,
//     `&`, redirections, here-documents, assignments, subshells, blocks,
//     comments, substitutions or expansions of any kind (parameter,
//     arithmetic, tilde, brace, glob `* ? [`).
//   - Every word is literal: plain (backslash escapes honoured),
//     single-quoted, or double-quoted without expansions. The argv is
//     computed exactly as sh would and is what runs, by execve, with no
//     shell in between.
//   - argv[0] is a bare name (no `/`) in the configured safe bins AND has
//     a profile here. A configured bin without a profile is never safe
//     (HasProfile lets config checks warn about it).
//   - The arguments satisfy the profile, parsed the way GNU getopt_long
//     does it (permutation, combined short flags, attached and separate
//     values, `--opt=value`, `--opt value`, `--`): a long option may be
//     abbreviated to a unique prefix, which is expanded to the full option
//     BEFORE it is checked (`sort --co=sh` is --compress-program); an exact
//     name wins; an ambiguous prefix is refused. An unknown option, or a
//     known but refused one, makes the command not safe.
//   - Every path, operand or option value, resolves inside the workspace
//     after symlinks: the longest existing prefix goes through
//     filepath.EvalSymlinks, the rest (a file not created yet) is joined
//     to it and may not contain `..`. Absolute paths are fine when inside.
//
// Choices, stricter than OpenClaw's safeBins:
//   - Profiles list every long option the real GNU binary knows (taken
//     from `--help` of coreutils 9.1 and grep 3.8 plus the hidden ones the
//     binaries accept, found by probing `--a`…`--z`), including the
//     refused ones, so that an abbreviation expands here exactly as in the
//     binary. Options that write files, run programs, never end, follow
//     symlinks out of the workspace or read a list of unchecked file names
//     are refused outright: sort -o/-T/--compress-program/--files0-from,
//     wc --files0-from, tail -f/-F/--follow/--pid and the obsolete `+N…`
//     and `-N…f` forms, date -f/-r/-s, grep -R, ls -L, and uniq's OUTPUT
//     operand (uniq takes at most one operand).
//   - A prefix of several spellings of one option is that option, as in
//     glibc (`grep --col` is --color/--colour); any other ambiguous prefix
//     is refused.
//   - Control characters (including CR and NUL) and Unicode format
//     characters (bidi overrides) anywhere in the text make a command not
//     safe, so what the owner would see is what runs.
//   - A command that adds environment variables is never safe: that is
//     the caller's rule (package exec), since TZ, POSIXLY_CORRECT and
//     friends change what these binaries do.
//   - The check is a snapshot: a path created or swapped for a symlink
//     after the check, or a hard link to an outside file, is not seen.
//     The kernel sandbox around every child is what holds then.
package safebin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// Result is the verdict on one command.
type Result struct {
	// Argv is the command's literal argv when it is one simple command of
	// literal words (safe or not); nil otherwise.
	Argv []string
	// Safe reports whether the command may run without approval.
	Safe bool
	// Reason says why it is not safe, for display; empty when Safe.
	Reason string
}

// Check decides whether command is safe to run in dir, a directory inside
// workspace, given the configured safe bins.
func Check(command string, bins []string, workspace, dir string) Result {
	argv, err := Parse(command)
	if err != nil {
		return Result{Reason: err.Error()}
	}
	res := Result{Argv: argv}
	name := argv[0]
	switch {
	case strings.Contains(name, "/"):
		res.Reason = fmt.Sprintf("%q is a path, not a bare safe-bin name", name)
		return res
	case !slices.Contains(bins, name):
		res.Reason = fmt.Sprintf("%s is not in tools.exec.safeBins", name)
		return res
	}
	p, ok := profiles()[name]
	if !ok {
		res.Reason = fmt.Sprintf("%s has no safe-bin profile; it always needs approval", name)
		return res
	}
	paths, reason := p.check(name, argv[1:])
	if reason != "" {
		res.Reason = reason
		return res
	}
	ws, err := filepath.EvalSymlinks(workspace)
	if err != nil {
		res.Reason = fmt.Sprintf("workspace: %v", err)
		return res
	}
	for _, pth := range paths {
		if reason := inside(ws, dir, pth); reason != "" {
			res.Reason = fmt.Sprintf("%s: %s", name, reason)
			return res
		}
	}
	res.Safe = true
	return res
}

// HasProfile reports whether name has a safe-bin profile; a safe bin
// without one always needs approval.
func HasProfile(name string) bool {
	_, ok := profiles()[name]
	return ok
}

// Parse returns the argv of command when it is exactly one simple command
// made of literal words, computed as sh would; otherwise an error saying
// what is in the way.
func Parse(command string) ([]string, error) {
	if !utf8.ValidString(command) {
		return nil, errors.New("the command is not valid UTF-8")
	}
	for _, r := range command {
		if r != '\t' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r)) {
			return nil, fmt.Errorf("the command contains the control character %U", r)
		}
	}
	f, err := syntax.NewParser(syntax.KeepComments(true), syntax.Variant(syntax.LangBash)).
		Parse(strings.NewReader(command), "")
	if err != nil {
		return nil, fmt.Errorf("the command does not parse: %v", err)
	}
	if len(f.Last) > 0 {
		return nil, errors.New("the command has a comment")
	}
	if len(f.Stmts) == 0 {
		return nil, errors.New("the command is empty")
	}
	if len(f.Stmts) != 1 {
		return nil, errors.New("not one simple command (a list of commands)")
	}
	st := f.Stmts[0]
	switch {
	case len(st.Comments) > 0:
		return nil, errors.New("the command has a comment")
	case st.Background || st.Coprocess || st.Disown:
		return nil, errors.New("not one simple command (runs in the background)")
	case st.Negated:
		return nil, errors.New("not one simple command (negated with !)")
	case st.Semicolon.IsValid():
		return nil, errors.New("not one simple command (ends with a separator)")
	case len(st.Redirs) > 0:
		return nil, errors.New("the command has a redirection")
	}
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok {
		return nil, errors.New("not one simple command (pipeline, list, subshell or compound command)")
	}
	if len(call.Assigns) > 0 {
		return nil, errors.New("the command sets variables")
	}
	if len(call.Args) == 0 {
		return nil, errors.New("the command is empty")
	}
	argv := make([]string, 0, len(call.Args))
	for _, w := range call.Args {
		s, err := literal(w)
		if err != nil {
			return nil, err
		}
		argv = append(argv, s)
	}
	return argv, nil
}

// literal returns the value of a word with no expansion in it.
func literal(w *syntax.Word) (string, error) {
	var b strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if err := unquoted(&b, p.Value); err != nil {
				return "", err
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", errors.New("$'…' quoting is not literal")
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", errors.New("$\"…\" quoting is not literal")
			}
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", errors.New("an expansion inside double quotes")
				}
				doubleQuoted(&b, l.Value)
			}
		default:
			return "", fmt.Errorf("an expansion or substitution (%s)", nodeName(part))
		}
	}
	return b.String(), nil
}

func nodeName(n syntax.Node) string {
	switch n.(type) {
	case *syntax.ParamExp:
		return "parameter"
	case *syntax.CmdSubst:
		return "command substitution"
	case *syntax.ArithmExp:
		return "arithmetic"
	case *syntax.ProcSubst:
		return "process substitution"
	case *syntax.ExtGlob:
		return "extended glob"
	case *syntax.BraceExp:
		return "brace expansion"
	}
	return fmt.Sprintf("%T", n)
}

// unquoted appends the value of raw unquoted text: a backslash quotes the
// next character. Unescaped glob, tilde and brace characters are refused
// rather than interpreted (bash expands `~` even after `=` in arguments).
func unquoted(b *strings.Builder, raw string) error {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch c {
		case '\\':
			if i+1 < len(raw) {
				i++
			} // a trailing backslash stays, as in bash
			b.WriteByte(raw[i])
			continue
		case '*', '?', '[':
			return fmt.Errorf("a glob pattern (%c)", c)
		case '~':
			return errors.New("a tilde expansion (~)")
		case '{', '}':
			return fmt.Errorf("a brace (%c) that bash may expand", c)
		case '$', '`':
			return fmt.Errorf("an expansion (%c)", c)
		}
		b.WriteByte(c)
	}
	return nil
}

// doubleQuoted appends the value of raw text inside double quotes: a
// backslash quotes only $ ` " \ (a backslash-newline never gets here:
// newlines are refused earlier).
func doubleQuoted(b *strings.Builder, raw string) {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c == '\\' && i+1 < len(raw) && strings.IndexByte("$`\"\\", raw[i+1]) >= 0 {
			i++
			c = raw[i]
		}
		b.WriteByte(c)
	}
}

// inside reports why pth (relative to dir) is not inside ws, a workspace
// with its symlinks resolved; "" when it is.
func inside(ws, dir, pth string) string {
	abs := pth
	if !filepath.IsAbs(abs) {
		abs = dir + string(filepath.Separator) + pth
	}
	resolved, err := resolve(abs)
	if err != nil {
		return fmt.Sprintf("path %q: %v", pth, err)
	}
	if resolved != ws && !strings.HasPrefix(resolved, ws+string(filepath.Separator)) {
		return fmt.Sprintf("path %q is outside the workspace", pth)
	}
	return ""
}

// resolve resolves symlinks in abs, an absolute path that need not exist:
// the longest existing prefix (counted in components of the path as
// written, so that `link/..` is resolved by the kernel's rules, not
// lexically) goes through EvalSymlinks, and the rest is joined to it.
func resolve(abs string) (string, error) {
	parts := strings.Split(abs, string(filepath.Separator))
	for n := len(parts); n > 0; n-- {
		prefix := strings.Join(parts[:n], string(filepath.Separator))
		if prefix == "" {
			prefix = string(filepath.Separator)
		}
		r, err := filepath.EvalSymlinks(prefix)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
				return "", err
			}
			if fi, lerr := os.Lstat(prefix); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
				// A dangling symlink: what it would create is not known.
				return "", errors.New("goes through a symlink whose target does not exist")
			}
			continue
		}
		rest := parts[n:]
		if slices.Contains(rest, "..") {
			return "", errors.New("`..` after a path that does not exist")
		}
		return filepath.Join(append([]string{r}, rest...)...), nil
	}
	return "", errors.New("cannot be resolved")
}
