package safebin

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// valueKind says whether an option takes a value.
type valueKind uint8

const (
	noValue       valueKind = iota
	requiredValue           // -x VALUE, -xVALUE, --opt=VALUE, --opt VALUE
	optionalValue           // -xVALUE or --opt=VALUE only
)

// option is one option of a profile. A getopt short option and its long
// spelling are separate entries where their value kinds differ (ls -F vs
// --classify[=WHEN]).
type option struct {
	id     string    // name used by operand rules; defaults to the first long name or the short letter
	short  string    // short letters, each one a spelling of this option
	long   []string  // long names, without "--"
	value  valueKind //
	path   bool      // the value is a path that must stay in the workspace
	refuse string    // non-empty: known (so abbreviations expand right) but refused, and why
	check  func(v string) string
}

func (o *option) name() string {
	switch {
	case o.id != "":
		return o.id
	case len(o.long) > 0:
		return o.long[0]
	}
	return o.short[:1]
}

// used is one option occurrence after parsing.
type used struct {
	opt      *option
	value    string
	hasValue bool
}

// profile describes what a safe bin may be given.
type profile struct {
	opts []option
	// freeArgs: every argument is text, none is an option or a path
	// (echo, true, false parse no options that matter).
	freeArgs bool
	// pre inspects the raw arguments before option parsing, for a
	// binary's non-getopt quirks (obsolete head/tail forms); it returns
	// the arguments left to parse.
	pre func(args []string) ([]string, string)
	// operands returns which operands are paths, or why they are refused.
	// Nil means every operand is a path.
	operands func(ops []string, opts []used) ([]string, string)
}

// check parses args as getopt_long would and returns the paths to check.
func (p *profile) check(bin string, args []string) ([]string, string) {
	if p.freeArgs {
		return nil, ""
	}
	if p.pre != nil {
		var reason string
		if args, reason = p.pre(args); reason != "" {
			return nil, bin + ": " + reason
		}
	}
	var (
		opts  []used
		ops   []string
		paths []string
	)
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			ops = append(ops, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			o, reason := p.long(name)
			if reason != "" {
				return nil, bin + ": " + reason
			}
			u := used{opt: o, value: val, hasValue: hasVal}
			switch o.value {
			case noValue:
				if hasVal {
					return nil, fmt.Sprintf("%s: option --%s takes no value", bin, o.long[0])
				}
			case requiredValue:
				if !hasVal {
					if i+1 >= len(args) {
						return nil, fmt.Sprintf("%s: option --%s needs a value", bin, o.long[0])
					}
					i++
					u.value, u.hasValue = args[i], true
				}
			}
			opts = append(opts, u)
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				c := a[j]
				o := p.short(c)
				if o == nil {
					return nil, fmt.Sprintf("%s: unknown option -%s", bin, printable(a[j:j+1]))
				}
				u := used{opt: o}
				if o.value != noValue && j+1 < len(a) {
					u.value, u.hasValue = a[j+1:], true
					j = len(a)
				} else if o.value == requiredValue {
					if i+1 >= len(args) {
						return nil, fmt.Sprintf("%s: option -%c needs a value", bin, c)
					}
					i++
					u.value, u.hasValue = args[i], true
				}
				opts = append(opts, u)
			}
		default:
			ops = append(ops, a)
		}
	}
	for _, u := range opts {
		o := u.opt
		if o.refuse != "" {
			return nil, fmt.Sprintf("%s: option %s %s", bin, spelling(o), o.refuse)
		}
		if o.check != nil && u.hasValue {
			if reason := o.check(u.value); reason != "" {
				return nil, fmt.Sprintf("%s: option %s: %s", bin, spelling(o), reason)
			}
		}
		if o.path && u.hasValue {
			paths = append(paths, u.value)
		}
	}
	if p.operands == nil {
		return append(paths, ops...), ""
	}
	more, reason := p.operands(ops, opts)
	if reason != "" {
		return nil, bin + ": " + reason
	}
	return append(paths, more...), ""
}

