package config

import (
	"cmp"
	"errors"
	"slices"
	"strconv"
	"strings"
)

// Error is one problem in a config file. Load, Parse and Validate return all
// problems joined with errors.Join, each an *Error, ordered by line.
type Error struct {
	File   string // "" when unknown
	Line   int    // 1-based; 0 if unknown
	Path   string // key path, e.g. agents.list[1].model.primary
	Reason string
}

// Error formats "<file>:<line>: <path>: <reason>", leaving out empty parts.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":")
			b.WriteString(strconv.Itoa(e.Line))
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		b.WriteString("line ")
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// joinErrors orders errs by line (unknown lines last, otherwise stable) and
// joins them; nil when there are none, the *Error itself when there is one.
func joinErrors(errs []*Error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	sortByLine(errs)
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return errors.Join(out...)
}

// sortByLine orders errs by line, unknown lines last, otherwise stable.
func sortByLine(errs []*Error) {
	slices.SortStableFunc(errs, func(a, b *Error) int {
		la, lb := a.Line, b.Line
		if la == 0 {
			la = int(^uint(0) >> 1)
		}
		if lb == 0 {
			lb = int(^uint(0) >> 1)
		}
		return cmp.Compare(la, lb)
	})
}

// keyPath appends an object key to a path, quoting keys that are not plain
// identifiers: agents.defaults, channels.whatsapp.groups["1203@g.us"].
func keyPath(parent, key string) string {
	if !plainKey(key) {
		return parent + "[" + strconv.Quote(key) + "]"
	}
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// indexPath appends an array index to a path.
func indexPath(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
