package config

import (
	"reflect"
	"runtime"
	"testing"
	"time"
)

// TestLocalModelRefs: the local provider exists without config and accepts
// any model (the model registry may hold it); listed models keep their path.
func TestLocalModelRefs(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		ref          string
		api          string
		def          ModelDef
	}{
		{"implicit", `{ agents: { defaults: { model: 'local/anything' } } }`,
			"local/anything", APILocal, ModelDef{ID: "anything", ContextWindow: DefaultLocalContextWindow}},
		{"implicitFallback", `{ models: { providers: { o: { api: 'ollama' } } }, agents: { defaults: { model: { primary: 'o/llama3.2', fallbacks: ['local/qwen3-0.6b'] } }, list: [{ id: 'main', model: 'local/smol' }] } }`,
			"local/qwen3-0.6b", APILocal, ModelDef{ID: "qwen3-0.6b", ContextWindow: DefaultLocalContextWindow}},
		{"listedWithPath", `{ models: { providers: { local: { api: 'local', models: [{ id: 'x', path: '/models/x.gguf', contextWindow: 32768 }] } } }, agents: { defaults: { model: 'local/x' } } }`,
			"local/x", APILocal, ModelDef{ID: "x", Path: "/models/x.gguf", ContextWindow: 32768}},
		{"listedAPIImplicit", `{ models: { providers: { local: { models: [{ id: 'x', path: '/models/x.gguf' }] } } }, agents: { defaults: { model: 'local/x' } } }`,
			"local/x", APILocal, ModelDef{ID: "x", Path: "/models/x.gguf", ContextWindow: DefaultLocalContextWindow}},
		{"unlistedBesideListed", `{ models: { providers: { local: { api: 'local', models: [{ id: 'x', path: '/models/x.gguf' }] } } }, agents: { defaults: { model: 'local/registered' } } }`,
			"local/registered", APILocal, ModelDef{ID: "registered", ContextWindow: DefaultLocalContextWindow}},
		{"otherLocalProvider", `{ models: { providers: { gguf: { api: 'local', models: [{ id: 'y', path: '/m/y.gguf' }] } } }, agents: { defaults: { model: 'gguf/y' } } }`,
			"gguf/y", APILocal, ModelDef{ID: "y", Path: "/m/y.gguf", ContextWindow: DefaultLocalContextWindow}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.config), "local.json5")
			if err != nil {
				t.Fatal(err)
			}
			p, md, err := c.ModelDef(tc.ref)
			if err != nil || p.API != tc.api || !reflect.DeepEqual(md, tc.def) {
				t.Errorf("ModelDef(%s) = %q, %+v, %v; want %q, %+v", tc.ref, p.API, md, err, tc.api, tc.def)
			}
			if _, ok := c.Provider(LocalProvider); !ok {
				t.Error("no local provider")
			}
		})
	}
	c := Default()
	if _, _, err := c.ModelDef("gguf/y"); err == nil {
		t.Error("an unconfigured provider other than local resolved")
	}
	if _, ok := c.Provider("openai"); ok {
		t.Error("Provider(openai) exists in the defaults")
	}
	if len(c.Models.Providers) != 0 {
		t.Errorf("the implicit local provider was added to models.providers: %v", c.Models.Providers)
	}
}

func TestParseKeepAlive(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"10m", 10 * time.Minute, true},
		{"1h30m", 90 * time.Minute, true},
		{"0", 0, true},
		{"0s", 0, true},
		{"-1", KeepForever, true},
		{"-5m", KeepForever, true},
		{" 30s ", 30 * time.Second, true},
		{"", 0, false},
		{"10", 0, false},
		{"forever", 0, false},
		{"-1h-", 0, false},
	} {
		got, err := ParseKeepAlive(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseKeepAlive(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestLocalRunnerZero: a Config built in code gets the runner defaults.
func TestLocalRunnerZero(t *testing.T) {
	r := (&Config{}).LocalRunner()
	want := LocalRunner{Threads: max(1, min(physicalCores()-1, 4)), ContextSize: DefaultLocalContextSize, BatchSize: DefaultLocalBatchSize,
		MMap: true, KeepAlive: DefaultLocalKeepAlive, FlashAttention: "off"}
	if r != want {
		t.Errorf("LocalRunner = %+v, want %+v", r, want)
	}
	c := Default()
	c.Models.Local.KeepAlive = "0"
	c.Models.Local.Threads = 8
	if r := c.LocalRunner(); r.KeepAlive != 0 || r.Threads != 8 {
		t.Errorf("keepAlive 0, threads 8: %+v", r)
	}
	if n := physicalCores(); n < 1 || n > runtime.NumCPU() {
		t.Errorf("physicalCores = %d with %d CPUs", n, runtime.NumCPU())
	}
}

func TestAuthProfilesOrder(t *testing.T) {
	c, err := Parse([]byte(`{
		models: { providers: { o: { api: 'openai-completions' }, p: { api: 'anthropic-messages' } } },
		auth: {
			profiles: {
				b: { provider: 'o', apiKey: 'kb' }, a: { provider: 'o', apiKey: 'ka' },
				c: { provider: 'o', apiKey: 'kc' }, z: { provider: 'p', apiKey: 'kz' },
			},
			order: { o: ['c'] },
		},
	}`), "auth.json5")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range c.AuthProfiles("o") {
		ids = append(ids, p.ID+"="+p.APIKey)
	}
	if want := []string{"c=kc", "a=ka", "b=kb"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("AuthProfiles(o) = %q, want %q", ids, want)
	}
	if got := c.AuthProfiles("p"); len(got) != 1 || got[0].ID != "z" || got[0].Mode != AuthModeAPIKey {
		t.Errorf("AuthProfiles(p) = %+v", got)
	}
}

func FuzzParseKeepAlive(f *testing.F) {
	for _, s := range []string{"10m", "0", "-1", "-1s", "1h2m3s4ms", "", "9223372036854775807ns", "1e3h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseKeepAlive(s)
		if err != nil && d != 0 {
			t.Fatalf("error with a duration: %v, %v", d, err)
		}
		if d < 0 && d != KeepForever {
			t.Fatalf("negative keep-alive %v", d)
		}
	})
}
