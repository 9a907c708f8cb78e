package tokenizer

// The pre-tokenizer cuts text into pieces ("words") before BPE, so that no
// merge crosses a word boundary. Hugging Face tokenizers does it with a
// regular expression run by Oniguruma, a backtracking engine. Two patterns
// cover the byte-level BPE models we read:
//
//	Llama 3 (LFM2's Split pre-tokenizer):
//	  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//	GPT-2 (the ByteLevel pre-tokenizer's own, with use_regex):
//	  's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// Go's regexp cannot run them: it has no lookahead, so \s+(?!\S) ("a run
// of spaces, less the last one if a word follows") does not compile, and
// it picks the leftmost-longest match where Oniguruma takes the first
// alternative that matches. So each pattern is written out by hand below,
// as the backtracking engine would resolve it at one position. Every
// character is a letter (\p{L}), a number (\p{N}), white space (\s) or
// "other", so some alternative always matches and the pieces tile the text.

import (
	"unicode"
	"unicode/utf8"
)

// Patterns, exactly as tokenizer.json spells them.
const (
	llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	gpt2Pattern   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
)

// matchers maps a supported pattern to the function that returns where its
// match starting at rune i of r ends.
var matchers = map[string]func(r []rune, i int) int{
	llama3Pattern: llama3Match,
	gpt2Pattern:   gpt2Match,
}

// split cuts s into consecutive pieces, each one match of match. Invalid
// UTF-8 bytes count as "other" characters and are kept as they are.
func split(s string, match func(r []rune, i int) int) []string {
	r, off := make([]rune, 0, len(s)), make([]int, 0, len(s)+1)
	for i := 0; i < len(s); {
		c, size := utf8.DecodeRuneInString(s[i:])
		r, off = append(r, c), append(off, i)
		i += size
	}
	off = append(off, len(s))
	var pieces []string
	for i := 0; i < len(r); {
		end := match(r, i)
		pieces = append(pieces, s[off[i]:off[end]])
		i = end
	}
	return pieces
}

// llama3Match resolves llama3Pattern at i, alternative by alternative.
func llama3Match(r []rune, i int) int {
	if n := contraction(r, i, true); n > 0 { // (?i:'s|'t|'re|'ve|'m|'ll|'d)
		return i + n
	}
	switch c := r[i]; {
	case isLetter(c): // [^\r\n\p{L}\p{N}]?\p{L}+ without the optional character
		return run(r, i, isLetter)
	case !isNewline(c) && !isNumber(c) && i+1 < len(r) && isLetter(r[i+1]): // ... with it
		return run(r, i+1, isLetter)
	case isNumber(c): // \p{N}{1,3}
		return run(r[:min(len(r), i+3)], i, isNumber)
	case isOther(c) || c == ' ' && i+1 < len(r) && isOther(r[i+1]): // ?[^\s\p{L}\p{N}]+[\r\n]*
		return run(r, run(r, i+1, isOther), isNewline)
	}
	end := run(r, i, unicode.IsSpace) // r[i] is white space
	for k := end - 1; k >= i; k-- {   // \s*[\r\n]+: \s* gives back up to the last newline
		if isNewline(r[k]) {
			return k + 1
		}
	}
	return spaces(r, i, end)
}

// gpt2Match resolves gpt2Pattern at i.
func gpt2Match(r []rune, i int) int {
	c := r[i]
	if n := contraction(r, i, false); n > 0 { // 's|'t|'re|'ve|'m|'ll|'d
		return i + n
	}
	for _, class := range []func(rune) bool{isLetter, isNumber, isOther} { // ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+
		switch {
		case class(c):
			return run(r, i, class)
		case c == ' ' && i+1 < len(r) && class(r[i+1]):
			return run(r, i+1, class)
		}
	}
	return spaces(r, i, run(r, i, unicode.IsSpace))
}

// spaces resolves \s+(?!\S)|\s+ for the run of white space [i, end): the
// whole run if it ends the text, else all but its last character (which
// goes with the next word), unless that leaves nothing.
func spaces(r []rune, i, end int) int {
	if end == len(r) || end-i == 1 {
		return end
	}
	return end - 1
}

// contraction returns the length of 's, 't, 're, 've, 'm, 'll or 'd at i
// (case-insensitively, as Unicode folds case, if fold), or 0.
func contraction(r []rune, i int, fold bool) int {
	if r[i] != '\'' || i+1 >= len(r) {
		return 0
	}
	is := func(c, lower rune) bool { return c == lower || fold && foldsTo(c, lower) }
	for _, one := range []rune{'s', 't', 'm', 'd'} {
		if is(r[i+1], one) {
			return 2
		}
	}
	if i+2 < len(r) {
		for _, two := range [][2]rune{{'r', 'e'}, {'v', 'e'}, {'l', 'l'}} {
			if is(r[i+1], two[0]) && is(r[i+2], two[1]) {
				return 3
			}
		}
	}
	return 0
}

// foldsTo reports whether c is in the case-folding orbit of lower: 'S' and
// 'ſ' (U+017F) fold to 's'.
func foldsTo(c, lower rune) bool {
	for f := unicode.SimpleFold(lower); f != lower; f = unicode.SimpleFold(f) {
		if f == c {
			return true
		}
	}
	return false
}

// run returns the end of the run of characters of class that starts at i.
func run(r []rune, i int, class func(rune) bool) int {
	for i < len(r) && class(r[i]) {
		i++
	}
	return i
}

// The character classes: \p{L}, \p{N}, \s (Unicode White_Space, as both
// Oniguruma and unicode.IsSpace define it) and the rest.
func isLetter(c rune) bool  { return unicode.IsLetter(c) }
func isNumber(c rune) bool  { return unicode.IsNumber(c) }
func isNewline(c rune) bool { return c == '\r' || c == '\n' }
func isOther(c rune) bool   { return !unicode.IsSpace(c) && !isLetter(c) && !isNumber(c) }
