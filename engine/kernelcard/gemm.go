package kernelcard

import (
	"fmt"
	"regexp"
	"strings"

	"gpulab/engine"
	"gpulab/engine/gemm"
	"gpulab/engine/nb"
	"gpulab/kernels"
)

// Ladder is the cards of a ladder's steps on the devices that run it.
type Ladder struct {
	cards map[string][]Card // by step name
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

// Cards are the cards of step.
func (l Ladder) Cards(step string) []Card { return l.cards[step] }

// Note says why the ladder has no cards here ("" when it has).
func (l Ladder) Note() string { return l.note }

// GEMM is the cards of notebook 01's GEMM ladder of kind (CUDA or
// OpenCL) on each device of ids that is of that kind, launched for shape
// s as the gemm suite launches it: the FP32 CUDA steps with
// gemm.CUDALaunch, the OpenCL steps with the first configuration that the
// device takes. A step whose launch engine/gemm does not export (the
// autotuned, WMMA and wgmma steps) gets a card per kernel of its file,
// compiled with the file's own defaults, without occupancy.
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

// globalKernel finds the kernels a CUDA file defines.
var globalKernel = regexp.MustCompile(`__global__\s+(?:void\s+)?(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:void\s+)?([A-Za-z_]\w*)\s*\(`)

// gemmKernels are the kernels of step st of a GEMM ladder on dev.
func gemmKernels(dev *engine.Device, kind engine.Kind, st kernels.Step, s gemm.Shape) []Kernel {
	name := strings.TrimPrefix(strings.TrimPrefix(st.File, "cuda/"), "opencl/")
	k := Kernel{Label: st.Name, Name: name, Source: st.Code}
	if kind == engine.OpenCL {
		k.Entry = gemm.OpenCLKernel
		info, err := dev.OpenCL.Device().Info()
		if err != nil {
			return []Kernel{k} // its card says what building it gives
		}
		opts, err := gemm.OpenCLBuildOptions(st.Name, info)
		cfgs, _ := gemm.OpenCLConfigs(st.Name)
		for _, c := range cfgs {
			if err == nil && c.Options() == opts {
				g := c.Global(s)
				k.Options = strings.Fields(opts)
				k.Block = [3]int{c.Local[0], c.Local[1], 1}
				k.Grid = [3]int{g[0] / c.Local[0], g[1] / c.Local[1], 1}
			}
		}
		return []Kernel{k}
	}
	if entry, cfg, opts, err := gemm.CUDALaunch(st.Name, s); err == nil {
		k.Entry, k.Options, k.Shared = entry, opts, cfg.SharedMem
		k.Grid = [3]int{cfg.Grid.X, cfg.Grid.Y, cfg.Grid.Z}
		k.Block = [3]int{cfg.Block.X, cfg.Block.Y, cfg.Block.Z}
		return []Kernel{k}
	}
	var out []Kernel
	for _, m := range globalKernel.FindAllStringSubmatch(st.Code, -1) {
		k.Entry = m[1]
		out = append(out, k)
	}
	return out
}
