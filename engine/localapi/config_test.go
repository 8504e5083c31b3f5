package localapi

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/openclaw-edge/edge/engine/gateway/gatewaytest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/config"
)

// TestConfigEndpoints gets, sets and validates the gateway's config file
// over a Unix socket.
func TestConfigEndpoints(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir) // the default workspace must be creatable
	t.Setenv("TEST_OC_KEY", "sk-very-secret")
	file := filepath.Join(dir, "openclaw.json")
	if err := os.WriteFile(file, []byte(`{
  models: { providers: { acme: { api: 'openai-completions', baseUrl: 'http://x', apiKey: '${TEST_OC_KEY}', models: [{ id: 'm' }] } } },
}`), 0o600); err != nil {
		t.Fatal(err)
	}
	h := gatewaytest.NewHarness(t, "fake/model", nil)
	c := client.New(serveUnix(t, New(h.G, nil, Config{ConfigFile: file})))
	ctx := context.Background()

	v, err := c.ConfigGet(ctx, "gateway.port")
	if err != nil || string(v.Value) != "18789" || v.File != file {
		t.Fatalf("get gateway.port: %+v %v", v, err)
	}
	v, err = c.ConfigGet(ctx, "models.providers.acme")
	if err != nil || strings.Contains(string(v.Value), "sk-very") || !strings.Contains(string(v.Value), `"apiKey":"[redacted]"`) {
		t.Fatalf("get provider: %s %v", v.Value, err)
	}
	var ae *api.Error
	if _, err := c.ConfigGet(ctx, "gateway.nope"); !errors.As(err, &ae) || ae.Code != api.CodeNotFound {
		t.Errorf("unknown key: %v", err)
	}

	res, err := c.ConfigSet(ctx, api.ConfigSetRequest{Key: "gateway.port", Value: json.RawMessage("18790")})
	if err != nil || !res.OK || !res.RestartNeeded || string(res.Value) != "18790" || res.Backup != file+".bak" {
		t.Fatalf("set: %+v %v", res, err)
	}
	if v, err := c.ConfigGet(ctx, "gateway.port"); err != nil || string(v.Value) != "18790" {
		t.Errorf("get after set: %+v %v", v, err)
	}
	before, _ := os.ReadFile(file)
	_, err = c.ConfigSet(ctx, api.ConfigSetRequest{Key: "session.reset.mode", Value: json.RawMessage(`"often"`)})
	if !errors.As(err, &ae) || ae.Code != api.CodeInvalidConfig || !strings.Contains(ae.Message, "session.reset.mode") || !strings.Contains(ae.Message, "was not changed") {
		t.Errorf("invalid set: %v", err)
	}
	if after, _ := os.ReadFile(file); string(after) != string(before) {
		t.Error("an invalid set changed the file")
	}
	// null removes the key: the default applies again.
	if res, err := c.ConfigSet(ctx, api.ConfigSetRequest{Key: "gateway.port", Value: json.RawMessage("null")}); err != nil || string(res.Value) != "18789" {
		t.Errorf("set null: %+v %v", res, err)
	}
	if _, err := c.ConfigSet(ctx, api.ConfigSetRequest{Value: json.RawMessage("1")}); !errors.As(err, &ae) || ae.Code != api.CodeBadRequest {
		t.Errorf("set without a key: %v", err)
	}

	val, err := c.ConfigValidate(ctx)
	if err != nil || !val.OK || val.File != file || len(val.Errors) != 0 {
		t.Errorf("validate: %+v %v", val, err)
	}
	if err := os.WriteFile(file, []byte("{ agents: { defualts: {} } }"), 0o600); err != nil {
		t.Fatal(err)
	}
	val, err = c.ConfigValidate(ctx)
	if err != nil || val.OK || len(val.Errors) != 1 || val.Errors[0].Path != "agents.defualts" || val.Errors[0].Line != 1 {
		t.Errorf("validate a bad file: %+v %v", val, err)
	}
	if _, err := c.ConfigGet(ctx, "gateway.port"); !errors.As(err, &ae) || ae.Code != api.CodeInvalidConfig {
		t.Errorf("get from a bad file: %v", err)
	}
}

