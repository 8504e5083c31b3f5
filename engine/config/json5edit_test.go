package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// editDoc sets key to value (JSON; "" removes it) in doc as Set does,
// without the file and the config's own checks: the tree edit, then the
// in-place edit checked against it.
func editDoc(doc, key, value string) (string, error) {
	tree, err := (json5Parser{}).Unmarshal([]byte(doc))
	if err != nil {
		return "", err
	}
	parts, err := splitKey(key)
	if err != nil {
		return "", err
	}
	var v any
	if value != "" {
		dec := json.NewDecoder(strings.NewReader(value))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return "", err
		}
		v = plainNumbers(v)
	}
	if err := setPath(tree, parts, v); err != nil {
		return "", err
	}
	out, err := editInPlace([]byte(doc), parts, v, tree)
	return string(out), err
}

func TestEditJSON5(t *testing.T) {
	for _, tc := range []struct {
		name, doc, key, value, want string
	}{
		{"replace keeps comments",
			"// top\n{\n  // the port\n  gateway: { port: 18789 }, // inline\n  /* after */\n}\n", "gateway.port", "18790",
			"// top\n{\n  // the port\n  gateway: { port: 18790 }, // inline\n  /* after */\n}\n"},
		{"insert after a trailing comma",
			"{\n  gateway: {\n    port: 1, // the port\n  },\n}\n", "gateway.bind", `"lan"`,
			"{\n  gateway: {\n    port: 1, // the port\n    bind: \"lan\",\n  },\n}\n"},
		{"insert without a trailing comma adds one before",
			"{\n  gateway: {\n    port: 1 // the port\n  }\n}\n", "gateway.bind", `"lan"`,
			"{\n  gateway: {\n    port: 1, // the port\n    bind: \"lan\"\n  }\n}\n"},
		{"plain JSON stays JSON",
			"{\n  \"gateway\": {\n    \"port\": 1\n  }\n}\n", "agents.defaults.maxTurns", "5",
			"{\n  \"gateway\": {\n    \"port\": 1\n  },\n  \"agents\": {\"defaults\": {\"maxTurns\": 5}}\n}\n"},
		{"nested insert creates the objects",
			"{\n  gateway: {port: 1},\n}\n", "agents.defaults.maxTurns", "5",
			"{\n  gateway: {port: 1},\n  agents: { defaults: { maxTurns: 5 } },\n}\n"},
		{"quoted keys, escapes",
			"{ 'my key': { \"a\\u0062\": 1, \"c\": 'it\\'s' } }", "my key.ab", "2",
			"{ 'my key': { \"a\\u0062\": 2, \"c\": 'it\\'s' } }"},
		{"a key that needs quotes",
			"{ a: {} }", "a.b-c", "true",
			"{ a: { \"b-c\": true } }"},
		{"array item",
			"{ agents: { list: [ { id: 'a' }, { id: 'b' }, ] } }", "agents.list.1.id", `"c"`,
			"{ agents: { list: [ { id: 'a' }, { id: \"c\" }, ] } }"},
		{"insert in an array item",
			"{ agents: { list: [ { id: 'a' } ] } }", "agents.list.0.name", `"A"`,
			"{ agents: { list: [ { id: 'a', name: \"A\" } ] } }"},
		{"unicode",
			"{ name: 'héllo ✓', /* ünï */ x: 1 }", "x", `"日本 ✓"`,
			"{ name: 'héllo ✓', /* ünï */ x: \"日本 ✓\" }"},
		{"CRLF insert",
			"{\r\n  a: 1,\r\n}\r\n", "b", "2",
			"{\r\n  a: 1,\r\n  b: 2,\r\n}\r\n"},
		{"CRLF remove",
			"{\r\n  a: 1,\r\n  b: 2\r\n}\r\n", "b", "",
			"{\r\n  a: 1\r\n}\r\n"},
		{"a value that is an object",
			"{\n  agents: {\n    defaults: { model: 'a/b' },\n  },\n}\n", "agents.defaults.model", `{"primary":"ollama/llama3.2","fallbacks":["local/qwen3-1.7b"]}`,
			"{\n  agents: {\n    defaults: { model: { fallbacks: [\"local/qwen3-1.7b\"], primary: \"ollama/llama3.2\" } },\n  },\n}\n"},
		{"a long object goes on lines of its own",
			"{\n  models: {\n    providers: {},\n  },\n}\n", "models.providers.acme", `{"api":"openai-completions","baseUrl":"http://192.168.1.20:8080/v1","apiKey":"${ACME_KEY}"}`,
			"{\n  models: {\n    providers: { acme: {\n      api: \"openai-completions\",\n      apiKey: \"${ACME_KEY}\",\n      baseUrl: \"http://192.168.1.20:8080/v1\"\n    } },\n  },\n}\n"},
		{"into an empty object on its own lines",
			"{\n  gateway: {\n  },\n}\n", "gateway.port", "1",
			"{\n  gateway: {\n    port: 1\n  },\n}\n"},
		{"into an empty top-level object",
			"{}", "gateway.port", "1",
			`{"gateway": {"port": 1}}`},
		{"into an empty JSON5 object",
			"// mine\n{}", "gateway.port", "1",
			"// mine\n{ gateway: { port: 1 } }"},
		{"null on the way becomes the object",
			"{ gateway: null }", "gateway.port", "1",
			"{ gateway: { port: 1 } }"},
		{"tabs",
			"{\n\tgateway: {\n\t\tport: 1\n\t}\n}\n", "gateway.bind", `"lan"`,
			"{\n\tgateway: {\n\t\tport: 1,\n\t\tbind: \"lan\"\n\t}\n}\n"},
		{"strings that look like comments",
			"{ a: \"// not\", b: '/* nor */', c: 1 }", "c", "2",
			"{ a: \"// not\", b: '/* nor */', c: 2 }"},
		{"remove a middle member on one line",
			"{ a: 1, b: 2, c: 3 }", "b", "",
			"{ a: 1, c: 3 }"},
		{"remove the last member on one line",
			"{ a: 1, b: 2 }", "b", "",
			"{ a: 1 }"},
		{"remove the only member on one line",
			"{ a: { b: 1 }, c: {d: 2} }", "a.b", "",
			"{ a: {}, c: {d: 2} }"},
		{"remove the only member on its own line",
			"{\n  a: 1\n}", "a", "",
			"{\n}"},
		{"remove the first member on one line",
			"{ a: 1, b: 2 }", "a", "",
			"{ b: 2 }"},
		{"remove a line, comments stay",
			"{\n  // port\n  port: 1, // the port\n  bind: 'lan',\n}\n", "port", "",
			"{\n  // port\n  // the port\n  bind: 'lan',\n}\n"},
		{"remove a whole line",
			"{\n  port: 1,\n  bind: 'lan', // last\n}\n", "port", "",
			"{\n  bind: 'lan', // last\n}\n"},
		{"remove the last member keeps the object's comma style",
			"{\n  \"port\": 1,\n  \"bind\": \"lan\"\n}\n", "bind", "",
			"{\n  \"port\": 1\n}\n"},
		{"remove a nested object",
			"{\n  a: {\n    b: { c: 1 },\n    d: 2,\n  },\n}\n", "a.b", "",
			"{\n  a: {\n    d: 2,\n  },\n}\n"},
		{"set null removes",
			"{ a: 1, b: 2 }", "a", "null",
			"{ b: 2 }"},
		{"hex, Infinity and +numbers stay",
			"{ a: 0x1F, b: +Infinity, c: .5, d: 1 }", "d", "2.5",
			"{ a: 0x1F, b: +Infinity, c: .5, d: 2.5 }"},
		{"a block comment the decoder ends at its first */",
			"{ /* a * b */ a: 1 }", "a", "2",
			"{ /* a * b */ a: 2 }"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := editDoc(tc.doc, tc.key, tc.value)
			if err != nil {
				t.Fatalf("%s: %v", tc.key, err)
			}
			if got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestEditJSON5Refuses: what the editor will not do is an error, never a
// wrong file.
func TestEditJSON5Refuses(t *testing.T) {
	for _, tc := range []struct{ doc, key, value, want string }{
		{"{ a: 1, a: 2 }", "a", "3", `the key "a" is written twice`},
		{"{ a: { b: 1 }, a: { b: 2 } }", "a.b", "", `the key "a" is written twice`},
	} {
		if got, err := editDoc(tc.doc, tc.key, tc.value); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s in %s: %q, %v; want %q", tc.key, tc.doc, got, err, tc.want)
		}
	}
}

// TestSetRefusesWithWhere: a file the editor cannot change in place is
// refused with its line and what to write by hand, and left as it was.
func TestSetRefusesWithWhere(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "openclaw.json5")
	orig := "{\n  // twice\n  gateway: { port: 1 },\n  gateway: { port: 2 },\n}\n"
	if err := os.WriteFile(path, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Set(path, "gateway.port", []byte("18790"))
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 4 || ce.Path != "gateway.port" || !strings.Contains(ce.Reason, "written twice") || !strings.Contains(ce.Reason, "edit it by hand to set it to 18790") {
		t.Errorf("refusal: %v (%+v)", err, ce)
	}
	if b, _ := os.ReadFile(path); string(b) != orig {
		t.Errorf("file changed:\n%s", b)
	}
	if _, err := os.Stat(path + ".bak"); err == nil {
		t.Error("a refused change left a .bak")
	}
}

func TestUnset(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "openclaw.json5")
	orig := "\uFEFF// mine\r\n{\r\n  gateway: {\r\n    port: 18790, // moved\r\n    bind: 'lan',\r\n  },\r\n  agents: { defaults: { workspace: '" + filepath.Join(dir, "ws") + "' } },\r\n}\r\n"
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Unset(path, "gateway.port")
	if err != nil || res.Backup != path+".bak" || res.Unchanged {
		t.Fatalf("unset: %+v %v", res, err)
	}
	want := "\uFEFF// mine\r\n{\r\n  gateway: {\r\n    // moved\r\n    bind: 'lan',\r\n  },\r\n  agents: { defaults: { workspace: '" + filepath.Join(dir, "ws") + "' } },\r\n}\r\n"
	if b, _ := os.ReadFile(path); string(b) != want {
		t.Errorf("file:\n%q\nwant:\n%q", b, want)
	}
	if c, err := Load(path); err != nil || c.Gateway.Port != 18789 || c.Gateway.Bind != "lan" {
		t.Errorf("after unset: %+v %v", c, err)
	}
	var ns *NotSetError
	if _, err := Unset(path, "gateway.port"); !errors.As(err, &ns) || ns.Key != "gateway.port" || !strings.Contains(err.Error(), "nothing to remove") {
		t.Errorf("unset again: %v", err)
	}
	if _, err := Unset(filepath.Join(dir, "none.json"), "gateway.port"); !errors.As(err, &ns) || ns.File != "" {
		t.Errorf("unset without a file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "none.json")); err == nil {
		t.Error("unset created a file")
	}
	// The result must still be valid: the default workspace is fine, but a
	// list item cannot go.
	if err := os.WriteFile(path, []byte("{ agents: { list: [{ id: 'a', workspace: '"+filepath.Join(dir, "ws")+"' }] } }"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Unset(path, "agents.list.0"); err == nil || !strings.Contains(err.Error(), "cannot remove a list item") {
		t.Errorf("unset a list item: %v", err)
	}
}

// FuzzJSON5Edit: on any document the JSON5 decoder reads, an edit either
// is refused or reads back as the tree edit (a plain JSON file staying
// plain JSON), and never panics.
func FuzzJSON5Edit(f *testing.F) {
	f.Add("// c\n{\n  a: { b: 1, }, // x\n}\n", "a.c", `{"d":[1,"x"]}`, false)
	f.Add("{\"a\": [ {\"b\": 1} ]}", "a.0.b", `2`, false)
	f.Add("{ a: 1, /* q */ b: 'x\\'y', }", "b", ``, true)
	f.Add("{\r\n\ta: {\r\n\t},\r\n}", "a.b.c", `"z"`, false)
	f.Add("{ 'k y': null }", "k y.z", `1e3`, false)
	f.Add("{ a: 1 // end", "a", `null`, false)
	f.Fuzz(func(t *testing.T, doc, key, value string, unset bool) {
		if len(doc) > 4096 {
			return
		}
		tree, err := (json5Parser{}).Unmarshal([]byte(doc))
		if err != nil {
			return
		}
		parts, err := splitKey(key)
		if err != nil {
			return
		}
		var v any
		if !unset {
			dec := json.NewDecoder(strings.NewReader(value))
			dec.UseNumber()
			if dec.Decode(&v) != nil {
				return
			}
			v = plainNumbers(v)
		}
		if setPath(tree, parts, v) != nil {
			return
		}
		out, _, err := editJSON5([]byte(doc), parts, v)
		if err != nil {
			var ee *editError
			if !errors.As(err, &ee) {
				t.Fatalf("not an editError: %v", err)
			}
			return // refused
		}
		got, err := (json5Parser{}).Unmarshal(out)
		if err != nil {
			t.Fatalf("edited file does not parse (%v):\n%s", err, out)
		}
		if !sameJSON(got, tree) {
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(tree)
			t.Fatalf("edited file reads\n%s\nwant\n%s\nfile:\n%s", gj, wj, out)
		}
		if json.Valid([]byte(doc)) && !json.Valid(out) {
			t.Fatalf("a JSON file is no longer JSON:\n%s", out)
		}
	})
}