// long finds the option a long name means, as getopt_long does: an exact
// name wins, else a unique prefix; an ambiguous prefix is refused.
func (p *profile) long(name string) (*option, string) {
	if name == "" {
		return nil, "an empty long option name"
	}
	for i := range p.opts {
		for _, l := range p.opts[i].long {
			if l == name {
				return &p.opts[i], ""
			}
		}
	}
	var found *option
	for i := range p.opts {
		for _, l := range p.opts[i].long {
			if !strings.HasPrefix(l, name) || found == &p.opts[i] {
				continue
			}
			if found != nil {
				// glibc accepts a prefix of aliases of one option; refusing
				// every ambiguous prefix is stricter and simpler.
				return nil, fmt.Sprintf("option --%s is ambiguous", printable(name))
			}
			found = &p.opts[i]
		}
	}
	if found == nil {
		return nil, fmt.Sprintf("unknown option --%s", printable(name))
	}
	return found, ""
}

func (p *profile) short(c byte) *option {
	for i := range p.opts {
		if strings.IndexByte(p.opts[i].short, c) >= 0 {
			return &p.opts[i]
		}
	}
	return nil
}

func spelling(o *option) string {
	var s []string
	for _, c := range o.short {
		s = append(s, "-"+string(c))
	}
	for _, l := range o.long {
		s = append(s, "--"+l)
	}
	return strings.Join(s, "/")
}

