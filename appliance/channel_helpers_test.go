package main

import (
	"encoding/json"
	"testing"
)

// lastUserTexts returns the text of the last user message of each
// OpenAI-style request the fake model received (the channel end-to-end
// tests read what reached the model).
func lastUserTexts(t testing.TB, reqs []json.RawMessage) []string {
	t.Helper()
	var out []string
	for _, raw := range reqs {
		var req struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(raw, &req); err != nil {
			t.Fatal(err)
		}
		last := ""
		for _, m := range req.Messages {
			if m.Role != "user" {
				continue
			}
			var s string
			if json.Unmarshal(m.Content, &s) != nil {
				var parts []struct {
					Text string `json:"text"`
				}
				_ = json.Unmarshal(m.Content, &parts)
				for _, p := range parts {
					s += p.Text
				}
			}
			last = s
		}
		out = append(out, last)
	}
	return out
}
