package memeval

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Loc is where a turn landed: a slash path relative to the notes directory
// (memory/2023-05-08.md) and a 1-based line number.
type Loc struct {
	Path string
	Line int
}

// Note is one rendered memory file.
type Note struct {
	Path  string   // slash path relative to the notes directory
	Lines []string // without line ends; line n is Lines[n-1]
}

// Text is the file content, each line ended by "\n".
func (n Note) Text() string { return strings.Join(n.Lines, "\n") + "\n" }

// NotePath is the daily note of a session: memory/YYYY-MM-DD.md.
func NotePath(s Session) string { return "memory/" + s.Date.Format("2006-01-02") + ".md" }

// TurnLine is a turn as one note line:
// "- [D1:3] Caroline: text (shared a photo: caption)". Line breaks and runs
// of white space in the text and caption become single spaces.
func TurnLine(t Turn) string {
	var b strings.Builder
	b.WriteString("- [")
	b.WriteString(t.DiaID)
	b.WriteString("] ")
	b.WriteString(t.Speaker)
	b.WriteString(": ")
	b.WriteString(oneLine(t.Text))
	if c := oneLine(t.Caption); c != "" {
		b.WriteString(" (shared a photo: ")
		b.WriteString(c)
		b.WriteString(")")
	}
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Render lays a sample out as memory notes (see the package doc), in date
// order, and returns where every turn landed, by dia_id.
func Render(s Sample) ([]Note, map[string]Loc) {
	var notes []Note
	idx := map[string]int{}
	locs := map[string]Loc{}
	for _, ses := range s.Sessions {
		p := NotePath(ses)
		i, ok := idx[p]
		if !ok {
			i = len(notes)
			idx[p] = i
			notes = append(notes, Note{Path: p, Lines: []string{"# " + ses.Date.Format("2006-01-02")}})
		}
		n := &notes[i]
		heading := "## " + timeOf(ses) + " (session " + strconv.Itoa(ses.N) + ")"
		n.Lines = append(n.Lines, "", heading, "")
		for _, t := range ses.Turns {
			n.Lines = append(n.Lines, TurnLine(t))
			if _, dup := locs[t.DiaID]; !dup {
				locs[t.DiaID] = Loc{Path: p, Line: len(n.Lines)}
			}
		}
	}
	// Sessions are in N order, which is date order in the data; keep the
	// files in path (date) order whatever the input.
	sortNotes(notes)
	return notes, locs
}

func sortNotes(n []Note) {
	slices.SortStableFunc(n, func(a, b Note) int { return strings.Compare(a.Path, b.Path) })
}

// timeOf is the time part of the session's DateTime ("1:56 pm"), or the
// parsed time when DateTime is in another shape.
func timeOf(s Session) string {
	if t, _, ok := strings.Cut(s.DateTime, " on "); ok && strings.TrimSpace(t) != "" {
		return strings.TrimSpace(t)
	}
	return s.Date.Format("3:04 pm")
}

// WriteNotes writes the sample's notes under dir (dir/memory/YYYY-MM-DD.md)
// and returns where every turn landed, by dia_id; evidence ids are looked up
// there. Use one directory per sample: a note that already exists is an
// error, never overwritten or appended to.
func WriteNotes(dir string, s Sample) (map[string]Loc, error) {
	notes, locs := Render(s)
	if len(notes) == 0 {
		return nil, errors.New("memeval: sample " + s.ID + " has no turns")
	}
	if err := os.MkdirAll(filepath.Join(dir, "memory"), 0o755); err != nil {
		return nil, err
	}
	for _, n := range notes {
		name := filepath.Join(dir, filepath.FromSlash(n.Path))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return nil, fmt.Errorf("memeval: %w", err)
		}
		_, err = f.WriteString(n.Text())
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("memeval: %w", err)
		}
	}
	return locs, nil
}
