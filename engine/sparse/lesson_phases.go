package sparse

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"gpulab/engine/bench"
	"gpulab/engine/plot"
)

// The per-phase GPU times of notebook 03 (Profile, `lab sparse phases`):
// tables, a figure per step, and what changed between two runs.

// PhasesMarkdown tabulates the GPU time of every phase of each step (a
// column per step, "-" where a step has no such phase), after the caption
// when there is one, then says for each step which phase took the longest.
func PhasesMarkdown(caption string, stats []GPUStats) string {
	var b strings.Builder
	if caption != "" {
		b.WriteString(caption + "\n\n")
	}
	var names []string
	rows := map[string]int{}
	times := make([]map[string]time.Duration, len(stats))
	b.WriteString("| phase | rows |")
	for i, s := range stats {
		fmt.Fprintf(&b, " %s |", s.Step)
		times[i] = map[string]time.Duration{}
		for _, p := range s.Phases {
			if !slices.Contains(names, p.Name) {
				names = append(names, p.Name)
				rows[p.Name] = p.Rows
			}
			times[i][p.Name] += p.Time
		}
	}
	b.WriteString("\n|---|---:|" + strings.Repeat("---:|", len(stats)) + "\n")
	for _, name := range names {
		fmt.Fprintf(&b, "| %s | %d |", name, rows[name])
		for i := range stats {
			if t, ok := times[i][name]; ok {
				b.WriteString(" " + timeText(t) + " |")
			} else {
				b.WriteString(" - |")
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("| **total** | |")
	for _, s := range stats {
		b.WriteString(" **" + timeText(s.Total) + "** |")
	}
	b.WriteString("\n| peak memory | |")
	for _, s := range stats {
		b.WriteString(" " + bytesText(float64(s.PeakBytes)) + " |")
	}
	b.WriteString("\n\n")
	for _, s := range stats {
		if len(s.Phases) < 2 || s.Total <= 0 {
			continue
		}
		longest := s.Phases[0]
		for _, p := range s.Phases {
			if p.Time > longest.Time {
				longest = p
			}
		}
		fmt.Fprintf(&b, "- **%s:** its longest phase, *%s* (%d rows), takes %s of %s, %s.\n",
			s.Step, longest.Name, longest.Rows, timeText(longest.Time), timeText(s.Total), percent(float64(longest.Time)/float64(s.Total)))
	}
	return b.String()
}

// phaseGroup puts a phase into the group the figures show: "setup" (products,
// bins, scans, allocation, packing), or its pass ("symbolic" or "numeric")
// and its kind of kernel ("hash", "dense", or "hash + dense" when the two
// run alongside).
func phaseGroup(name string) string {
	pass := ""
	switch {
	case strings.HasPrefix(name, "symbolic"):
		pass = "symbolic"
	case strings.HasPrefix(name, "numeric"), strings.HasPrefix(name, "compress"):
		pass = "numeric"
	default:
		return "setup"
	}
	switch {
	case strings.Contains(name, "alongside"):
		return pass + ", hash + dense"
	case strings.Contains(name, "dense"):
		return pass + ", dense"
	case strings.Contains(name, "hash"):
		return pass + ", hash"
	}
	return pass
}

// phaseGroups sums a step's phases by phaseGroup, in order of appearance.
func phaseGroups(s GPUStats) (groups []string, total map[string]time.Duration) {
	total = map[string]time.Duration{}
	for _, p := range s.Phases {
		g := phaseGroup(p.Name)
		if _, seen := total[g]; !seen {
			groups = append(groups, g)
		}
		total[g] += p.Time
	}
	return groups, total
}

// PhaseFigure draws a step's GPU time by group of phases, in ms, titled
// with the step's name or, when it is not empty, with name.
func PhaseFigure(s GPUStats, name string) *plot.Figure {
	if name == "" {
		name = s.Step
	}
	groups, total := phaseGroups(s)
	values := make([]float64, len(groups))
	for i, g := range groups {
		values[i] = float64(total[g]) / float64(time.Millisecond)
	}
	return plot.Bars(name+": GPU time by phase", "ms", groups, values).WithValueSuffix(" ms")
}

// PhaseChangeMarkdown compares two runs of a step (or two steps) group by
// group (see phaseGroup), each group's time before and after, and the
// totals. Where the two split a pass into different groups (its hash bins
// and dense windows apart in one, alongside in the other), it compares the
// pass as a whole.
func PhaseChangeMarkdown(beforeName string, before GPUStats, afterName string, after GPUStats) string {
	groupsB, b := phaseGroups(before)
	groupsA, a := phaseGroups(after)
	var items []string
	for _, pass := range []string{"setup", "symbolic", "numeric"} {
		inPass := func(groups []string) []string {
			var out []string
			for _, g := range groups {
				if g == pass || strings.HasPrefix(g, pass+", ") {
					out = append(out, g)
				}
			}
			return out
		}
		passB, passA := inPass(groupsB), inPass(groupsA)
		if slices.Equal(passB, passA) {
			for _, g := range passB {
				items = append(items, fmt.Sprintf("%s %s → %s", g, timeText(b[g]), timeText(a[g])))
			}
			continue
		}
		sum := func(groups []string, t map[string]time.Duration) (total time.Duration) {
			for _, g := range groups {
				total += t[g]
			}
			return total
		}
		describe := func(groups []string, t map[string]time.Duration) string {
			if len(groups) == 0 {
				return "(none)"
			}
			return fmt.Sprintf("(%s) %s", strings.Join(kinds(groups), ", "), timeText(sum(groups, t)))
		}
		items = append(items, fmt.Sprintf("%s %s → %s", pass, describe(passB, b), describe(passA, a)))
	}
	change := "faster"
	if after.Total > before.Total {
		change = "slower"
	}
	return fmt.Sprintf("From %s to %s: %s. In all, %s → %s (%s %s).\n", beforeName, afterName, strings.Join(items, "; "),
		timeText(before.Total), timeText(after.Total), percent(math.Abs(1-float64(after.Total)/float64(before.Total))), change)
}

// kinds returns the kinds of kernel of a pass's groups: "hash", "dense".
func kinds(groups []string) []string {
	var out []string
	for _, g := range groups {
		_, kind, _ := strings.Cut(g, ", ")
		out = append(out, kind)
	}
	return out
}

// PhasesRun is a Profile run as `lab sparse phases --json` keeps it: where
// it ran (the device, the commit and the date, which caption its tables:
// bench.Provenance.Caption), the matrix, and each step's phases.
type PhasesRun struct {
	bench.Provenance
	Matrix string     `json:"matrix"`
	Steps  []GPUStats `json:"steps"`
}

// StepStats returns the stats of step among stats, or an error naming the
// steps there are.
func StepStats(stats []GPUStats, step string) (GPUStats, error) {
	var have []string
	for _, s := range stats {
		if s.Step == step {
			return s, nil
		}
		have = append(have, s.Step)
	}
	return GPUStats{}, fmt.Errorf("sparse: no phases of step %q (have %s)", step, strings.Join(have, ", "))
}
