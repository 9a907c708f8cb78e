package nb

import (
	"regexp"
	"strings"
)

// A lesson's prose never types a figure that a run measures: numbers that
// depend on the run are printed by the cell that measured them. A check in
// the tests scans every Markdown cell of the lessons with MeasuredFigures;
// cited facts (a device's datasheet peak, a paper's result, a figure from
// a seed document with its source) are listed in an allowlist.

var (
	// measured is a number followed by a unit of speed, time, rate or
	// share: "90%", "11.8×", "5.89 TFLOP/s", "45 ms", "401 tokens/s".
	measured = regexp.MustCompile(`(?:\d[\d,]*(?:\.\d+)?|\.\d+)\s?(?:%|×|x\b|[KMGTP]?FLOP/s|[KMGT]i?B/s|[KMGT]bit/s|tokens?/s|tok/s|seq(?:uences)?/s|samples/s|steps/s|ns\b|µs\b|us\b|ms\b|s\b)`)
	// fence is a fenced code block; span an inline code span; comment an
	// HTML comment. None of them is prose.
	fence   = regexp.MustCompile("(?s)(```|~~~).*?(```|~~~)")
	span    = regexp.MustCompile("`[^`\n]*`")
	comment = regexp.MustCompile(`(?s)<!--.*?-->`)
)

// MeasuredFigures returns the figures in Markdown prose that read as
// measured (a number with a unit of speed, time, rate or share), outside
// code and HTML comments, in order. A "×" followed by another number is a
// shape ("32×32", "2 × 2"), not a ratio.
func MeasuredFigures(md string) []string {
	for _, re := range []*regexp.Regexp{fence, comment, span} {
		md = re.ReplaceAllString(md, " ")
	}
	var out []string
	for _, at := range measured.FindAllStringIndex(md, -1) {
		f := md[at[0]:at[1]]
		rest := strings.TrimLeft(md[at[1]:], " ")
		if strings.HasSuffix(f, "×") && rest != "" && rest[0] >= '0' && rest[0] <= '9' {
			continue
		}
		out = append(out, strings.TrimSpace(f))
	}
	return out
}
