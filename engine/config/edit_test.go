package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIsSecretKey(t *testing.T) {
	for k, want := range map[string]bool{
		"apiKey": true, "APIKEY": true, "botToken": true, "token": true, "appPassword": true, "clientSecret": true,
		"contextTokens": false, "maxTokens": false, "mainKey": false, "keepAlive": false, "model": false,
	} {
		if IsSecretKey(k) != want {
			t.Errorf("IsSecretKey(%q) = %v", k, !want)
		}
	}
}

func TestValueRedacts(t *testing.T) {
	t.Setenv("TEST_OC_KEY", "sk-secret")
	c, err := Parse([]byte(`{
  models: { providers: { acme: { api: 'openai-completions', baseUrl: 'http://x', apiKey: '${TEST_OC_KEY}',
    headers: { Authorization: 'Bearer sk-secret' }, models: [{ id: 'm', maxTokens: 100 }] } } },
  agents: { defaults: { model: 'acme/m' } },
}`), "t.json5")
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"agents.defaults.model":                    `"acme/m"`,
		"models.providers.acme.apiKey":             `"[redacted]"`,
		"models.providers.acme.headers":            `{"Authorization":"[redacted]"}`,
		"models.providers.acme.models.0.maxTokens": `100`,
		"models.providers.acme.models.0.id":        `"m"`,
		"gateway.port":                             `18789`,
	} {
		v, ok, err := c.Value(key)
		got, _ := json.Marshal(v)
		if err != nil || !ok || string(got) != want {
			t.Errorf("%s = %s, %v, %v; want %s", key, got, ok, err, want)
		}
	}
	whole, ok, err := c.Value("")
	data, _ := json.Marshal(whole)
	if err != nil || !ok || strings.Contains(string(data), "sk-secret") || !strings.Contains(string(data), `"apiKey":"[redacted]"`) {
		t.Errorf("whole config leaks or lacks: %s", data)
	}
	for _, key := range []string{"agents.nope", "models.providers.acme.models.7", "gateway.port.x"} {
		if _, ok, err := c.Value(key); ok || err != nil {
			t.Errorf("%s: found (%v)", key, err)
		}
	}
	if _, _, err := c.Value("agents..x"); err == nil {
		t.Error("empty key part accepted")
	}
}

func TestSet(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "openclaw.json")
	orig := "// my settings\n{ agents: { defaults: { maxTurns: 10, workspace: '" + filepath.Join(dir, "ws") + "' } } }\n"
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Set(path, "gateway.port", []byte("18790"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Created || res.Backup != path+".bak" || res.Unchanged {
		t.Errorf("result %+v", res)
	}
	if b, _ := os.ReadFile(path + ".bak"); string(b) != orig {
		t.Errorf("backup %q", b)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode: %v %v", fi, err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Gateway.Port != 18790 || c.Agents.Defaults.MaxTurns != 10 {
		t.Errorf("after set: port %d, maxTurns %d", c.Gateway.Port, c.Agents.Defaults.MaxTurns)
	}
	// Edited in place: the comment and the layout stay.
	want := "// my settings\n{ agents: { defaults: { maxTurns: 10, workspace: '" + filepath.Join(dir, "ws") + "' } }, gateway: { port: 18790 } }\n"
	if data, _ := os.ReadFile(path); string(data) != want {
		t.Errorf("file:\n%s\nwant:\n%s", data, want)
	}

	// The .bak keeps the file as it was before the first change: a second
	// change does not overwrite it.
	if res, err := Set(path, "gateway.port", []byte("18791")); err != nil || res.Backup != "" {
		t.Errorf("second set: %+v, %v", res, err)
	}
	if b, _ := os.ReadFile(path + ".bak"); string(b) != orig {
		t.Errorf("backup after a second set %q", b)
	}
	// The same value again changes nothing.
	if res, err := Set(path, "gateway.port", []byte("18791")); err != nil || !res.Unchanged {
		t.Errorf("set to the same value: %+v, %v", res, err)
	}

	// null removes the key: the default applies again.
	if _, err := Set(path, "agents.defaults.maxTurns", []byte("null")); err != nil {
		t.Fatal(err)
	}
	if c, err := Load(path); err != nil || c.Agents.Defaults.MaxTurns == 10 {
		t.Errorf("after removing maxTurns: %v", err)
	}

	// An invalid result is refused, with the key and the reason, and the
	// file stays as it was.
	before, _ := os.ReadFile(path)
	for value, key := range map[string]string{`"often"`: "session.reset.mode", `5`: "gateway.bogus", `"x"`: "gateway.port"} {
		_, err := Set(path, key, []byte(value))
		var ce *Error
		if !errors.As(err, &ce) || ce.Path != key || ce.Line != 0 || ce.File != path {
			t.Errorf("set %s=%s: %v (%+v)", key, value, err, ce)
		}
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Errorf("refused sets changed the file:\n%s", after)
	}
	if _, err := Set(path, "gateway.port.x", []byte("1")); err == nil || !strings.Contains(err.Error(), "not an object") {
		t.Errorf("set under a number: %v", err)
	}
	if _, err := Set(path, "gateway.port", []byte("{")); err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Errorf("bad JSON: %v", err)
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, ".openclaw.json.tmp*")); len(matches) > 0 {
		t.Errorf("temp files left: %v", matches)
	}
}

func TestSetCreates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "openclaw.json")
	res, err := Set(path, "agents.defaults.workspace", []byte(`"`+filepath.Join(dir, "ws")+`"`))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || res.Backup != "" {
		t.Errorf("result %+v", res)
	}
	if _, err := os.Stat(path + ".bak"); err == nil {
		t.Error("backup of nothing")
	}
	if _, err := Load(path); err != nil {
		t.Error(err)
	}
}

func TestSetUnparsable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "openclaw.json")
	if err := os.WriteFile(path, []byte("{ agents: "), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Set(path, "gateway.port", []byte("1")); err == nil || !strings.Contains(err.Error(), "does not parse") {
		t.Errorf("unparsable file: %v", err)
	}
}
