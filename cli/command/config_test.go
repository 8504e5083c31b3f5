package command

import "testing"

func TestParseValue(t *testing.T) {
	for in, want := range map[string]string{
		"18790":                      `18790`,
		"true":                       `true`,
		"null":                       `null`,
		"loopback":                   `"loopback"`,
		`"true"`:                     `"true"`,
		"{primary: 'ollama/llama3'}": `{"primary":"ollama/llama3"}`,
		`["a", "b",]`:                `["a","b"]`,
		"192.168.1.10":               `"192.168.1.10"`,
		"":                           `""`,
	} {
		got, err := parseValue(in)
		if err != nil || string(got) != want {
			t.Errorf("parseValue(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
}
