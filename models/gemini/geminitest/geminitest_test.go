package geminitest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/gemini/geminitest"
	"github.com/openclaw-edge/edge/models/providertest"
)

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	return providertest.Do(t, "POST", url, body, "Content-Type", "application/json")
}

func TestValidation(t *testing.T) {
	const (
		hi    = `{"role":"user","parts":[{"text":"hi"}]}`
		call  = `{"role":"model","parts":[{"functionCall":{"name":"ls","args":{}}},{"functionCall":{"name":"read"}}]}`
		both  = `{"role":"user","parts":[{"functionResponse":{"name":"read","response":{"content":"x"}}},{"functionResponse":{"name":"ls","response":{}}}]}`
		tool  = `"tools":[{"functionDeclarations":[{"name":"ls","parameters":%s}]}]`
		okArg = `{"type":"object","properties":{"a":{"type":"string"}}}`
	)
	withTool := func(params string) string {
		return `{"contents":[` + hi + `],` + strings.Replace(tool, "%s", params, 1) + `}`
	}
	tests := []struct {
		name, body string
		want       string
	}{
		{"not json", `{`, "Invalid JSON payload received."},
		{"unknown field", `{"contents":[` + hi + `],"temperature":1}`, `Unknown name "temperature": Cannot find field.`},
		{"no contents", `{}`, "contents is not specified"},
		{"bad role", `{"contents":[{"role":"assistant","parts":[{"text":"x"}]}]}`, "Please use a valid role: user, model."},
		{"no role", `{"contents":[{"parts":[{"text":"x"}]}]}`, "Please use a valid role"},
		{"roles repeat", `{"contents":[` + hi + `,` + hi + `]}`, "alternate between user and model"},
		{"empty parts", `{"contents":[{"role":"user","parts":[]}]}`, "contents.parts must not be empty"},
		{"empty part", `{"contents":[{"role":"user","parts":[{}]}]}`, "required oneof field 'data'"},
		{"two data", `{"contents":[{"role":"user","parts":[{"text":"a","inlineData":{"mimeType":"image/png","data":"aGk="}}]}]}`, "Oneof field 'data' is already set"},
		{"empty text", `{"contents":[{"role":"user","parts":[{"text":""}]}]}`, "empty text parameter"},
		{"bad base64", `{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"image/png","data":"%%"}}]}]}`, "Base64 decoding failed"},
		{"call from the user", `{"contents":[{"role":"user","parts":[{"functionCall":{"name":"ls"}}]}]}`, "only allowed in model turns"},
		{"args not an object", `{"contents":[` + hi + `,{"role":"model","parts":[{"functionCall":{"name":"ls","args":"{}"}}]},{"role":"user","parts":[{"functionResponse":{"name":"ls","response":{}}}]}]}`, "google.protobuf.Struct"},
		{"response not an object", `{"contents":[` + hi + `,{"role":"model","parts":[{"functionCall":{"name":"ls"}}]},{"role":"user","parts":[{"functionResponse":{"name":"ls","response":"x"}}]}]}`, "function_response.response' (type.googleapis.com/google.protobuf.Struct)"},
		{"orphan response", `{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"ls","response":{}}}]}]}`, "comes immediately after a function call turn"},
		{"one response for two calls", `{"contents":[` + hi + `,` + call + `,{"role":"user","parts":[{"functionResponse":{"name":"ls","response":{}}}]}]}`, "number of function response parts is equal"},
		{"call left unanswered", `{"contents":[` + hi + `,` + call + `]}`, "number of function response parts is equal"},
		{"names differ", `{"contents":[` + hi + `,` + call + `,{"role":"user","parts":[{"functionResponse":{"name":"ls","response":{}}},{"functionResponse":{"name":"cat","response":{}}}]}]}`, "match the function call names"},
		{"bad function name", `{"contents":[` + hi + `],"tools":[{"functionDeclarations":[{"name":"1 ls"}]}]}`, "Invalid function name"},
		{"empty object parameters", withTool(`{"type":"object","properties":{}}`), "should be non-empty for OBJECT type"},
		{"additionalProperties", withTool(`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`), `Unknown name "additionalProperties"`},
		{"$schema", withTool(`{"$schema":"x","type":"object","properties":{"a":{"type":"string"}}}`), `Unknown name "$schema"`},
		{"type list", withTool(`{"type":"object","properties":{"a":{"type":["string","null"]}}}`), "Invalid JSON payload received"},
		{"array without items", withTool(`{"type":"object","properties":{"a":{"type":"array"}}}`), "properties[a].value.items: missing field."},
		{"required undefined", withTool(`{"type":"object","properties":{"a":{"type":"string"}},"required":["b"]}`), "required[0]: property is not defined"},
		{"empty enum value", withTool(`{"type":"object","properties":{"a":{"type":"string","enum":["x",""]}}}`), "enum[1]: cannot be empty"},
		{"enum on integer", withTool(`{"type":"object","properties":{"a":{"type":"integer","enum":["1"]}}}`), "only allowed for STRING type"},
		{"bad format", withTool(`{"type":"object","properties":{"a":{"type":"string","format":"uri"}}}`), "only 'enum' and 'date-time' are supported"},
		{"no type", withTool(`{"type":"object","properties":{"a":{"description":"x"}}}`), "type: must be specified"},
		{"thinking on 2.0", `{"contents":[` + hi + `],"generationConfig":{"thinkingConfig":{"thinkingBudget":512}}}`, "Thinking is not supported by this model."},
	}
	srv := geminitest.NewServer()
	defer srv.Close()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model := "gemini-2.5-flash"
			if strings.Contains(tt.name, "2.0") {
				model = "gemini-2.0-flash"
			}
			status, body := post(t, srv.URL+"/models/"+model+":streamGenerateContent?alt=sse", tt.body)
			var e struct {
				Error struct {
					Code    int
					Message string
					Status  string
				}
			}
			if status != 400 || json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != 400 || e.Error.Status != "INVALID_ARGUMENT" ||
				!strings.Contains(e.Error.Message, tt.want) {
				t.Errorf("got %d %s, want 400 with %q", status, body, tt.want)
			}
		})
	}
	// A valid tool loop with the calls answered out of order passes.
	status, body := post(t, srv.URL+"/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
		`{"contents":[`+hi+`,`+call+`,`+both+`],`+strings.Replace(tool, "%s", okArg, 1)+`}`)
	if status != 200 || !strings.Contains(body, `"text":": hi"`) {
		t.Errorf("valid request: %d %s", status, body)
	}
}

