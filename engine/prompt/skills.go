package prompt

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
)

// Skill is a skill the model may load: a folder with a SKILL.md whose
// frontmatter names and describes it. Location is the absolute path of the
// SKILL.md, which the model reads with the read tool before using the skill.
type Skill struct {
	Name, Description, Location string
}

// Limits from the AgentSkills format; a larger SKILL.md is not a skill.
const (
	maxSkillName        = 64
	maxSkillDescription = 1024
	maxSkillFile        = 256 << 10
)

// LoadSkills reads dirs/<skill>/SKILL.md. A missing dir has no skills. A
// later dir overrides an earlier one on the same skill name, so pass them
// from least to most specific (bundled, managed, workspace). Skills come
// back sorted by name; a SKILL.md that cannot be read or has bad
// frontmatter is skipped and named in the returned error, which joins one
// error per bad file, alongside the skills that loaded.
func LoadSkills(dirs ...string) ([]Skill, error) {
	byName := map[string]Skill{}
	var errs []error
	for _, dir := range dirs {
		abs, err := filepath.Abs(dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("skills dir %s: %w", dir, err))
			continue
		}
		entries, err := os.ReadDir(abs)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("skills dir %s: %w", abs, err))
			continue
		}
		for _, e := range entries {
			path := filepath.Join(abs, e.Name(), "SKILL.md")
			if st, err := os.Stat(filepath.Join(abs, e.Name())); err != nil || !st.IsDir() {
				continue // a stray file, or a dangling link
			}
			sk, err := loadSkill(path)
			if errors.Is(err, fs.ErrNotExist) {
				continue // a folder without a SKILL.md is not a skill
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("skill %s: %w", path, err))
				continue
			}
			byName[sk.Name] = sk
		}
	}
	skills := make([]Skill, 0, len(byName))
	for _, sk := range byName {
		skills = append(skills, sk)
	}
	sort.Slice(skills, func(i, j int) bool { return skills[i].Name < skills[j].Name })
	return skills, errors.Join(errs...)
}

func loadSkill(path string) (Skill, error) {
	f, err := os.Open(path)
	if err != nil {
		return Skill{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSkillFile+1))
	if err != nil {
		return Skill{}, err
	}
	if len(data) > maxSkillFile {
		return Skill{}, fmt.Errorf("larger than %d bytes", maxSkillFile)
	}
	fm, err := frontmatter(data)
	if err != nil {
		return Skill{}, err
	}
	sk := Skill{Name: fm["name"], Description: fm["description"], Location: path}
	switch {
	case sk.Name == "":
		return Skill{}, errors.New("frontmatter has no name")
	case len(sk.Name) > maxSkillName:
		return Skill{}, fmt.Errorf("name is longer than %d characters", maxSkillName)
	case strings.IndexFunc(sk.Name, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0:
		return Skill{}, fmt.Errorf("name %q contains spaces or control characters", sk.Name)
	case sk.Description == "":
		return Skill{}, errors.New("frontmatter has no description")
	case len([]rune(sk.Description)) > maxSkillDescription:
		return Skill{}, fmt.Errorf("description is longer than %d characters", maxSkillDescription)
	}
	return sk, nil
}

// frontmatter parses the "---"-delimited header of a Markdown file as the
// small YAML subset skills use: "key: value" lines with plain or quoted
// scalars, folded (>) and literal (|) block scalars, and indented
// continuation lines. Other YAML (nested maps, lists) is skipped; only
// top-level string keys are returned.
func frontmatter(data []byte) (map[string]string, error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxSkillFile)
	if !sc.Scan() || strings.TrimRight(sc.Text(), " \t\r") != "---" {
		return nil, errors.New("no frontmatter: the file must start with a --- line")
	}
	fm := map[string]string{}
	var (
		key    string   // key whose value continues on the next lines
		block  string   // "" (plain continuation), ">" or "|"
		lines  []string // continuation lines of key
		closed bool
	)
	finish := func() {
		if key == "" {
			return
		}
		sep := " "
		if block == "|" {
			sep = "\n"
		}
		v := strings.TrimSpace(strings.Join(append([]string{fm[key]}, lines...), sep))
		fm[key] = v
		key, block, lines = "", "", nil
	}
	for n := 2; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), " \t\r")
		if line == "---" {
			closed = true
			break
		}
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") && block == "" {
			if block == "|" && key != "" {
				lines = append(lines, "")
			}
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if key != "" {
				lines = append(lines, strings.TrimSpace(line))
			}
			continue // a nested value of a key we do not use
		}
		finish()
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) == "" || strings.ContainsAny(k, " \t\"'") {
			if strings.HasPrefix(line, "- ") {
				continue // a list item of a key we do not use
			}
			return nil, fmt.Errorf("frontmatter line %d: want key: value, got %q", n, line)
		}
		v = strings.TrimSpace(v)
		switch {
		case v == ">" || v == ">-" || v == "|" || v == "|-":
			key, block = k, v[:1]
			fm[k] = ""
		case strings.HasPrefix(v, `"`):
			s, err := unquoteDouble(v)
			if err != nil {
				return nil, fmt.Errorf("frontmatter line %d: %s: %w", n, k, err)
			}
			fm[k] = s
		case strings.HasPrefix(v, "'"):
			if len(v) < 2 || !strings.HasSuffix(v, "'") {
				return nil, fmt.Errorf("frontmatter line %d: %s: unterminated single-quoted string", n, k)
			}
			fm[k] = strings.ReplaceAll(v[1:len(v)-1], "''", "'")
		case strings.HasPrefix(v, "{") || strings.HasPrefix(v, "["):
			fm[k] = v // flow collections (OpenClaw's metadata JSON) are kept raw
		default:
			if i := strings.Index(v, " #"); i >= 0 {
				v = strings.TrimSpace(v[:i])
			}
			fm[k] = v
			key = k // a plain scalar may continue on indented lines
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("frontmatter: %w", err)
	}
	if !closed {
		return nil, errors.New("frontmatter is not closed by a --- line")
	}
	finish()
	return fm, nil
}

// unquoteDouble reads a YAML double-quoted scalar that ends the line.
func unquoteDouble(v string) (string, error) {
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		c := v[i]
		switch c {
		case '"':
			if strings.TrimSpace(v[i+1:]) != "" && !strings.HasPrefix(strings.TrimSpace(v[i+1:]), "#") {
				return "", errors.New("text after the closing quote")
			}
			return b.String(), nil
		case '\\':
			if i+1 == len(v) {
				return "", errors.New("unterminated escape")
			}
			i++
			switch v[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(v[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", errors.New("unterminated double-quoted string")
}
