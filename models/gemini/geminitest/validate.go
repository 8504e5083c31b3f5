package geminitest

//lint:file-ignore ST1005 these are the API's own error texts, sent on the wire as Gemini words them

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// request is a generateContent request, every field the API knows that a
// client may send; decode refuses any other, as the API does.
type request struct {
	Contents          []content         `json:"contents"`
	SystemInstruction *content          `json:"systemInstruction"`
	Tools             []toolDecl        `json:"tools"`
	ToolConfig        json.RawMessage   `json:"toolConfig"`
	GenerationConfig  *generationConfig `json:"generationConfig"`
	SafetySettings    json.RawMessage   `json:"safetySettings"`
	CachedContent     string            `json:"cachedContent"`
}

type content struct {
	Role  string `json:"role,omitempty"`
	Parts []part `json:"parts"`
}

type part struct {
	Text             *string           `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	ThoughtSignature string            `json:"thoughtSignature,omitempty"`
	InlineData       *blob             `json:"inlineData,omitempty"`
	FileData         *fileData         `json:"fileData,omitempty"`
	FunctionCall     *functionCall     `json:"functionCall,omitempty"`
	FunctionResponse *functionResponse `json:"functionResponse,omitempty"`
}

type blob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type fileData struct {
	MimeType string `json:"mimeType"`
	FileURI  string `json:"fileUri"`
}

type functionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type functionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

type toolDecl struct {
	FunctionDeclarations []funcDecl     `json:"functionDeclarations"`
	GoogleSearch         map[string]any `json:"googleSearch"`
	CodeExecution        map[string]any `json:"codeExecution"`
}

type funcDecl struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description"`
	Parameters           *schema         `json:"parameters"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
	Response             *schema         `json:"response"`
}

// schema is the API's Schema message (an OpenAPI 3.0 subset).
type schema struct {
	Type             string             `json:"type"`
	Format           string             `json:"format"`
	Title            string             `json:"title"`
	Description      string             `json:"description"`
	Nullable         bool               `json:"nullable"`
	Enum             []string           `json:"enum"`
	MaxItems         json.Number        `json:"maxItems"`
	MinItems         json.Number        `json:"minItems"`
	MinLength        json.Number        `json:"minLength"`
	MaxLength        json.Number        `json:"maxLength"`
	MinProperties    json.Number        `json:"minProperties"`
	MaxProperties    json.Number        `json:"maxProperties"`
	Minimum          *float64           `json:"minimum"`
	Maximum          *float64           `json:"maximum"`
	Properties       map[string]*schema `json:"properties"`
	Required         []string           `json:"required"`
	Items            *schema            `json:"items"`
	AnyOf            []*schema          `json:"anyOf"`
	PropertyOrdering []string           `json:"propertyOrdering"`
	Pattern          string             `json:"pattern"`
	Default          json.RawMessage    `json:"default"`
	Example          json.RawMessage    `json:"example"`
}

type generationConfig struct {
	MaxOutputTokens  *int            `json:"maxOutputTokens"`
	Temperature      *float64        `json:"temperature"`
	TopP             *float64        `json:"topP"`
	TopK             *int            `json:"topK"`
	CandidateCount   *int            `json:"candidateCount"`
	StopSequences    []string        `json:"stopSequences"`
	ResponseMimeType string          `json:"responseMimeType"`
	ResponseSchema   *schema         `json:"responseSchema"`
	ThinkingConfig   *thinkingConfig `json:"thinkingConfig"`
}

type thinkingConfig struct {
	ThinkingBudget  *int   `json:"thinkingBudget"`
	ThinkingLevel   string `json:"thinkingLevel"`
	IncludeThoughts bool   `json:"includeThoughts"`
}

// decode parses a body strictly: the API's proto parser refuses unknown
// fields.
func decode(body []byte) (*request, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var req request
	if err := dec.Decode(&req); err != nil {
		msg := err.Error()
		if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
			return nil, fmt.Errorf("Invalid JSON payload received. Unknown name %s: Cannot find field.", name)
		}
		return nil, fmt.Errorf("Invalid JSON payload received. %s", strings.TrimPrefix(msg, "json: "))
	}
	return &req, nil
}

// The placeholders Gemini documents for function calls whose signature is
// unknown.
var dummySignatures = []string{"skip_thought_signature_validator", "context_engineering_is_the_way_to_go"}

var funcName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$`)

