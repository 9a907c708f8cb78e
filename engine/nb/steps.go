package nb

import (
	"fmt"
	"path"
	"strings"

	"gpulab/engine/bench"
	"gpulab/kernels"
)

// StepsMarkdown is how a lesson shows a ladder: for each step its header
// comment (the idea, the traffic it saves, what it costs), then, folded,
// its diff against the previous step and its whole source. lang names the
// code fences' language (cpp for CUDA, c for OpenCL C, go).
func StepsMarkdown(steps []kernels.Step, lang string) []string {
	var out []string
	var prev kernels.Step
	for _, s := range steps {
		md := fmt.Sprintf("#### `%s` (`%s`)\n\n```text\n%s\n```\n", s.Name, s.File, kernels.Header(s.Code))
		if prev.Code != "" && prev.Code != s.Code {
			md += fmt.Sprintf("\n<details><summary>▸ what changed since <code>%s</code></summary>\n\n```diff\n%s```\n</details>\n",
				path.Base(prev.File), Diff(prev.File, prev.Code, s.File, s.Code))
		}
		md += fmt.Sprintf("\n<details><summary>▸ the whole of <code>%s</code></summary>\n\n```%s\n%s\n```\n</details>\n",
			path.Base(s.File), lang, strings.TrimRight(s.Code, "\n"))
		out = append(out, md)
		prev = s
	}
	return out
}

// ShowSteps shows a ladder (StepsMarkdown), one output per step.
func ShowSteps(steps []kernels.Step, lang string) {
	for _, md := range StepsMarkdown(steps, lang) {
		Markdown(md)
	}
}

// ShowKernels shows the numbered kernel files of a ladder (Family.Steps),
// or stops the cell.
func ShowKernels(f kernels.Family, dir, prefix string) {
	lang := "cpp"
	if f == kernels.OpenCLFamily {
		lang = "c"
	}
	ShowSteps(Check(f.Steps(dir, prefix)), lang)
}

// RecordedMarkdown is a captioned table of records kept in docs/results:
// the devices, the commit and the date that the records carry, and the
// command that produced them (bench.RecordsCaption), or an error naming
// what they lack.
func RecordedMarkdown(recs []bench.Record, command string) (string, error) {
	if len(recs) == 0 {
		return "*(no recorded run)*", nil
	}
	caption, err := bench.RecordsCaption(recs, command)
	if err != nil {
		return "", err
	}
	return caption + "\n\n" + bench.Markdown(recs), nil
}

// ShowRecorded reads docs/results/name, keeps the records keep accepts
// (all when keep is nil), shows them as a captioned table and returns
// them, so that the cell can say what they show. Records without a
// device, commit or date stop the cell.
func ShowRecorded(name, command string, keep func(bench.Record) bool) []bench.Record {
	recs := Recorded(name)
	if keep != nil {
		recs = Filter(recs, keep)
	}
	md, err := RecordedMarkdown(recs, command)
	if err != nil {
		Must(fmt.Errorf("docs/results/%s: %w", name, err))
	}
	Markdown(md)
	return recs
}
