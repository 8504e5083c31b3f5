package prompt

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLoadSkills(t *testing.T) {
	bundled, workspace := t.TempDir(), t.TempDir()
	writeFiles(t, bundled, map[string]string{
		"weather/SKILL.md": "---\nname: weather\ndescription: Old forecast skill\n---\nbody\n",
		"gif/SKILL.md":     "---\nname: gif-search\ndescription: >\n  Find a GIF\n  for the moment.\nmetadata: {\"openclaw\":{\"emoji\":\"🎞️\"}}\n---\n",
		"notes/README.md":  "a folder without SKILL.md is not a skill",
		"stray.md":         "not a folder",
	})
	writeFiles(t, workspace, map[string]string{
		"weather/SKILL.md":  "\ufeff---\r\nname: weather\r\ndescription: \"Forecasts from met.no, \\\"free\\\"\" # comment\r\n---\r\n",
		"broken/SKILL.md":   "no frontmatter here\n",
		"unnamed/SKILL.md":  "---\ndescription: has no name\n---\n",
		"unclosed/SKILL.md": "---\nname: x\ndescription: y\n",
		"lists/SKILL.md":    "---\nname: lists\ndescription: 'It''s fine'\ntags:\n  - a\n  - b\n---\n",
	})
	skills, err := LoadSkills(bundled, filepath.Join(t.TempDir(), "missing"), workspace)
	want := []Skill{
		{Name: "gif-search", Description: "Find a GIF for the moment.", Location: filepath.Join(bundled, "gif", "SKILL.md")},
		{Name: "lists", Description: "It's fine", Location: filepath.Join(workspace, "lists", "SKILL.md")},
		{Name: "weather", Description: `Forecasts from met.no, "free"`, Location: filepath.Join(workspace, "weather", "SKILL.md")},
	}
	if !reflect.DeepEqual(skills, want) {
		t.Errorf("skills:\n got  %+v\n want %+v", skills, want)
	}
	if err == nil {
		t.Fatal("want an error naming the bad skills")
	}
	for _, bad := range []string{"broken", "unnamed", "unclosed"} {
		if !strings.Contains(err.Error(), filepath.Join(workspace, bad, "SKILL.md")) {
			t.Errorf("error does not name %s: %v", bad, err)
		}
	}
	if strings.Contains(err.Error(), "lists") || strings.Contains(err.Error(), "notes") {
		t.Errorf("error names a good skill or a non-skill: %v", err)
	}
}

func TestLoadSkillsNone(t *testing.T) {
	skills, err := LoadSkills(filepath.Join(t.TempDir(), "nope"))
	if err != nil || len(skills) != 0 {
		t.Errorf("LoadSkills(missing) = %v, %v; want nothing, no error", skills, err)
	}
}

func TestFrontmatter(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]string
		wantErr string
	}{
		{"---\nname: a\ndescription: plain text: with colon\n---\n", map[string]string{"name": "a", "description": "plain text: with colon"}, ""},
		{"---\nname: a\ndescription: |\n  line one\n  line two\n---\n", map[string]string{"name": "a", "description": "line one\nline two"}, ""},
		{"---\nname: a\ndescription: starts here\n  and goes on\n---", map[string]string{"name": "a", "description": "starts here and goes on"}, ""},
		{"---\n# comment\nname: a\n\n---\n", map[string]string{"name": "a"}, ""},
		{"---\nname: \"unterminated\n---\n", nil, "unterminated"},
		{"---\njust words\n---\n", nil, "line 2"},
		{"", nil, "no frontmatter"},
	}
	for _, tt := range tests {
		got, err := frontmatter([]byte(tt.in))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("frontmatter(%q) err = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("frontmatter(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func FuzzFrontmatter(f *testing.F) {
	f.Add("---\nname: a\ndescription: >\n  x\n---\n")
	f.Add("---\nname: \"a\\\"b\"\n  more\n---")
	f.Fuzz(func(t *testing.T, in string) {
		fm, err := frontmatter([]byte(in))
		if err == nil && fm == nil {
			t.Fatal("nil map without an error")
		}
	})
}