// validate checks a request the way the API does (see the package doc)
// and returns the text of the last user content with text, for echoes.
// issued tells a signature this server sent.
func validate(req *request, m Model, issued func(string) bool) (string, error) {
	if err := validateTools(req.Tools); err != nil {
		return "", err
	}
	if err := validateThinking(req.GenerationConfig, m); err != nil {
		return "", err
	}
	if si := req.SystemInstruction; si != nil {
		for j, p := range si.Parts {
			if p.Text == nil {
				return "", fmt.Errorf("* GenerateContentRequest.system_instruction.parts[%d]: only text parts are supported", j)
			}
		}
	}
	if len(req.Contents) == 0 {
		return "", errors.New("* GenerateContentRequest.contents: contents is not specified")
	}
	var lastUser string
	turnStart := 0 // first content of the current turn (after the last user text)
	for i, c := range req.Contents {
		if c.Role != "user" && c.Role != "model" {
			return "", errors.New("Please use a valid role: user, model.")
		}
		if i > 0 && c.Role == req.Contents[i-1].Role {
			return "", errors.New("Please ensure that multiturn requests alternate between user and model.")
		}
		if len(c.Parts) == 0 {
			return "", fmt.Errorf("* GenerateContentRequest.contents[%d].parts: contents.parts must not be empty.", i)
		}
		var text []string
		var calls, responses []string
		for j, p := range c.Parts {
			if err := validatePart(p, c.Role, i, j); err != nil {
				return "", err
			}
			switch {
			case p.FunctionCall != nil:
				calls = append(calls, p.FunctionCall.Name)
			case p.FunctionResponse != nil:
				responses = append(responses, p.FunctionResponse.Name)
			case p.Text != nil && !p.Thought:
				text = append(text, *p.Text)
			}
		}
		if c.Role == "user" && len(text) > 0 {
			lastUser = strings.Join(text, "\n")
		}
		if c.Role == "user" && len(responses) < len(c.Parts) {
			turnStart = i + 1 // a user turn with content of its own starts a turn
		}
		if len(responses) > 0 {
			prev := req.Contents[i-min(i, 1)]
			var want []string
			for _, p := range prev.Parts {
				if p.FunctionCall != nil {
					want = append(want, p.FunctionCall.Name)
				}
			}
			if i == 0 || len(want) == 0 {
				return "", errors.New("Please ensure that function response turn comes immediately after a function call turn.")
			}
			if len(want) != len(responses) {
				return "", errors.New("Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.")
			}
			slices.Sort(want)
			slices.Sort(responses)
			if !slices.Equal(want, responses) {
				return "", fmt.Errorf("Please ensure that the function response names %v match the function call names %v of the function call turn.", responses, want)
			}
		}
		if len(calls) > 0 {
			next := i + 1
			if next >= len(req.Contents) || !hasResponses(req.Contents[next]) {
				return "", errors.New("Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.")
			}
		}
	}
	if m.Levels {
		for i := turnStart; i < len(req.Contents); i++ {
			c := req.Contents[i]
			for _, p := range c.Parts {
				if p.FunctionCall == nil {
					continue
				}
				if s := p.ThoughtSignature; !issued(s) && !slices.Contains(dummySignatures, s) {
					return "", fmt.Errorf("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:%s` , position %d. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.", p.FunctionCall.Name, i+1)
				}
				break // only the first call of a step needs one
			}
		}
	}
	return lastUser, nil
}

func hasResponses(c content) bool {
	for _, p := range c.Parts {
		if p.FunctionResponse != nil {
			return true
		}
	}
	return false
}

func validatePart(p part, role string, i, j int) error {
	where := fmt.Sprintf("contents[%d].parts[%d]", i, j)
	n := 0
	for _, set := range []bool{p.Text != nil, p.InlineData != nil, p.FileData != nil, p.FunctionCall != nil, p.FunctionResponse != nil} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		return fmt.Errorf("* GenerateContentRequest.%s.data: required oneof field 'data' must have one initialized field", where)
	case n > 1:
		return fmt.Errorf("Invalid JSON payload received. Oneof field 'data' is already set. Cannot set '%s'", where)
	case p.Text != nil && *p.Text == "" && !p.Thought:
		return errors.New("Unable to submit request because it has an empty text parameter. Add a value to the parameter and try again. Learn more: https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/gemini")
	case p.InlineData != nil:
		if p.InlineData.MimeType == "" {
			return fmt.Errorf("* GenerateContentRequest.%s.inline_data.mime_type: mime_type is required", where)
		}
		if _, err := base64.StdEncoding.DecodeString(p.InlineData.Data); err != nil || p.InlineData.Data == "" {
			return fmt.Errorf("Invalid value at '%s.inline_data.data' (TYPE_BYTES), Base64 decoding failed for %q", where, p.InlineData.Data)
		}
	case p.FunctionCall != nil:
		if role != "model" {
			return fmt.Errorf("* GenerateContentRequest.%s.function_call: function_call is only allowed in model turns", where)
		}
		if p.FunctionCall.Name == "" {
			return fmt.Errorf("* GenerateContentRequest.%s.function_call.name: Name cannot be empty.", where)
		}
		if a := bytes.TrimSpace(p.FunctionCall.Args); len(a) > 0 && a[0] != '{' {
			return fmt.Errorf("Invalid value at '%s.function_call.args' (type.googleapis.com/google.protobuf.Struct), %s", where, a)
		}
	case p.FunctionResponse != nil:
		if role != "user" {
			return fmt.Errorf("* GenerateContentRequest.%s.function_response: function_response is only allowed in user turns", where)
		}
		if p.FunctionResponse.Name == "" {
			return fmt.Errorf("* GenerateContentRequest.%s.function_response.name: Name cannot be empty.", where)
		}
		if r := bytes.TrimSpace(p.FunctionResponse.Response); len(r) == 0 || r[0] != '{' {
			return fmt.Errorf("Invalid value at '%s.function_response.response' (type.googleapis.com/google.protobuf.Struct), %s", where, r)
		}
	}
	return nil
}