func TestThinkingRules(t *testing.T) {
	const hi = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"thinkingConfig":%s}}`
	tests := []struct {
		model, config string
		want          string // "" when accepted
	}{
		{"gemini-2.5-flash", `{"thinkingBudget":0}`, ""},
		{"gemini-2.5-pro", `{"thinkingBudget":0}`, "Budget 0 is invalid"},
		{"gemini-2.5-pro", `{"thinkingBudget":-1,"includeThoughts":true}`, ""},
		{"gemini-2.5-flash", `{"thinkingBudget":40000}`, "between -1 and 32768"},
		{"gemini-2.5-flash", `{"thinkingLevel":"low"}`, "Thinking level is not supported"},
		{"gemini-3-pro-preview", `{"thinkingLevel":"high","thinkingBudget":10}`, "only one of thinking budget and thinking level"},
		{"gemini-3-pro-preview", `{"thinkingLevel":"medium"}`, "thinking_level"},
		{"gemini-3-pro-preview", `{"thinkingLevel":"low"}`, ""},
	}
	srv := geminitest.NewServer()
	defer srv.Close()
	for _, tt := range tests {
		status, body := post(t, srv.URL+"/models/"+tt.model+":generateContent", strings.Replace(hi, "%s", tt.config, 1))
		if tt.want == "" && status != 200 || tt.want != "" && (status != 400 || !strings.Contains(body, tt.want)) {
			t.Errorf("%s %s: %d %s, want %q", tt.model, tt.config, status, body, tt.want)
		}
	}
}

// On gemini-3 the first call of each step of the current turn needs a
// signature this server issued, or a placeholder.
func TestSignatures(t *testing.T) {
	srv := geminitest.NewServer(geminitest.Reply{ToolCalls: []engine.ToolCall{{Name: "ls"}}})
	defer srv.Close()
	url := srv.URL + "/models/gemini-3-pro-preview:generateContent"
	status, body := post(t, url, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
	var got struct {
		Candidates []struct {
			Content struct {
				Parts []struct {
					FunctionCall     map[string]any
					ThoughtSignature string
				}
			}
			FinishReason string
		}
		ResponseID string
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil || status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	sig := got.Candidates[0].Content.Parts[0].ThoughtSignature
	if sig == "" || got.Candidates[0].FinishReason != "STOP" || got.ResponseID != "resp1" {
		t.Fatalf("reply: %s", body)
	}
	turn := func(sig string) string {
		s := ""
		if sig != "" {
			s = `,"thoughtSignature":"` + sig + `"`
		}
		return `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"functionCall":{"name":"ls","args":{}}` + s +
			`}]},{"role":"user","parts":[{"functionResponse":{"name":"ls","response":{"content":"a"}}}]}]}`
	}
	for _, tt := range []struct {
		sig  string
		want int
	}{{sig, 200}, {"skip_thought_signature_validator", 200}, {"", 400}, {"Zm9yZ2Vk", 400}} {
		if status, body := post(t, url, turn(tt.sig)); status != tt.want {
			t.Errorf("signature %q: %d %s", tt.sig, status, body)
		}
	}
	// Earlier turns are not checked.
	old := strings.Replace(turn(""), `]}]}`, `]},{"role":"model","parts":[{"text":"done"}]},{"role":"user","parts":[{"text":"again"}]}]}`, 1)
	if status, body := post(t, url, old); status != 200 {
		t.Errorf("earlier turn: %d %s", status, body)
	}
}

func TestOtherRoutes(t *testing.T) {
	srv := geminitest.NewServer(geminitest.Reply{Text: "abcdef", Chunk: 3})
	defer srv.Close()
	srv.RequireKey("k")
	resp, err := http.Get(srv.URL + "/models?key=k")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"name":"models/gemini-2.5-flash"`) {
		t.Errorf("list: %d %s", resp.StatusCode, b)
	}
	// Without alt=sse the stream is a JSON array.
	status, body := post(t, srv.URL+"/models/gemini-2.5-flash:streamGenerateContent?key=k", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
	var chunks []json.RawMessage
	if status != 200 || json.Unmarshal([]byte(body), &chunks) != nil || len(chunks) != 3 {
		t.Errorf("array: %d %s", status, body)
	}
	for _, path := range []string{"/models/gemini-2.5-flash:embedContent?key=k", "/../v1/models?key=k"} {
		if status, _ := post(t, srv.URL+path, `{}`); status != 404 {
			t.Errorf("%s: %d", path, status)
		}
	}
}