// printable quotes s for a message when it has anything unusual in it.
func printable(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// Helpers for building profiles.

func flag(short string, long ...string) option { return option{short: short, long: long} }
func val(short string, long ...string) option {
	return option{short: short, long: long, value: requiredValue}
}
func optVal(short string, long ...string) option {
	return option{short: short, long: long, value: optionalValue}
}
func pathVal(short string, long ...string) option {
	return option{short: short, long: long, value: requiredValue, path: true}
}
func refused(o option, why string) option { o.refuse = why; return o }

var common = []option{flag("", "help"), flag("", "version")}

func with(opts ...option) []option { return append(opts, common...) }

// noOperands refuses any operand.
func noOperands(ops []string, _ []used) ([]string, string) {
	if len(ops) > 0 {
		return nil, fmt.Sprintf("takes no operand, got %q", printable(ops[0]))
	}
	return nil, ""
}

// textOperands accepts operands that are not paths.
func textOperands(ops []string, _ []used) ([]string, string) { return nil, "" }

var obsoleteCount = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^-[0-9]+$`) })

// headTailPre handles the obsolete `head -5` / `tail -5` forms: the first
// argument may be -NUM exactly; -NUMc, -NUMf and `tail +NUM…` (which
// coreutils still reads as obsolete options, some of them following the
// file forever) are refused.
func headTailPre(tail bool) func([]string) ([]string, string) {
	return func(args []string) ([]string, string) {
		if len(args) == 0 {
			return args, ""
		}
		a := args[0]
		if obsoleteCount().MatchString(a) {
			return args[1:], ""
		}
		if len(a) > 1 && a[0] == '-' && a[1] >= '0' && a[1] <= '9' {
			return nil, fmt.Sprintf("obsolete option form %q is refused; use -n NUM or -c NUM", printable(a))
		}
		if tail && strings.HasPrefix(a, "+") {
			return nil, fmt.Sprintf("%q as the first argument is an obsolete option form (it may follow forever); use -n +NUM", printable(a))
		}
		return args, ""
	}
}

func has(opts []used, ids ...string) bool {
	for _, u := range opts {
		for _, id := range ids {
			if u.opt.name() == id {
				return true
			}
		}
	}
	return false
}

func noTZ(v string) string {
	if strings.Contains(v, "TZ=") {
		return "a TZ= rule in the date string may name a file; refused"
	}
	return ""
}

const (
	whyWrites   = "writes a file"
	whyRuns     = "runs a program"
	whyForever  = "never ends (follows the file)"
	whyTemp     = "writes temporary files outside the workspace"
	whyFileList = "reads a list of file names that are not checked"
	whyFollows  = "follows symlinks out of the workspace"
	whySetsTime = "sets the system clock"
	whyReads    = "reads a file (use a path operand instead)"
)

// profiles are the shipped safe-bin profiles, written from `--help` of GNU
// coreutils 9.1 and GNU grep 3.8, plus the hidden long options those
// binaries accept (grep --fixed-regexp, --unix-byte-offsets; wc --debug;
// date --rfc-822, --rfc-2822, --uct), so abbreviations expand as in the
// binary.
var profiles = sync.OnceValue(func() map[string]*profile {
	return map[string]*profile{
		"ls": {opts: with(
			flag("a", "all"), flag("A", "almost-all"), flag("", "author"), flag("b", "escape"),
			val("", "block-size"), flag("B", "ignore-backups"), flag("c"), flag("C"),
			optVal("", "color"), flag("d", "directory"), flag("D", "dired"), flag("f"),
			flag("F"), optVal("", "classify"), flag("", "file-type"), val("", "format"),
			flag("", "full-time"), flag("g"), flag("", "group-directories-first"),
			flag("G", "no-group"), flag("h", "human-readable"), flag("", "si"),
			flag("H", "dereference-command-line"), flag("", "dereference-command-line-symlink-to-dir"),
			val("", "hide"), optVal("", "hyperlink"), val("", "indicator-style"), flag("i", "inode"),
			val("I", "ignore"), flag("k", "kibibytes"), flag("l"),
			refused(flag("L", "dereference"), whyFollows),
			flag("m"), flag("n", "numeric-uid-gid"), flag("N", "literal"), flag("o"), flag("p"),
			flag("q", "hide-control-chars"), flag("", "show-control-chars"), flag("Q", "quote-name"),
			val("", "quoting-style"), flag("r", "reverse"), flag("R", "recursive"), flag("s", "size"),
			flag("S"), val("", "sort"), val("", "time"), val("", "time-style"), flag("t"),
			val("T", "tabsize"), flag("u"), flag("U"), flag("v"), val("w", "width"), flag("x"),
			flag("X"), flag("Z", "context"), flag("", "zero"), flag("1"),
		)},
		"cat": {opts: with(
			flag("A", "show-all"), flag("b", "number-nonblank"), flag("e"), flag("E", "show-ends"),
			flag("n", "number"), flag("s", "squeeze-blank"), flag("t"), flag("T", "show-tabs"),
			flag("u"), flag("v", "show-nonprinting"),
		)},
		"head": {pre: headTailPre(false), opts: with(
			val("c", "bytes"), val("n", "lines"), flag("q", "quiet", "silent"), flag("v", "verbose"),
			flag("z", "zero-terminated"),
		)},
		"tail": {pre: headTailPre(true), opts: with(
			val("c", "bytes"), refused(flag("f"), whyForever), refused(optVal("", "follow"), whyForever),
			refused(flag("F"), whyForever), val("n", "lines"), val("", "max-unchanged-stats"),
			refused(val("", "pid"), "only matters with --follow, which is refused"),
			flag("q", "quiet", "silent"), flag("", "retry"), val("s", "sleep-interval"),
			flag("v", "verbose"), flag("z", "zero-terminated"),
		)},
		"wc": {opts: with(
			flag("c", "bytes"), flag("m", "chars"), flag("l", "lines"), flag("", "debug"),
			refused(pathVal("", "files0-from"), whyFileList),
			flag("L", "max-line-length"), flag("w", "words"),
		)},
		"echo":   {freeArgs: true}, // coreutils echo: -n -e -E, everything else is printed
		"true":   {freeArgs: true}, // ignores its arguments
		"false":  {freeArgs: true},
		"pwd":    {opts: with(flag("L", "logical"), flag("P", "physical")), operands: noOperands},
		"whoami": {opts: with(), operands: noOperands},
		"uname": {opts: with(
			flag("a", "all"), flag("s", "kernel-name"), flag("n", "nodename"), flag("r", "kernel-release"),
			flag("v", "kernel-version"), flag("m", "machine"), flag("p", "processor"),
			flag("i", "hardware-platform"), flag("o", "operating-system"),
		), operands: noOperands},
		"date": {opts: with(
			option{short: "d", long: []string{"date"}, value: requiredValue, check: noTZ},
			flag("", "debug"),
			refused(pathVal("f", "file"), whyReads),
			optVal("I", "iso-8601"), flag("", "resolution"),
			flag("R", "rfc-email", "rfc-822", "rfc-2822"), val("", "rfc-3339"),
			refused(pathVal("r", "reference"), whyReads),
			refused(val("s", "set"), whySetsTime),
			flag("u", "utc", "universal", "uct"),
		), operands: func(ops []string, _ []used) ([]string, string) {
			switch {
			case len(ops) > 1:
				return nil, "takes at most one operand, +FORMAT"
			case len(ops) == 1 && !strings.HasPrefix(ops[0], "+"):
				return nil, fmt.Sprintf("operand %q would set the clock; only +FORMAT is allowed", printable(ops[0]))
			}
			return nil, ""
		}},
		"grep": {opts: with(
			flag("E", "extended-regexp"), flag("F", "fixed-strings", "fixed-regexp"),
			flag("G", "basic-regexp"), flag("P", "perl-regexp"),
			option{id: "regexp", short: "e", long: []string{"regexp"}, value: requiredValue},
			option{id: "file", short: "f", long: []string{"file"}, value: requiredValue, path: true},
			flag("i", "ignore-case"), flag("", "no-ignore-case"), flag("w", "word-regexp"),
			flag("x", "line-regexp"), flag("z", "null-data"), flag("s", "no-messages"),
			flag("v", "invert-match"), flag("V"), val("m", "max-count"), flag("b", "byte-offset"),
			flag("n", "line-number"), flag("", "line-buffered"), flag("H", "with-filename"),
			flag("h", "no-filename"), val("", "label"), flag("o", "only-matching"),
			flag("q", "quiet", "silent"), val("", "binary-files"), flag("a", "text"), flag("I"),
			option{id: "directories", short: "d", long: []string{"directories"}, value: requiredValue},
			val("D", "devices"), option{id: "recursive", short: "r", long: []string{"recursive"}},
			refused(flag("R", "dereference-recursive"), whyFollows),
			val("", "include"), val("", "exclude"), pathVal("", "exclude-from"), val("", "exclude-dir"),
			flag("L", "files-without-match"), flag("l", "files-with-matches"), flag("c", "count"),
			flag("T", "initial-tab"), flag("Z", "null"), val("B", "before-context"),
			val("A", "after-context"), val("C", "context"), flag("0123456789"),
			val("", "group-separator"), flag("", "no-group-separator"), optVal("", "color", "colour"),
			flag("U", "binary"), flag("u", "unix-byte-offsets"),
		), operands: func(ops []string, opts []used) ([]string, string) {
			if !has(opts, "regexp", "file") {
				if len(ops) == 0 {
					return nil, "needs a pattern"
				}
				ops = ops[1:] // the pattern
			}
			if len(ops) == 0 && has(opts, "recursive") {
				return []string{"."}, ""
			}
			return ops, ""
		}},
		"sort": {opts: with(
			flag("b", "ignore-leading-blanks"), flag("d", "dictionary-order"), flag("f", "ignore-case"),
			flag("g", "general-numeric-sort"), flag("i", "ignore-nonprinting"), flag("M", "month-sort"),
			flag("h", "human-numeric-sort"), flag("n", "numeric-sort"), flag("R", "random-sort"),
			pathVal("", "random-source"), flag("r", "reverse"), val("", "sort"),
			flag("V", "version-sort"), val("", "batch-size"), flag("c"), flag("C"),
			optVal("", "check"), refused(val("", "compress-program"), whyRuns), flag("", "debug"),
			refused(pathVal("", "files0-from"), whyFileList), val("k", "key"), flag("m", "merge"),
			refused(pathVal("o", "output"), whyWrites), flag("s", "stable"), val("S", "buffer-size"),
			val("t", "field-separator"), refused(pathVal("T", "temporary-directory"), whyTemp),
			val("", "parallel"), flag("u", "unique"), flag("z", "zero-terminated"),
		)},
		"uniq": {opts: with(
			flag("c", "count"), flag("d", "repeated"), flag("D"), optVal("", "all-repeated"),
			val("f", "skip-fields"), optVal("", "group"), flag("i", "ignore-case"),
			val("s", "skip-chars"), flag("u", "unique"), flag("z", "zero-terminated"),
			val("w", "check-chars"),
		), operands: func(ops []string, _ []used) ([]string, string) {
			if len(ops) > 1 {
				return nil, "a second operand (OUTPUT) writes a file; refused"
			}
			return ops, ""
		}},
		"cut": {opts: with(
			val("b", "bytes"), val("c", "characters"), val("d", "delimiter"), val("f", "fields"),
			flag("n"), flag("", "complement"), flag("s", "only-delimited"), val("", "output-delimiter"),
			flag("z", "zero-terminated"),
		)},
		"tr": {opts: with(
			flag("cC", "complement"), flag("d", "delete"), flag("s", "squeeze-repeats"),
			flag("t", "truncate-set1"),
		), operands: textOperands},
	}
})
