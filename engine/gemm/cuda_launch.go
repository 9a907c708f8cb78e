package gemm

import (
	"fmt"
	"strings"

	"gpulab/engine/cuda"
)

// CUDAKernel is how the gemm suite builds and launches the kernel of one
// CUDA step for a shape: what a kernel card needs to describe the kernel
// as it runs.
type CUDAKernel struct {
	Step    string   // the step, e.g. "11_wmma_bf16"
	File    string   // its source under kernels/cuda, without ".cu": "gemm/11_wmma"
	Entry   string   // the kernel launched, e.g. "wmma_bf16"
	Options []string // NVRTC options: the step's defines, -DVEC, the target architecture
	Launch  cuda.LaunchConfig
	// Hopper is set for a kernel that runs on compute capability 9.x only
	// (wgmma and TMA, built for sm_90a): the suite skips it elsewhere.
	Hopper bool
	// Tiles is step 10's tile configuration (nil for the other steps), and
	// Tuned says whether it is the one Autotune cached for the GPU and the
	// shape; if not, it is the default, TileCandidates[0].
	Tiles *TileConfig
	Tuned bool
}

// cudaKernel is the kernel of kernel step st for shape s.
func (st cudaStep) cudaKernel(s Shape) CUDAKernel {
	return CUDAKernel{Step: st.Name, File: "gemm/" + st.fileName(), Entry: st.kernel, Options: st.options(s),
		Launch: st.launch(s), Hopper: st.hopper}
}

// CUDAKernels are the kernels of the CUDA ladder's steps (the cuBLAS
// baselines have none), in order, as the gemm suite builds and launches
// them for shape s on the GPU named gpu (cuda.Properties.Name). Step 10
// gets the tiles that Autotune cached for that GPU and shape, or the
// default ones: CUDAKernels never searches.
func CUDAKernels(s Shape, gpu string) []CUDAKernel {
	var out []CUDAKernel
	for _, st := range cudaSteps() {
		switch {
		case st.kernel == "":
		case st.tuned:
			t, tuned := CachedTiles(gpu, s)
			if !tuned {
				t = TileCandidates[0]
			}
			k := t.step().cudaKernel(s)
			k.Tiles, k.Tuned = &t, tuned
			out = append(out, k)
		default:
			out = append(out, st.cudaKernel(s))
		}
	}
	return out
}

// CUDALaunch is how the FP32 kernel of step (01_naive to 09_warp_tiling)
// is launched for shape s: its entry point, launch configuration and
// compiler options. An exercise launches a student's kernel the same way.
func CUDALaunch(step string, s Shape) (kernel string, cfg cuda.LaunchConfig, options []string, err error) {
	st, err := cudaFP32Step(step)
	if err != nil {
		return "", cfg, nil, err
	}
	k := st.cudaKernel(s)
	return k.Entry, k.Launch, k.Options, nil
}

// cudaFP32Step is the FP32 kernel step of that name.
func cudaFP32Step(step string) (cudaStep, error) {
	var names []string
	for _, c := range cudaSteps() {
		if c.kernel == "" || c.tuned || c.hopper || c.Precision != FP32 {
			continue
		}
		names = append(names, c.Name)
		if c.Name == step {
			return c, nil
		}
	}
	return cudaStep{}, fmt.Errorf("gemm: no FP32 CUDA kernel step %q (have: %s)", step, strings.Join(names, ", "))
}
