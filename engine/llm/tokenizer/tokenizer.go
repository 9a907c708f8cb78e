// Package tokenizer reads a Hugging Face tokenizer.json of the byte-level BPE
// kind (GPT-2, Llama 3, LFM2) and turns text into token ids and back, with
// the same ids as Hugging Face's tokenizers library.
//
// Encoding a text takes five steps, each configured by tokenizer.json:
//
//  1. added tokens ("<|im_start|>", ...) are cut out of the text first, so
//     that no merge ever splits them: leftmost match first, the longest at
//     a position;
//  2. the rest is normalized (usually not at all);
//  3. the pre-tokenizer cuts it into words with a regular expression
//     (pretokenize.go says why that is hand-written here);
//  4. each word's bytes are written as characters (bytelevel.go) and BPE
//     merges adjacent symbols, the pair of lowest merge rank first, until
//     no pair in the merge list is left (bpe.go);
//  5. the post-processor adds the template's special tokens, e.g. a
//     beginning-of-text token in front.
//
// Decoding maps ids to their strings and the byte characters back to bytes.
//
// We write this instead of using a Go library: the pure-Go ports we
// looked at (github.com/sugarme/tokenizer among them) run the pre-tokenizer
// with Go's regexp package, which cannot compile the \s+(?!\S) lookahead of
// the GPT-2 and Llama 3 patterns and matches leftmost-longest where
// Oniguruma takes the first alternative; so they split some texts
// differently from Hugging Face. cgo bindings of the Rust library are ruled
// out by CGO_ENABLED=0.
package tokenizer