// TestConfigSetCreates: a gateway on its built-in defaults creates its
// config file on the first set, and reads it from then on.
func TestConfigSetCreates(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	h := gatewaytest.NewHarness(t, "fake/model", nil)
	newFile := filepath.Join(dir, "state", "openclaw.json")
	if err := os.MkdirAll(filepath.Dir(newFile), 0o700); err != nil {
		t.Fatal(err)
	}
	c := client.New(serveUnix(t, New(h.G, nil, Config{ConfigNewFile: newFile})))
	ctx := context.Background()
	if val, err := c.ConfigValidate(ctx); err != nil || !val.OK || !val.Missing {
		t.Errorf("validate the defaults: %+v %v", val, err)
	}
	res, err := c.ConfigSet(ctx, api.ConfigSetRequest{Key: "gateway.logLevel", Value: json.RawMessage(`"debug"`)})
	if err != nil || !res.Created || res.File != newFile {
		t.Fatalf("set: %+v %v", res, err)
	}
	if v, err := c.ConfigGet(ctx, "gateway.logLevel"); err != nil || string(v.Value) != `"debug"` || v.File != newFile {
		t.Errorf("get: %+v %v", v, err)
	}
}

// TestConfigValidateAccessKeys: the gateway's own check of its file (what
// `openclaw config validate` asks it) refuses the access keys its start
// would refuse, with key paths and lines, and config set keeps such a
// value out of the file.
func TestConfigValidateAccessKeys(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	file := filepath.Join(dir, "openclaw.json")
	good := "{\n  channels: { imessage: { dmPolicy: 'allowlist', allowFrom: ['+15550001111'] } },\n}\n"
	bad := "{\n  commands: { ownerAllowFrom: ['imessage:+1222x'] },\n  channels: { imessage: { dmPolicy: 'allowlist', allowFrom: [] } },\n}\n"
	if err := os.WriteFile(file, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	h := gatewaytest.NewHarness(t, "fake/model", nil)
	c := client.New(serveUnix(t, New(h.G, nil, Config{ConfigFile: file})))
	ctx := context.Background()
	val, err := c.ConfigValidate(ctx)
	if err != nil || val.OK || val.By != "gateway" || len(val.Errors) != 2 {
		t.Fatalf("validate: %+v %v", val, err)
	}
	for i, want := range []api.ConfigProblem{
		{File: file, Line: 2, Path: "commands.ownerAllowFrom[0]", Reason: `"+1222x" is not a phone number`},
		{File: file, Line: 3, Path: "channels.imessage.allowFrom", Reason: "dmPolicy allowlist needs at least one sender"},
	} {
		got := val.Errors[i]
		if got.File != want.File || got.Line != want.Line || got.Path != want.Path || !strings.HasPrefix(got.Reason, want.Reason) {
			t.Errorf("problem %d: %+v, want %+v", i, got, want)
		}
	}

	if err := os.WriteFile(file, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	var ae *api.Error
	_, err = c.ConfigSet(ctx, api.ConfigSetRequest{Key: "channels.imessage.allowFrom", Value: json.RawMessage(`["+1555000111\u200b1"]`)})
	if !errors.As(err, &ae) || ae.Code != api.CodeInvalidConfig || !strings.Contains(ae.Message, "channels.imessage.allowFrom[0]") || !strings.Contains(ae.Message, "U+200B") {
		t.Errorf("set an invisible character: %v", err)
	}
	if after, _ := os.ReadFile(file); string(after) != good {
		t.Errorf("a refused set changed the file:\n%s", after)
	}
}

// TestConfigUnsetRestartPending: set and unset edit the file in place
// (its comments stay), unset of a key the file does not set is not_found,
// and the status says which changes wait for a restart and how to do it.
func TestConfigUnsetRestartPending(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("INVOCATION_ID", "")    // not started by systemd
	t.Setenv("XPC_SERVICE_NAME", "") // nor by launchd
	file := filepath.Join(dir, "openclaw.json5")
	orig := "// my gateway\n{\n  gateway: {\n    port: 18790, // not the default\n    bind: 'loopback',\n  },\n}\n"
	if err := os.WriteFile(file, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	h := gatewaytest.NewHarness(t, "fake/model", nil)
	c := client.New(serveUnix(t, New(h.G, nil, Config{ConfigFile: file})))
	ctx := context.Background()

	if st, err := c.Status(ctx); err != nil || len(st.RestartPending) != 0 {
		t.Fatalf("status before any change: %+v %v", st, err)
	}
	res, err := c.ConfigUnset(ctx, api.ConfigUnsetRequest{Key: "gateway.port"})
	if err != nil || !res.OK || !res.RestartNeeded || string(res.Value) != "18789" || res.Backup != file+".bak" || res.RestartHow != "stop openclaw-gateway run and start it again" {
		t.Fatalf("unset: %+v %v", res, err)
	}
	if _, err := c.ConfigSet(ctx, api.ConfigSetRequest{Key: "gateway.logLevel", Value: json.RawMessage(`"debug"`)}); err != nil {
		t.Fatal(err)
	}
	want := "// my gateway\n{\n  gateway: {\n    // not the default\n    bind: 'loopback',\n    logLevel: \"debug\",\n  },\n}\n"
	if b, _ := os.ReadFile(file); string(b) != want {
		t.Errorf("file:\n%s\nwant:\n%s", b, want)
	}
	if b, _ := os.ReadFile(file + ".bak"); string(b) != orig {
		t.Errorf("the .bak is not the original:\n%s", b)
	}

	var ae *api.Error
	if _, err := c.ConfigUnset(ctx, api.ConfigUnsetRequest{Key: "gateway.port"}); !errors.As(err, &ae) || ae.Code != api.CodeNotFound || !strings.Contains(ae.Message, "does not set gateway.port") {
		t.Errorf("unset again: %v", err)
	}
	if _, err := c.ConfigUnset(ctx, api.ConfigUnsetRequest{}); !errors.As(err, &ae) || ae.Code != api.CodeBadRequest {
		t.Errorf("unset without a key: %v", err)
	}
	// Removing what the config needs is refused like an invalid set.
	if err := os.WriteFile(file, []byte("{ channels: { imessage: { dmPolicy: 'allowlist', allowFrom: ['+15550001111'] } } }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ConfigUnset(ctx, api.ConfigUnsetRequest{Key: "channels.imessage.allowFrom"}); !errors.As(err, &ae) || ae.Code != api.CodeInvalidConfig || !strings.Contains(ae.Message, "was not changed") {
		t.Errorf("unset that invalidates: %v", err)
	}

	st, err := c.Status(ctx)
	if err != nil || strings.Join(st.RestartPending, ",") != "gateway.port,gateway.logLevel" || st.RestartHow != "stop openclaw-gateway run and start it again" {
		t.Errorf("status: %q %q %v", st.RestartPending, st.RestartHow, err)
	}
	t.Setenv("INVOCATION_ID", "0123abcd") // systemd's
	if st, err := c.Status(ctx); err != nil || st.RestartHow != "sudo openclaw gateway restart" {
		t.Errorf("status under systemd: %q %v", st.RestartHow, err)
	}
}

// TestConfigAppliesLive: a setting the wiring can apply while the gateway
// runs is applied and never reported as pending; the others still are.
func TestConfigAppliesLive(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	file := filepath.Join(dir, "openclaw.json5")
	if err := os.WriteFile(file, []byte("{\n  gateway: { logLevel: 'info' },\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var applied []string
	live := func(key string, c *config.Config) bool {
		if key != "gateway.logLevel" {
			return false
		}
		applied = append(applied, c.Gateway.LogLevel)
		return true
	}
	h := gatewaytest.NewHarness(t, "fake/model", nil)
	c := client.New(serveUnix(t, New(h.G, nil, Config{ConfigFile: file, ApplyLive: live})))
	ctx := context.Background()
	res, err := c.ConfigSet(ctx, api.ConfigSetRequest{Key: "gateway.logLevel", Value: json.RawMessage(`"debug"`)})
	if err != nil || !res.Applied || res.RestartNeeded {
		t.Fatalf("set logLevel: %+v %v", res, err)
	}
	if len(applied) != 1 || applied[0] != "debug" {
		t.Errorf("applied %q, want the new value", applied)
	}
	res, err = c.ConfigSet(ctx, api.ConfigSetRequest{Key: "gateway.port", Value: json.RawMessage(`18790`)})
	if err != nil || res.Applied || !res.RestartNeeded {
		t.Fatalf("set port: %+v %v", res, err)
	}
	st, err := c.Status(ctx)
	if err != nil || len(st.RestartPending) != 1 || st.RestartPending[0] != "gateway.port" {
		t.Errorf("restart pending: %+v %v", st.RestartPending, err)
	}
}
