package exercise

import (
	"fmt"
	"strings"
)

// CheckText returns an error if src holds a NUL byte, naming the offset
// and line of the first: source code is text, and the OpenCL and CUDA
// compilers read a source only up to its first NUL (a binary file would
// reach them as a source without its kernel).
func CheckText(src string) error {
	i := strings.IndexByte(src, 0)
	if i < 0 {
		return nil
	}
	return fmt.Errorf("a NUL byte at offset %d (line %d): source code is text (is this a binary file?), and a compiler would read it only up to there", i, strings.Count(src[:i], "\n")+1)
}

// Language tells a CUDA kernel from an OpenCL one by its declarations, not
// by words in comments or strings: a __global__ function is CUDA; a
// function declared __kernel, or kernel followed by void or
// __attribute__, is OpenCL C. It returns "" for anything else.
func Language(src string) string {
	toks := cTokens(src)
	opencl := false
	for i, t := range toks {
		switch {
		case t == "__global__":
			return LangCUDA
		case t == "__kernel":
			opencl = true
		case t == "kernel" && i+1 < len(toks) && (toks[i+1] == "void" || toks[i+1] == "__attribute__"):
			opencl = true
		}
	}
	if opencl {
		return LangOpenCL
	}
	return ""
}

// cTokens returns the identifiers and keywords of C source, skipping
// comments, string and character literals (a sketch of a C lexer: enough
// to find declarations, not to compile).
func cTokens(src string) []string {
	var toks []string
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case strings.HasPrefix(src[i:], "//"):
			i = skipPast(src, i, "\n")
		case strings.HasPrefix(src[i:], "/*"):
			i = skipPast(src, i+2, "*/")
		case c == '"' || c == '\'':
			i = skipLiteral(src, i)
		case isIdentStart(c):
			j := i + 1
			for j < len(src) && (isIdentStart(src[j]) || src[j] >= '0' && src[j] <= '9') {
				j++
			}
			toks = append(toks, src[i:j])
			i = j
		default:
			i++
		}
	}
	return toks
}

// skipPast returns the index just past the first end at or after i, or
// len(src) if there is none.
func skipPast(src string, i int, end string) int {
	if j := strings.Index(src[i:], end); j >= 0 {
		return i + j + len(end)
	}
	return len(src)
}

// skipLiteral returns the index past the string or character literal that
// starts at i, honouring backslash escapes; a literal ends at a newline.
func skipLiteral(src string, i int) int {
	quote := src[i]
	for i++; i < len(src); i++ {
		switch src[i] {
		case '\\':
			i++
		case quote:
			return i + 1
		case '\n':
			return i
		}
	}
	return i
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// unfinished says whether src still holds the exercise's own TODO marker
// line, the one its notebook's skeleton comes with: a line equal to it
// once both are trimmed. A TODO of the student's own never counts.
func unfinished(src, marker string) bool {
	marker = strings.TrimSpace(marker)
	if marker == "" {
		return false
	}
	for _, l := range strings.Split(src, "\n") {
		if strings.TrimSpace(l) == marker {
			return true
		}
	}
	return false
}

// errUnfinished is the failure of a source that still holds the marker.
func errUnfinished(name, marker string) string {
	return fmt.Sprintf("the exercise still has its TODO line (%s): write your solution in the cell marked // EXERCISE %s and delete that line", strings.TrimSpace(marker), name)
}