import (
	"encoding/json"
	"fmt"
	"gpulab/engine/readlimit"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Tokenizer is a loaded tokenizer.json. It is safe for concurrent use.
type Tokenizer struct {
	vocab        map[string]int   // the BPE model's token -> id
	tokens       map[int]string   // id -> token, model and added (ids may have gaps)
	vocabSize    int              // one more than the largest id
	merges       map[[2]int]merge // (left id, right id) -> the merge
	ignoreMerges bool             // a word that is a whole token is not merged up to (Llama 3)
	unk          int              // unk_token's id, or -1
	fuseUnk      bool             // consecutive unknown symbols become one unk

	added     []addedToken // matched before normalization
	normAdded []addedToken // matched in the normalized text
	special   map[int]bool // ids of special added tokens
	normalize func(string) string
	preTok    []func(string) []string // applied in order to every piece
	before    []int                   // the template's ids before the text
	after     []int                   // and after it
}

// merge is one line of the merge list: its rank (lower merges first) and
// the id of the merged token.
type merge struct{ rank, id int }

// addedToken is an added token as it is matched in text.
type addedToken struct {
	content string
	id      int
}

// file is the part of tokenizer.json that encoding and decoding need.
type file struct {
	Truncation    json.RawMessage `json:"truncation"`
	AddedTokens   []addedJSON     `json:"added_tokens"`
	Normalizer    *component      `json:"normalizer"`
	PreTokenizer  *component      `json:"pre_tokenizer"`
	PostProcessor *component      `json:"post_processor"`
	Decoder       *component      `json:"decoder"`
	Model         *modelJSON      `json:"model"`
}

type addedJSON struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// component is a normalizer, pre-tokenizer, post-processor or decoder:
// its type and the fields of the types we support.
type component struct {
	Type          string      `json:"type"`
	Normalizers   []component `json:"normalizers"`   // Sequence
	Pretokenizers []component `json:"pretokenizers"` // Sequence
	Processors    []component `json:"processors"`    // Sequence
	Pattern       struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"` // Split
	Behavior       string         `json:"behavior"`         // Split
	Invert         bool           `json:"invert"`           // Split
	AddPrefixSpace bool           `json:"add_prefix_space"` // ByteLevel
	UseRegex       *bool          `json:"use_regex"`        // ByteLevel; true when absent
	Single         []templateItem `json:"single"`           // TemplateProcessing
	SpecialTokens  map[string]struct {
		IDs []int `json:"ids"`
	} `json:"special_tokens"` // TemplateProcessing
}

type templateItem struct {
	SpecialToken *struct {
		ID string `json:"id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID string `json:"id"`
	} `json:"Sequence"`
}

type modelJSON struct {
	Type                    string            `json:"type"`
	Dropout                 *float64          `json:"dropout"`
	UnkToken                *string           `json:"unk_token"`
	ContinuingSubwordPrefix *string           `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string           `json:"end_of_word_suffix"`
	FuseUnk                 bool              `json:"fuse_unk"`
	ByteFallback            bool              `json:"byte_fallback"`
	IgnoreMerges            bool              `json:"ignore_merges"`
	Vocab                   map[string]int    `json:"vocab"`
	Merges                  []json.RawMessage `json:"merges"`
}

// maxFileBytes bounds a tokenizer.json: the largest vocabularies in use
// (a quarter of a million tokens and their merges) take some tens of MB.
const maxFileBytes = 256 << 20

// Load reads a tokenizer.json.
func Load(path string) (*Tokenizer, error) {
	data, err := readlimit.ReadFile(path, "tokenizer.json", maxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	t, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	return t, nil
}

// Parse reads the contents of a tokenizer.json.
func Parse(data []byte) (*Tokenizer, error) {
	t, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return t, nil
}

func parse(data []byte) (*Tokenizer, error) {
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	if f.Truncation != nil && string(f.Truncation) != "null" {
		return nil, fmt.Errorf("truncation is set: not supported (encodings are never truncated here)")
	}
	t := &Tokenizer{tokens: map[int]string{}, special: map[int]bool{}, normalize: func(s string) string { return s }}
	if err := t.readModel(f.Model); err != nil {
		return nil, err
	}
	if err := t.readNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	if err := t.readAdded(f.AddedTokens); err != nil {
		return nil, err
	}
	if f.PreTokenizer == nil {
		return nil, fmt.Errorf("pre_tokenizer is null: want a ByteLevel pre-tokenizer (this package reads byte-level BPE only)")
	}
	if err := t.readPreTokenizer(*f.PreTokenizer, true); err != nil {
		return nil, err
	}
	if err := t.readPostProcessor(f.PostProcessor); err != nil {
		return nil, err
	}
	if f.Decoder == nil || f.Decoder.Type != "ByteLevel" {
		return nil, fmt.Errorf("decoder %s: want ByteLevel", typeName(f.Decoder))
	}
	return t, nil
}

// typeName is c's type for error messages.
func typeName(c *component) string {
	if c == nil {
		return "null"
	}
	return fmt.Sprintf("%q", c.Type)
}

// readModel reads the BPE model: vocab, merges and options.
func (t *Tokenizer) readModel(m *modelJSON) error {
	switch {
	case m == nil:
		return fmt.Errorf("model is missing")
	case m.Type != "BPE":
		return fmt.Errorf("model type %q: want BPE", m.Type)
	case m.Dropout != nil && *m.Dropout != 0:
		return fmt.Errorf("BPE dropout %g: not supported (encoding would be random)", *m.Dropout)
	case m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "",
		m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "":
		return fmt.Errorf("BPE continuing_subword_prefix or end_of_word_suffix is set: not supported (not byte-level BPE)")
	case m.ByteFallback:
		return fmt.Errorf("BPE byte_fallback is set: not supported (that is SentencePiece-style BPE, not byte-level)")
	case len(m.Vocab) == 0:
		return fmt.Errorf("the BPE vocab is empty")
	}
	t.vocab, t.ignoreMerges, t.fuseUnk, t.unk = m.Vocab, m.IgnoreMerges, m.FuseUnk, -1
	for tok, id := range m.Vocab {
		if err := t.setToken(id, tok, "vocab"); err != nil {
			return err
		}
	}
	if m.UnkToken != nil {
		id, ok := m.Vocab[*m.UnkToken]
		if !ok {
			return fmt.Errorf("unk_token %q is not in the vocab", *m.UnkToken)
		}
		t.unk = id
	}
	t.merges = make(map[[2]int]merge, len(m.Merges))
	for rank, raw := range m.Merges {
		var pair []string
		var line string
		if err := json.Unmarshal(raw, &line); err == nil {
			pair = strings.Split(line, " ")
		} else if err := json.Unmarshal(raw, &pair); err != nil {
			return fmt.Errorf("merge %d: %s is neither \"a b\" nor [\"a\", \"b\"]", rank, raw)
		}
		if len(pair) != 2 {
			return fmt.Errorf("merge %d: %s is not a pair of tokens", rank, raw)
		}
		a, okA := m.Vocab[pair[0]]
		b, okB := m.Vocab[pair[1]]
		ab, okAB := m.Vocab[pair[0]+pair[1]]
		if !okA || !okB || !okAB {
			return fmt.Errorf("merge %d: %q + %q: the pair or its merge %q is not in the vocab", rank, pair[0], pair[1], pair[0]+pair[1])
		}
		if _, dup := t.merges[[2]int{a, b}]; !dup { // the first (lowest) rank wins, as in tokenizers
			t.merges[[2]int{a, b}] = merge{rank, ab}
		}
	}
	return nil
}

// maxID bounds the ids a tokenizer.json may use: ample for any vocabulary
// (the largest are about 256K), and small enough that a consumer may size a
// table by VocabSize.
const maxID = 1 << 24

// setToken records that id is tok. The ids are kept in a map, not a table
// indexed by id, so a file that names a large id costs nothing for it.
func (t *Tokenizer) setToken(id int, tok, where string) error {
	if id < 0 || id > maxID {
		return fmt.Errorf("%s token %q has id %d, want 0 .. %d", where, tok, id, maxID)
	}
	if tok == "" {
		return fmt.Errorf("%s has an empty token (id %d)", where, id)
	}
	if old, ok := t.tokens[id]; ok && old != tok {
		return fmt.Errorf("%s token %q has id %d, which is already %q", where, tok, id, old)
	}
	t.tokens[id] = tok
	t.vocabSize = max(t.vocabSize, id+1)
	return nil
}

// readNormalizer supports no normalizer, NFC, NFKC and sequences of them.
func (t *Tokenizer) readNormalizer(c *component) error {
	if c == nil {
		return nil
	}
	var steps []func(string) string
	var add func(c component) error
	add = func(c component) error {
		switch c.Type {
		case "NFC":
			steps = append(steps, norm.NFC.String)
		case "NFKC":
			steps = append(steps, norm.NFKC.String)
		case "Sequence":
			for _, s := range c.Normalizers {
				if err := add(s); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("normalizer %q: not supported (want null, NFC, NFKC or a Sequence of them)", c.Type)
		}
		return nil
	}
	if err := add(*c); err != nil {
		return err
	}
	t.normalize = func(s string) string {
		for _, f := range steps {
			s = f(s)
		}
		return s
	}
	return nil
}

// readAdded reads the added tokens. Special ones are usually not
// normalized, so they match the raw text; the others match the normalized
// text, in its normalized spelling.
func (t *Tokenizer) readAdded(added []addedJSON) error {
	for _, a := range added {
		if a.SingleWord || a.LStrip || a.RStrip {
			return fmt.Errorf("added token %q: single_word, lstrip and rstrip are not supported", a.Content)
		}
		if err := t.setToken(a.ID, a.Content, "added_tokens"); err != nil {
			return err
		}
		if a.Special {
			t.special[a.ID] = true
		}
		if a.Normalized {
			t.normAdded = append(t.normAdded, addedToken{t.normalize(a.Content), a.ID})
		} else {
			t.added = append(t.added, addedToken{a.Content, a.ID})
		}
	}
	return nil
}

// readPreTokenizer reads Split, ByteLevel and Sequence pre-tokenizers. The
// last step must be ByteLevel (last says whether c is the last step).
func (t *Tokenizer) readPreTokenizer(c component, last bool) error {
	switch c.Type {
	case "Sequence":
		if len(c.Pretokenizers) == 0 {
			return fmt.Errorf("pre_tokenizer Sequence is empty")
		}
		for i, p := range c.Pretokenizers {
			if err := t.readPreTokenizer(p, last && i == len(c.Pretokenizers)-1); err != nil {
				return err
			}
		}
		return nil
	case "Split":
		if c.Pattern.Regex == nil || matchers[*c.Pattern.Regex] == nil {
			return fmt.Errorf("pre-tokenizer Split pattern %s: not supported; the known patterns are the Llama 3 one %q and the GPT-2 one %q", patternText(c), llama3Pattern, gpt2Pattern)
		}
		if c.Behavior != "Isolated" || c.Invert {
			return fmt.Errorf("pre-tokenizer Split behavior %q (invert %v): want Isolated, not inverted", c.Behavior, c.Invert)
		}
		match := matchers[*c.Pattern.Regex]
		t.preTok = append(t.preTok, func(s string) []string { return split(s, match) })
	case "ByteLevel":
		if !last {
			return fmt.Errorf("pre_tokenizer ByteLevel must come last")
		}
		prefix, regex := c.AddPrefixSpace, c.UseRegex == nil || *c.UseRegex
		t.preTok = append(t.preTok, func(s string) []string {
			if prefix && !strings.HasPrefix(s, " ") {
				s = " " + s
			}
			if regex {
				return split(s, gpt2Match)
			}
			return []string{s}
		})
		return nil
	default:
		return fmt.Errorf("pre_tokenizer %q: not supported (want Split, ByteLevel or a Sequence of them)", c.Type)
	}
	if last {
		return fmt.Errorf("pre_tokenizer: the last step is %s, want ByteLevel (this package reads byte-level BPE only)", c.Type)
	}
	return nil
}

// patternText is a Split pattern for error messages.
func patternText(c component) string {
	switch {
	case c.Pattern.Regex != nil:
		return fmt.Sprintf("Regex %q", *c.Pattern.Regex)
	case c.Pattern.String != nil:
		return fmt.Sprintf("String %q", *c.Pattern.String)
	}
	return "(none)"
}

// readPostProcessor reads TemplateProcessing (its single-sequence template),
// ByteLevel (which only trims offsets: nothing to do for ids), and
// Sequences of them.
func (t *Tokenizer) readPostProcessor(c *component) error {
	if c == nil {
		return nil
	}
	switch c.Type {
	case "ByteLevel":
		return nil
	case "Sequence":
		for _, p := range c.Processors {
			if err := t.readPostProcessor(&p); err != nil {
				return err
			}
		}
		return nil
	case "TemplateProcessing":
	default:
		return fmt.Errorf("post_processor %q: not supported (want TemplateProcessing, ByteLevel or a Sequence of them)", c.Type)
	}
	seen := false
	for _, item := range c.Single {
		switch {
		case item.Sequence != nil && item.Sequence.ID == "A" && !seen:
			seen = true
		case item.SpecialToken != nil:
			sp, ok := c.SpecialTokens[item.SpecialToken.ID]
			if !ok {
				return fmt.Errorf("post_processor template names %q, which is not in its special_tokens", item.SpecialToken.ID)
			}
			for _, id := range sp.IDs {
				if _, ok := t.tokens[id]; !ok {
					return fmt.Errorf("post_processor special token %q has id %d, which is not a token", item.SpecialToken.ID, id)
				}
			}
			if seen {
				t.after = append(t.after, sp.IDs...)
			} else {
				t.before = append(t.before, sp.IDs...)
			}
		default:
			return fmt.Errorf("post_processor single template: want special tokens around one $A sequence")
		}
	}
	if !seen {
		return fmt.Errorf("post_processor single template has no $A sequence")
	}
	return nil
}

// VocabSize is the number of ids: one more than the largest.
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// ID returns the id of token (a vocab or added token, as tokenizer.json
// spells it).
func (t *Tokenizer) ID(token string) (int, bool) {
	if id, ok := t.vocab[token]; ok {
		return id, true
	}
	for _, set := range [][]addedToken{t.added, t.normAdded} {
		for _, a := range set {
			if a.content == token {
				return a.id, true
			}
		}
	}
	return 0, false
}

// IsSpecial reports whether id is a special added token.
func (t *Tokenizer) IsSpecial(id int) bool { return t.special[id] }

// Encode returns the ids of text; with addSpecial, the post-processor's
// special tokens too (e.g. <|startoftext|> in front). Added tokens written
// in the text are recognized either way, as in tokenizers' encode.
func (t *Tokenizer) Encode(text string, addSpecial bool) ([]int, error) {
	var ids []int
	if addSpecial {
		ids = append(ids, t.before...)
	}
	for _, raw := range splitAdded(text, t.added) {
		if raw.id >= 0 {
			ids = append(ids, raw.id)
			continue
		}
		for _, seg := range splitAdded(t.normalize(raw.text), t.normAdded) {
			if seg.id >= 0 {
				ids = append(ids, seg.id)
				continue
			}
			pieces := []string{seg.text}
			for _, step := range t.preTok {
				var next []string
				for _, p := range pieces {
					next = append(next, step(p)...)
				}
				pieces = next
			}
			for _, p := range pieces {
				var err error
				if ids, err = t.bpe(ids, p); err != nil {
					return nil, err
				}
			}
		}
	}
	if addSpecial {
		ids = append(ids, t.after...)
	}
	return ids, nil
}

// segment is a piece of text, or an added token (id >= 0).
type segment struct {
	text string
	id   int
}

// splitAdded cuts the added tokens out of text: at the leftmost position
// where one matches, the longest one, then on after it (the Aho-Corasick
// LeftmostLongest rule that tokenizers uses).
func splitAdded(text string, added []addedToken) []segment {
	var out []segment
	start := 0
	for i := 0; i < len(text); {
		best := -1
		for k, a := range added {
			if strings.HasPrefix(text[i:], a.content) && (best < 0 || len(a.content) > len(added[best].content)) {
				best = k
			}
		}
		if best < 0 {
			i++
			continue
		}
		if start < i {
			out = append(out, segment{text[start:i], -1})
		}
		out = append(out, segment{"", added[best].id})
		i += len(added[best].content)
		start = i
	}
	if start < len(text) {
		out = append(out, segment{text[start:], -1})
	}
	return out
}

// Decode returns the text of ids: each token's byte characters turned back
// into bytes. Special tokens are included. The result is not valid UTF-8
// if ids end inside a character.
func (t *Tokenizer) Decode(ids []int) (string, error) {
	var b []byte
	for i, id := range ids {
		tok, ok := t.tokens[id]
		if !ok {
			return "", fmt.Errorf("tokenizer: id %d (at %d) is not a token of this %d-id vocabulary", id, i, t.vocabSize)
		}
		b = append(b, fromByteLevel(tok)...)
	}
	return string(b), nil
}

// Stream turns generated ids into text one at a time. A character can be
// split across tokens (an emoji is four bytes, often two tokens), so the
// bytes of an unfinished character are held back until the token that
// completes it.
type Stream struct {
	t       *Tokenizer
	pending []byte
}

// Stream returns a new Stream.
func (t *Tokenizer) Stream() *Stream { return &Stream{t: t} }

// Next returns the text that id completes: possibly "", possibly text held
// back before.
func (s *Stream) Next(id int) (string, error) {
	text, err := s.t.Decode([]int{id})
	if err != nil {
		return "", err
	}
	s.pending = append(s.pending, text...)
	cut := len(s.pending)
	for i := len(s.pending) - 1; i >= 0 && i >= len(s.pending)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s.pending[i]) {
			if !utf8.FullRune(s.pending[i:]) {
				cut = i
			}
			break
		}
	}
	out := string(s.pending[:cut])
	s.pending = append(s.pending[:0], s.pending[cut:]...)
	return out, nil
}

// Flush returns the bytes held back, if the ids ended inside a character.
func (s *Stream) Flush() string {
	out := string(s.pending)
	s.pending = s.pending[:0]
	return out
}