func validateTools(tools []toolDecl) error {
	for i, t := range tools {
		for j, d := range t.FunctionDeclarations {
			where := fmt.Sprintf("tools[%d].function_declarations[%d]", i, j)
			if !funcName.MatchString(d.Name) {
				return fmt.Errorf("* GenerateContentRequest.%s.name: Invalid function name. Must start with a letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.), colons (:), or dashes (-), with a maximum length of 64.", where)
			}
			if d.Parameters != nil && len(d.ParametersJSONSchema) > 0 {
				return fmt.Errorf("* GenerateContentRequest.%s: parameters and parameters_json_schema are mutually exclusive", where)
			}
			if s := d.Parameters; s != nil {
				if !strings.EqualFold(s.Type, "object") {
					return fmt.Errorf("* GenerateContentRequest.%s.parameters.type: must be OBJECT", where)
				}
				if len(s.Properties) == 0 {
					return fmt.Errorf("* GenerateContentRequest.%s.parameters.properties: should be non-empty for OBJECT type", where)
				}
				if err := validateSchema(s, where+".parameters"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

var types = []string{"string", "number", "integer", "boolean", "array", "object"}

var formats = map[string][]string{
	"string":  {"enum", "date-time"},
	"integer": {"int32", "int64"},
	"number":  {"float", "double"},
}

func validateSchema(s *schema, where string) error {
	if s == nil {
		return fmt.Errorf("* GenerateContentRequest.%s: schema is null", where)
	}
	t := strings.ToLower(s.Type)
	switch {
	case t == "" && len(s.AnyOf) == 0:
		return fmt.Errorf("* GenerateContentRequest.%s.type: must be specified", where)
	case t != "" && !slices.Contains(types, t):
		return fmt.Errorf("Invalid value at '%s.type' (type.googleapis.com/google.ai.generativelanguage.v1beta.Type), %q", where, s.Type)
	case t == "array" && s.Items == nil:
		return fmt.Errorf("* GenerateContentRequest.%s.items: missing field.", where)
	}
	if s.Format != "" && !slices.Contains(formats[t], s.Format) {
		if t == "string" {
			return fmt.Errorf("* GenerateContentRequest.%s.format: only 'enum' and 'date-time' are supported for STRING type", where)
		}
		return fmt.Errorf("* GenerateContentRequest.%s.format: %q is not supported for %s type", where, s.Format, strings.ToUpper(t))
	}
	if len(s.Enum) > 0 && t != "string" {
		return fmt.Errorf("* GenerateContentRequest.%s.enum: only allowed for STRING type", where)
	}
	for k, e := range s.Enum {
		if e == "" {
			return fmt.Errorf("* GenerateContentRequest.%s.enum[%d]: cannot be empty", where, k)
		}
	}
	for k, r := range s.Required {
		if s.Properties[r] == nil {
			return fmt.Errorf("* GenerateContentRequest.%s.required[%d]: property is not defined", where, k)
		}
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := validateSchema(s.Properties[name], where+".properties["+name+"].value"); err != nil {
			return err
		}
	}
	if s.Items != nil {
		if err := validateSchema(s.Items, where+".items"); err != nil {
			return err
		}
	}
	for k, a := range s.AnyOf {
		if err := validateSchema(a, fmt.Sprintf("%s.any_of[%d]", where, k)); err != nil {
			return err
		}
	}
	return nil
}

func validateThinking(gc *generationConfig, m Model) error {
	if gc == nil || gc.ThinkingConfig == nil {
		return nil
	}
	tc := gc.ThinkingConfig
	switch {
	case !m.Thinking:
		return errors.New("Thinking is not supported by this model.")
	case tc.ThinkingBudget != nil && tc.ThinkingLevel != "":
		return errors.New("You can only set only one of thinking budget and thinking level.")
	case tc.ThinkingLevel != "" && !m.Levels:
		return errors.New("Thinking level is not supported for this model.")
	case tc.ThinkingLevel != "" && !slices.Contains([]string{"low", "high", "LOW", "HIGH"}, tc.ThinkingLevel):
		return fmt.Errorf("Invalid value at 'generation_config.thinking_config.thinking_level' (type.googleapis.com/google.ai.generativelanguage.v1beta.ThinkingConfig.ThinkingLevel), %q", tc.ThinkingLevel)
	case tc.ThinkingBudget != nil && *tc.ThinkingBudget == 0 && !m.CanStopThinking:
		return errors.New("Budget 0 is invalid. This model only works in thinking mode.")
	case tc.ThinkingBudget != nil && (*tc.ThinkingBudget < -1 || *tc.ThinkingBudget > 32768):
		return fmt.Errorf("The thinking budget %d is invalid. Please choose a value between -1 and 32768.", *tc.ThinkingBudget)
	}
	return nil
}
