package lfm2

// The tokenizer's checks for notebook 06: the fixture's encodings, and a
// random model whose vocabulary is the tokenizer's, to run text through.

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"

	"gpulab/engine/llm/tokenizer"
)

// TokenizerAgreement encodes each text of the tokenizer fixture's
// encodings.json (dir is FixturesDir/tokenizer) and counts those whose ids,
// with the special tokens, are the ones HF tokenizers gave.
func TokenizerAgreement(tok *tokenizer.Tokenizer, dir string) (same, total int, err error) {
	var cases []struct {
		Text string
		IDs  []int `json:"ids"`
	}
	if err := decodeJSONFile(filepath.Join(dir, "encodings.json"), &cases); err != nil {
		return 0, 0, err
	}
	for _, c := range cases {
		ids, err := tok.Encode(c.Text, true)
		if err != nil {
			return 0, 0, fmt.Errorf("lfm2: encode %q: %w", c.Text, err)
		}
		if slices.Equal(ids, c.IDs) {
			same++
		}
	}
	return same, len(cases), nil
}

// WriteRandomModelWithVocab writes to dir a model with the config of the
// model directory like, but a vocabulary of vocab tokens and an untied LM
// head, and seeded random weights (WriteRandomModel); it returns the
// config and the loaded weights.
func WriteRandomModelWithVocab(dir, like string, vocab int, seed uint64) (*Config, *Weights, error) {
	var cfg map[string]any
	if err := decodeJSONFile(filepath.Join(like, "config.json"), &cfg); err != nil {
		return nil, nil, err
	}
	cfg["vocab_size"], cfg["tie_word_embeddings"] = vocab, false
	js, err := json.Marshal(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("lfm2: %w", err)
	}
	if _, err := WriteRandomModel(dir, js, seed); err != nil {
		return nil, nil, err
	}
	return LoadModel(dir)
}
