package kernelcard

import (
	"fmt"
	"strings"

	"gpulab/engine"
	"gpulab/engine/cuda"
	"gpulab/engine/gemm"
	"gpulab/engine/nb"
	"gpulab/kernels"
)

// Ladder is the cards of a ladder's steps on the devices that run it.
type Ladder struct {
	cards map[string][]Card // by the name of the step a lesson shows
	note  string
}

// Markdown is the cards of step, one per device ("" when it has none):
// what a notebook shows after the step's source.
func (l Ladder) Markdown(step string) string {
	var parts []string
	for _, c := range l.cards[step] {
		parts = append(parts, c.Markdown())
	}
	return strings.Join(parts, "\n")
}

// StepsMarkdown is how a lesson shows a ladder with its cards: each step
// as nb.StepsMarkdown shows it, then its cards; the ladder's Note, if any,
// before the first step.
func (l Ladder) StepsMarkdown(steps []kernels.Step, lang string) []string {
	out := nb.StepsMarkdown(steps, lang)
	for i, st := range steps {
		if cards := l.Markdown(st.Name); cards != "" {
			out[i] += "\n" + cards
		}
	}
	if l.note != "" && len(out) > 0 {
		out[0] = l.note + "\n\n" + out[0]
	}
	return out
}

// Cards are the cards under step as a lesson shows it (gemm.Steps): on
// each device, one per ladder step whose kernel its file holds, that
// step's name in the card's Label. Only 11_wmma_tf32 has two: its file,
// 11_wmma.cu, holds the kernel of 11_wmma_bf16 too.
func (l Ladder) Cards(step string) []Card { return l.cards[step] }

// Note says why the ladder has no cards here ("" when it has).
func (l Ladder) Note() string { return l.note }

// GEMM is the cards of notebook 01's GEMM ladder of kind (CUDA or
// OpenCL) on each device of ids that is of that kind, built and launched
// for shape s as the gemm suite builds and launches them: every CUDA
// kernel step as gemm.CUDAKernels says (step 10 with the tiles tuned for
// the GPU and shape if `lab bench gemm` cached them, else the default
// ones, which its card says; step 12 on Hopper GPUs only, its card
// elsewhere saying so), the OpenCL steps with the configuration the suite
// runs there (gemm.OpenCLConfigOn: the first that the device and the built
// kernel take; a fallback's card says so).
func GEMM(kind engine.Kind, ids []string, s gemm.Shape) Ladder {
	l := Ladder{cards: map[string][]Card{}}
	steps := gemm.Steps(kind)
	opened := 0
	for _, id := range ids {
		if !strings.HasPrefix(id, string(kind)+":") {
			continue
		}
		dev, err := engine.Open(id)
		if err != nil {
			l.note += fmt.Sprintf("*No cards on %s: %v.*\n", id, err)
			continue
		}
		opened++
		for _, st := range steps {
			for _, k := range gemmKernels(dev, kind, st, s) {
				l.cards[st.Name] = append(l.cards[st.Name], Of(dev, k))
			}
		}
		dev.Close()
	}
	if opened == 0 && l.note == "" {
		l.note = fmt.Sprintf("*No %s device here: each step's kernel card (registers, shared memory, occupancy, PTX) needs one to compile on.*", kindName[kind])
	}
	return l
}

var kindName = map[engine.Kind]string{engine.CUDA: "CUDA", engine.OpenCL: "OpenCL", engine.CPU: "CPU"}

// gemmKernels are the kernels of step st of a GEMM ladder on dev.
func gemmKernels(dev *engine.Device, kind engine.Kind, st kernels.Step, s gemm.Shape) []Kernel {
	if kind == engine.CUDA {
		return cudaGEMMKernels(st, s, dev.CUDA.Properties())
	}
	k := Kernel{Label: st.Name, Name: strings.TrimPrefix(st.File, "opencl/"), Source: st.Code, Entry: gemm.OpenCLKernel}
	c, err := gemm.OpenCLConfigOn(dev.OpenCL, st.Name)
	if err != nil {
		return []Kernel{k} // its card says what building it gives
	}
	g := c.Global(s)
	k.Options = strings.Fields(c.Options())
	k.Block = [3]int{c.Local[0], c.Local[1], 1}
	k.Grid = [3]int{g[0] / c.Local[0], g[1] / c.Local[1], 1}
	if cfgs, _ := gemm.OpenCLConfigs(st.Name); len(cfgs) > 0 && cfgs[0].Options() != c.Options() {
		k.Notes = []string{fmt.Sprintf("built with `%s`, a fallback: the default `%s` (%d work-items per group) is more than this device or the built kernel allows", c.Options(), cfgs[0].Options(), cfgs[0].WorkItems())}
	}
	return []Kernel{k}
}

// cudaGEMMKernels are the kernels that CUDA step st's file holds (as a
// lesson shows it: 11_wmma_tf32's holds 11_wmma_bf16's too), built and
// launched for shape s as the gemm suite does on a GPU of props.
func cudaGEMMKernels(st kernels.Step, s gemm.Shape, props cuda.Properties) []Kernel {
	name := strings.TrimPrefix(st.File, "cuda/")
	var out []Kernel
	for _, g := range gemm.CUDAKernels(s, props.Name) {
		if g.File+".cu" != name {
			continue
		}
		cfg := g.Launch
		k := Kernel{Label: g.Step, Name: name, Source: st.Code, Options: g.Options, Entry: g.Entry,
			Grid: [3]int{cfg.Grid.X, cfg.Grid.Y, cfg.Grid.Z}, Block: [3]int{cfg.Block.X, cfg.Block.Y, cfg.Block.Z}, Shared: cfg.SharedMem}
		switch {
		case g.Hopper && props.Major != 9:
			k.Unsupported = fmt.Sprintf("needs sm_90 (Hopper): wgmma and TMA exist on compute capability 9.x only, and this GPU is %d.%d", props.Major, props.Minor)
		case g.Tiles != nil && g.Tuned:
			k.Notes = []string{fmt.Sprintf("tiles %s (tuned on this GPU for this shape)", g.Tiles)}
		case g.Tiles != nil:
			k.Notes = []string{fmt.Sprintf("tiles %s (the default; `lab bench gemm --size %s` tunes them)", g.Tiles, s)}
		}
		out = append(out, k)
	}
	return out
}
