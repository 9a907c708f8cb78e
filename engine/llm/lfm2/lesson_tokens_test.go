package lfm2

import (
	"path/filepath"
	"testing"

	"gpulab/engine/llm/tokenizer"
)

// TestTokenizerAgreement: the fixture tokenizer encodes every text as HF
// tokenizers did.
func TestTokenizerAgreement(t *testing.T) {
	dir := filepath.Join(fixtures, "tokenizer")
	tok, err := tokenizer.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	same, total, err := TokenizerAgreement(tok, dir)
	if err != nil || total == 0 || same != total {
		t.Errorf("%d of %d texts agree (%v)", same, total, err)
	}
}

// TestWriteRandomModelWithVocab: the MoE fixture's shape with another
// vocabulary and its own LM head.
func TestWriteRandomModelWithVocab(t *testing.T) {
	c, w, err := WriteRandomModelWithVocab(t.TempDir(), filepath.Join(fixtures, "moe"), 300, 1)
	if err != nil {
		t.Fatal(err)
	}
	if c.Vocab != 300 || c.TiedEmbeddings || c.Experts != 6 || len(w.LMHead) != 300*c.Hidden || &w.LMHead[0] == &w.Embed[0] {
		t.Errorf("vocab %d, tied %v, %d experts, LM head %d", c.Vocab, c.TiedEmbeddings, c.Experts, len(w.LMHead))
	}
}
