package tokenizer

// Byte-level BPE (GPT-2's) works on bytes, not characters, so that any text
// has a tokenization and no "unknown" token is needed. To keep the vocabulary
// printable, each byte is written as one visible character: the bytes that
// are already printable Latin-1 ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for
// themselves, and the other 68 (controls, space, DEL, NBSP, soft hyphen)
// become U+0100, U+0101, ... in byte order. So a space is 'Ġ' (U+0120) and
// a newline 'Ċ' (U+010A), as in every GPT-2-style vocab.

// byteChar is the character that stands for each byte.
var byteChar [256]rune

// charByte is byteChar inverted.
var charByte = map[rune]byte{}

func init() {
	next := rune(256)
	for b := range 256 {
		printable := '!' <= b && b <= '~' || '¡' <= b && b <= '¬' || '®' <= b && b <= 'ÿ'
		if printable {
			byteChar[b] = rune(b)
		} else {
			byteChar[b] = next
			next++
		}
		charByte[byteChar[b]] = byte(b)
	}
}

// toByteLevel writes each byte of s as its character.
func toByteLevel(s string) []rune {
	out := make([]rune, len(s))
	for i := range len(s) {
		out[i] = byteChar[s[i]]
	}
	return out
}

// fromByteLevel returns the bytes that token's characters stand for, or
// the token's own bytes if one of its characters is not a byte character
// (an added token such as "<|im_end|>" is all printable, so it comes out as
// itself either way). This is what transformers' ByteLevel decoder does.
func fromByteLevel(token string) []byte {
	out := make([]byte, 0, len(token))
	for _, c := range token {
		b, ok := charByte[c]
		if !ok {
			return []byte(token)
		}
		out = append(out, b)
	}
	return out
}
