package gemm

import (
	"fmt"
	"slices"
	"strings"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/plot"
	"gpulab/kernels"
)

// What notebook 01 says about the ladder, built from the records of a
// run, so that its prose never types a number the run measured.

// Steps is the ladder of one family as a lesson shows it: the steps with
// a source file, in order (the library baselines have none).
func Steps(kind engine.Kind) []kernels.Step {
	var steps []kernels.Step
	for _, v := range Variants(kind) {
		file, code, err := Source(v)
		if err != nil {
			continue
		}
		if len(steps) > 0 && steps[len(steps)-1].Code == code {
			continue // a step that runs the previous file with other parameters
		}
		steps = append(steps, kernels.Step{Name: v.Name, File: strings.TrimPrefix(file, "kernels/"), Code: code})
	}
	return steps
}

// RidgeMarkdown is a table of each device's ridge point (peak FLOP/s ÷ peak
// bytes/s) next to the arithmetic intensity of an n³ product under three
// traffic models: each byte moved once (the least any kernel can move), a
// kernel with 32×32 tiles in shared memory, and the naive kernel (two loads
// per FMA). A model above the ridge can reach the compute roof; one below
// it is bound by memory, whatever the size.
func RidgeMarkdown(devs []engine.Info, n int) string {
	s := Shape{M: n, N: n, K: n}
	models := []struct {
		name    string
		traffic float64
	}{
		{"each byte once", s.MinBytes()},
		{"32×32 tiles", clTiledTraffic(s, 32, 32)},
		{"naive (2 loads per FMA)", 8*s.Flops()/2 + 4*float64(s.M*s.N)},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "At n = %d:\n\n| device | ridge (FLOP/byte) |", n)
	for _, m := range models {
		fmt.Fprintf(&b, " %s |", m.name)
	}
	b.WriteString("\n|---|---:|" + strings.Repeat("---|", len(models)) + "\n")
	for _, d := range devs {
		if d.PeakGBps <= 0 || d.PeakGFLOPS <= 0 {
			continue
		}
		ridge := d.PeakGFLOPS / d.PeakGBps
		fmt.Fprintf(&b, "| `%s` %s | %.1f |", d.ID, d.Name, ridge)
		for _, m := range models {
			ai := s.Flops() / m.traffic
			verdict := "memory-bound"
			if ai > ridge {
				verdict = "can reach the compute roof"
			}
			fmt.Fprintf(&b, " %.3g: %s |", ai, verdict)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// ladder is one precision's steps of one device at one size, in ladder
// order, and the baseline they are compared with.
type ladder struct {
	precision Precision
	baseline  bench.Record
	steps     []bench.Record
}

// ladders splits records of one device and size into a ladder per
// precision, steps in the family's order (Variants), baselines apart.
func ladders(recs []bench.Record) []ladder {
	if len(recs) == 0 {
		return nil
	}
	order := map[string]int{}
	for i, v := range Variants(kindOf(recs[0])) {
		order[v.Name] = i
	}
	byPrecision := map[Precision]*ladder{}
	var out []*ladder
	for _, r := range recs {
		p, _ := r.Params["precision"].(string)
		l := byPrecision[Precision(p)]
		if l == nil {
			l = &ladder{precision: Precision(p)}
			byPrecision[Precision(p)] = l
			out = append(out, l)
		}
		if r.Variant == r.Baseline {
			l.baseline = r
		} else {
			l.steps = append(l.steps, r)
		}
	}
	var ls []ladder
	for _, l := range out {
		slices.SortStableFunc(l.steps, func(a, b bench.Record) int { return order[a.Variant] - order[b.Variant] })
		ls = append(ls, *l)
	}
	return ls
}

// A ChartGroup is a title and the records of the variants that share a
// chart.
type ChartGroup struct {
	Title string
	Recs  []bench.Record
}

// ChartGroups splits a run's records (one device, several sizes) into
// charts of at most 8 variants: the FP32 steps, in halves when there are
// more than 7, each with the FP32 baseline, then the tensor-core steps with
// their library calls.
func ChartGroups(recs []bench.Record) []ChartGroup {
	var groups []ChartGroup
	add := func(title string, names []string) {
		g := ChartGroup{Title: title}
		for _, r := range recs {
			if slices.Contains(names, r.Variant) {
				g.Recs = append(g.Recs, r)
			}
		}
		if len(g.Recs) > 0 {
			groups = append(groups, g)
		}
	}
	var tensor []string
	for _, l := range ladders(bench.OfSize(recs, lastSize(recs))) {
		var names []string
		for _, r := range l.steps {
			names = append(names, r.Variant)
		}
		switch {
		case l.precision != FP32:
			tensor = append(append(tensor, names...), l.baseline.Variant)
		case len(names) > 7:
			half := (len(names) + 1) / 2
			add("FP32 steps "+names[0][:2]+"–"+names[half-1][:2], append(slices.Clone(names[:half]), l.baseline.Variant))
			add("FP32 steps "+names[half][:2]+"–"+names[len(names)-1][:2], append(slices.Clone(names[half:]), l.baseline.Variant))
		default:
			add("FP32 steps", append(names, l.baseline.Variant))
		}
	}
	if len(tensor) > 0 {
		add("tensor-core steps", tensor)
	}
	return groups
}

// SizeFigures are one device's charts of GFLOP/s against n (ChartGroups,
// each on a logarithmic y axis), drawn from the records of its n×n×n
// sizes alone: a shape such as 255x257x129 is another problem (its K is
// not its M), and on a line through the cubes it would read as one more
// size of the same family. None when fewer than two cube sizes ran.
func SizeFigures(device string, recs []bench.Record) []*plot.Figure {
	cubes := cubesOf(device, recs)
	if len(bench.Sizes(cubes)) < 2 {
		return nil
	}
	var figs []*plot.Figure
	for _, g := range ChartGroups(cubes) {
		figs = append(figs, bench.SizeLines(device+", "+g.Title+": GFLOP/s of n×n×n against n", "n", bench.GFLOPS, g.Recs, bench.ByVariant).LogY().XTicksAtData())
	}
	return figs
}

// cubesOf keeps the records of device whose shape is n×n×n.
func cubesOf(device string, recs []bench.Record) []bench.Record {
	var cubes []bench.Record
	for _, r := range recs {
		m, n, k := r.Params.Float("m"), r.Params.Float("n"), r.Params.Float("k")
		if r.Device == device && m > 0 && m == n && n == k {
			cubes = append(cubes, r)
		}
	}
	return cubes
}

// devices lists the devices of records in their order.
func devices(recs []bench.Record) []string {
	var ids []string
	for _, r := range recs {
		if !slices.Contains(ids, r.Device) {
			ids = append(ids, r.Device)
		}
	}
	return ids
}

func lastSize(recs []bench.Record) string {
	sizes := bench.Sizes(recs)
	if len(sizes) == 0 {
		return ""
	}
	return sizes[len(sizes)-1]
}

// TrafficMarkdown is a table of kind's ladder: each step's global traffic
// at shape s under its traffic model, and the FLOP per byte that makes.
// An OpenCL step falls back to smaller tiles where a device or the built
// kernel cannot take its default ones (OpenCLConfigOn), and its traffic
// grows with that, so OpenCL gets a table per device of ids, each with the
// tiles the step runs with there; without an OpenCL device among ids, one
// table at the default tiles, which says so.
func TrafficMarkdown(kind engine.Kind, ids []string, s Shape) string {
	size := s.String()
	if s.M == s.N && s.N == s.K {
		size = fmt.Sprintf("%d³", s.M)
	}
	if kind != engine.OpenCL {
		md := fmt.Sprintf("**%s**\n\n| step | what changes | precision | global traffic at %s | FLOP/byte |\n|---|---|---|---:|---:|\n", kind, size)
		for _, v := range Variants(kind) {
			bytes := s.MinBytes()
			if v.Traffic != nil {
				bytes = v.Traffic(s)
			}
			md += fmt.Sprintf("| `%s` | %s | %s | %.1f GB | %.1f |\n", v.Name, v.Doc, v.Precision, bytes/1e9, s.Flops()/bytes)
		}
		return md
	}
	table := func(title string, configOf func(step string) (OpenCLConfig, error)) string {
		md := fmt.Sprintf("**%s**\n\n| step | what changes | precision | tiles | global traffic at %s | FLOP/byte |\n|---|---|---|---|---:|---:|\n", title, size)
		for _, v := range Variants(kind) {
			c, err := configOf(v.Name)
			if err != nil {
				md += fmt.Sprintf("| `%s` | %s | %s | does not build here | - | - |\n", v.Name, v.Doc, v.Precision)
				continue
			}
			bytes := c.Traffic(s)
			md += fmt.Sprintf("| `%s` | %s | %s | `%s` | %.1f GB | %.1f |\n", v.Name, v.Doc, v.Precision, c.Options(), bytes/1e9, s.Flops()/bytes)
		}
		return md
	}
	var out []string
	for _, id := range ids {
		if !strings.HasPrefix(id, string(engine.OpenCL)+":") {
			continue
		}
		dev, err := engine.Open(id)
		if err != nil {
			out = append(out, fmt.Sprintf("*No table for %s: %v.*\n", id, err))
			continue
		}
		out = append(out, table(fmt.Sprintf("%s on %s (%s), with the tiles each step runs with there", kind, id, dev.Info.Name),
			func(step string) (OpenCLConfig, error) { return OpenCLConfigOn(dev.OpenCL, step) }))
		dev.Close()
	}
	if len(out) == 0 {
		out = append(out, table(string(kind)+" at the default tiles (a device that cannot take them runs smaller ones, which move more)",
			func(step string) (OpenCLConfig, error) { return NewOpenCLConfig(step, nil) }))
	}
	return strings.Join(out, "\n")
}

// SmallGridNote says, for each GPU of devs (CUDA, or OpenCL not in host
// memory), how many blocks a kernel with tile×tile tiles of C launches at
// n³ against the GPU's SMs (its compute units): fewer blocks than SMs
// leave SMs idle whatever the kernel does.
func SmallGridNote(devs []engine.Info, n, tile int) string {
	var b strings.Builder
	blocks := (n + tile - 1) / tile
	blocks *= blocks
	for _, d := range devs {
		if d.OnCPU() || d.ComputeUnits <= 0 {
			continue
		}
		fmt.Fprintf(&b, "- **%s** (`%s`): `%d` blocks of `%d×%d` at `%d³` for `%d` SMs: ", d.Name, d.ID, blocks, tile, tile, n, d.ComputeUnits)
		if blocks < d.ComputeUnits {
			fmt.Fprintf(&b, "fewer blocks than SMs, so `%d` SMs have nothing to do.\n", d.ComputeUnits-blocks)
		} else {
			fmt.Fprintf(&b, "`%.2g` waves of one block per SM.\n", float64(blocks)/float64(d.ComputeUnits))
		}
	}
	if b.Len() == 0 {
		return "*No GPU here: the count of blocks against SMs needs one.*\n"
	}
	return b.String()
}
