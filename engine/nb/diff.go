package nb

import (
	"fmt"
	"strings"
)

// Diff returns a unified diff of two texts (3 lines of context), so that a
// notebook can show what one optimization step changed in the previous
// step's kernel. It uses the longest common subsequence of lines: quadratic,
// fine for kernel-sized files.
func Diff(oldName, old, newName, new string) string {
	a, b := strings.Split(old, "\n"), strings.Split(new, "\n")
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op     byte // ' ', '-', '+'
		text   string
		ai, bi int // 1-based line numbers after this line
	}
	var lines []line
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			lines = append(lines, line{' ', a[i], i + 1, j + 1})
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			lines = append(lines, line{'-', a[i], i + 1, j})
			i++
		default:
			lines = append(lines, line{'+', b[j], i, j + 1})
			j++
		}
	}
	const context = 3
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", oldName, newName)
	for k := 0; k < len(lines); {
		if lines[k].op == ' ' {
			k++
			continue
		}
		// A hunk: from context lines before this change to context lines
		// after the last change that is within 2·context of the previous one.
		start, end := max(0, k-context), k
		for end < len(lines) {
			next := end
			for next < len(lines) && lines[next].op == ' ' {
				next++
			}
			if next == len(lines) || next-end > 2*context {
				break
			}
			for next < len(lines) && lines[next].op != ' ' {
				next++
			}
			end = next
		}
		end = min(len(lines), end+context)
		var oldN, newN int
		for _, l := range lines[start:end] {
			if l.op != '+' {
				oldN++
			}
			if l.op != '-' {
				newN++
			}
		}
		first := lines[start]
		oldStart, newStart := first.ai, first.bi
		if first.op == '+' {
			oldStart++
		}
		if first.op == '-' {
			newStart++
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", oldStart, oldN, newStart, newN)
		for _, l := range lines[start:end] {
			out.WriteByte(l.op)
			out.WriteString(l.text)
			out.WriteByte('\n')
		}
		k = end
	}
	return out.String()
}
