package gguftest

import "testing"

func TestBigVocabTokens(t *testing.T) {
	tokens, scores, types := bigVocab(151936)
	if len(tokens) != 151936 || len(scores) != len(tokens) || len(types) != len(tokens) {
		t.Fatalf("%d tokens, %d scores, %d types", len(tokens), len(scores), len(types))
	}
	if tokens[0] != "<unk>" || tokens[1] != "<s>" || tokens[2] != "</s>" || tokens[3] != "<0x00>" || tokens[3+0x0A] != "<0x0A>" || tokens[258] != "<0xFF>" || types[258] != 6 || types[259] != 1 {
		t.Errorf("start of the vocabulary: %q, types %v", tokens[:4], types[:4])
	}
	seen := map[string]bool{}
	for i, s := range tokens {
		if seen[s] {
			t.Fatalf("token %d %q twice", i, s)
		}
		seen[s] = true
	}
	for _, s := range []string{"▁the", "▁Once", "e", "▁w0", "▁w1000"} {
		if !seen[s] {
			t.Errorf("no token %q", s)
		}
	}
}
