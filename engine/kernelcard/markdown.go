package kernelcard

import (
	"fmt"
	"math"
	"strings"

	"gpulab/engine"
)

// maxListingLines bounds the PTX and the SASS a card shows: a notebook
// holds a card per step, and an unrolled kernel runs to thousands of
// lines. A longer function shows its hot loop (HotLoop) instead, cut to
// this length; the whole text is in the card's PTX and SASS fields.
const maxListingLines = 100

// Markdown is the card for a notebook or a report: a line naming the
// kernel, its device and its launch; a table of its resources and
// occupancy; the instruction counts; the PTX and SASS folded; and what the
// card could not say.
func (c Card) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Kernel card: `%s`**", c.Kernel)
	if c.Label != "" && c.Label != c.Kernel {
		fmt.Fprintf(&b, " (%s)", c.Label)
	}
	fmt.Fprintf(&b, " on %s", c.Device)
	if c.Launch != "" {
		fmt.Fprintf(&b, " · %s", c.Launch)
	}
	if opts := shownOptions(c.Options); opts != "" {
		fmt.Fprintf(&b, " · `%s`", opts)
	}
	b.WriteString("\n\n")
	if c.Error != "" {
		fmt.Fprintf(&b, "*No card: %s*\n", firstLine(c.Error))
		return b.String()
	}
	if c.Backend == string(engine.OpenCL) {
		b.WriteString("| max work-group size | preferred multiple | `__local` / work-group | private / work-item |\n|---:|---:|---:|---:|\n")
		local := bytesText(c.StaticShared)
		if c.LocalUnreported {
			local = "not reported"
		}
		fmt.Fprintf(&b, "| %d | %d | %s | %s |\n", c.MaxThreads, c.PreferredMultiple, local, bytesText(c.LocalBytes))
	} else {
		b.WriteString("| registers / thread | local memory / thread | shared memory / block | occupancy | limited by |\n|---:|---:|---:|---|---|\n")
		local := bytesText(c.LocalBytes)
		if c.LocalBytes > 0 {
			local += " (spills or arrays indexed at run time: slow)"
		}
		shared := bytesText(c.StaticShared)
		if c.DynamicShared > 0 {
			shared += " + " + bytesText(c.DynamicShared) + " dynamic"
		}
		occ, limits := "-", "-"
		if o := c.Occupancy; o != nil {
			occ = fmt.Sprintf("%.0f%%: %d block%s, %d of %d warps per SM", o.Percent, o.Blocks, plural(o.Blocks), o.Warps, o.MaxWarps)
			if c.Waves > 0 {
				occ += fmt.Sprintf("; the grid is %.1f waves", c.Waves)
			}
			limits = limitsText(*o)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", c.Registers, local, shared, occ, limits)
	}
	if len(c.PTXCounts) > 0 {
		fmt.Fprintf(&b, "\n**PTX** (static counts): %s\n", countsText(c.PTXCounts))
	}
	if len(c.SASSCounts) > 0 {
		fmt.Fprintf(&b, "\n**SASS** (%s): %s\n", c.SASSTool, countsText(c.SASSCounts))
	}
	for _, l := range []struct{ what, text string }{{"PTX", c.PTX}, {"SASS", c.SASS}} {
		if l.text != "" {
			what, text := listing(l.text)
			fmt.Fprintf(&b, "\n<details><summary>▸ %s of the %s of <code>%s</code></summary>\n\n```text\n%s\n```\n</details>\n",
				what, l.what, c.Kernel, text)
		}
	}
	if len(c.Notes) > 0 {
		notes := strings.Join(c.Notes, "; ")
		b.WriteString("\n*" + strings.ToUpper(notes[:1]) + notes[1:] + ".*\n")
	}
	return b.String()
}

// limitsText lists each resource's limit on resident blocks, tightest
// first, the limiter in bold.
func limitsText(o Occupancy) string {
	var parts []string
	for _, l := range o.Limits {
		switch {
		case l.Blocks == math.MaxInt32:
			continue
		case strings.Contains(o.Limiter, l.Resource) && o.Disagree == "":
			parts = append(parts, fmt.Sprintf("**%s**: %d (%s)", l.Resource, l.Blocks, l.Why))
		default:
			parts = append(parts, fmt.Sprintf("%s: %d", l.Resource, l.Blocks))
		}
	}
	s := strings.Join(parts, "; ")
	if o.Disagree != "" {
		s += "; " + o.Disagree
	}
	return s
}

func countsText(cs []InstructionCount) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = "`" + c.Class + "` " + strings.TrimPrefix(c.String(), c.Class+" ")
	}
	return strings.Join(parts, " · ")
}

// listing is what a card shows of a function's text, and what that is:
// all of it when it is short; else its hot loop, or its start, cut to
// maxListingLines. It is escaped for a code fence.
func listing(text string) (what, shown string) {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	what = fmt.Sprintf("all %d line%s", len(lines), plural(len(lines)))
	if len(lines) > maxListingLines {
		first := 0
		what = fmt.Sprintf("the first %d of %d lines", maxListingLines, len(lines))
		if loop, ok := HotLoop(text); ok {
			first = loop.First
			what = fmt.Sprintf("the loop with the most FMAs (lines %d–%d of %d)", loop.First+1, loop.Last+1, len(lines))
			if loop.Last-loop.First+1 > maxListingLines {
				what = fmt.Sprintf("the first %d lines of the loop with the most FMAs (lines %d–%d of %d)", maxListingLines, loop.First+1, loop.Last+1, len(lines))
			}
			lines = lines[:loop.Last+1]
		}
		lines = lines[first:min(len(lines), first+maxListingLines)]
	}
	return what, strings.ReplaceAll(strings.Join(lines, "\n"), "```", "` ` `")
}

// shownOptions are the compiler options worth showing: defines and the
// architecture, not the include directories.
func shownOptions(opts []string) string {
	var out []string
	for _, o := range opts {
		if !strings.HasPrefix(o, "-I") {
			out = append(out, o)
		}
	}
	return strings.Join(out, " ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
