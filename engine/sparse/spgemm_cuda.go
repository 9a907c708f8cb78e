package sparse

import (
	"fmt"

	"gpulab/engine/cuda"
	"gpulab/kernels"
)

// The CUDA SpGEMM ladder. Each step is one kernel file under
// kernels/cuda/sparse (spgemm_NN_*.cu) and one row of spgemmSteps
// (spgemm_cuda_steps.go), which names the host sequence that drives it: the
// kernels do the arithmetic, the host decides how much memory to allocate
// and which rows go to which kernel.

// GPUSpGEMM runs the ladder on one CUDA context. Modules compile once, on
// first use.
type GPUSpGEMM struct {
	// Window is the column width of the windowed dense kernels' blocks
	// (steps 03, 04 and 06), a multiple of 1024 up to 32768; 0 means 16384.
	// Wider windows mean fewer visits to each row of A and fewer, longer
	// blocks per row.
	Window int

	ctx     *cuda.Context
	modules map[string]*cuda.Module
	funcs   map[string]*cuda.Function
	pool    *pool
	side    *cuda.Stream // step 06's second stream (see run.alongside), made on first use
}

// NewGPUSpGEMM prepares the ladder on ctx.
func NewGPUSpGEMM(ctx *cuda.Context) *GPUSpGEMM {
	return &GPUSpGEMM{ctx: ctx, modules: map[string]*cuda.Module{}, funcs: map[string]*cuda.Function{},
		pool: &pool{ctx: ctx, free: map[int][]*cuda.Buffer{}}}
}

// Close unloads the compiled modules and frees the pooled memory.
func (g *GPUSpGEMM) Close() {
	g.side.Destroy()
	for _, m := range g.modules {
		m.Unload()
	}
	g.pool.drain()
}

// Release hands a product's arrays back to the pool for the next
// multiplication (Free would return them to the driver).
func (g *GPUSpGEMM) Release(c cuda.CSR) {
	for _, b := range []*cuda.Buffer{c.RowPtr, c.ColIdx, c.Val} {
		g.pool.put(b)
	}
}

// CuSPARSE computes C = A·B with cuSPARSE, its buffers drawn from the same
// pool and metered the same way as the ladder's, for a like-for-like
// comparison. It returns C and the peak bytes allocated.
func (g *GPUSpGEMM) CuSPARSE(sp *cuda.Sparse, a, b cuda.CSR) (cuda.CSR, int, error) {
	m := &meter{pool: g.pool}
	c, err := sp.SpGEMM(a, b, m.alloc, m.release)
	return c, m.peak, err
}

func (g *GPUSpGEMM) window() int {
	if g.Window == 0 {
		return 16384 // 16384 and 8192 were within 6% on R-MAT; 32768 was 1.5x slower
	}
	return g.Window
}

// function returns kernel name of step's file, compiled once per window.
func (g *GPUSpGEMM) function(step spgemmStep, name string) (*cuda.Function, error) {
	w := g.window()
	if w%1024 != 0 || w < 1024 || w > 32768 {
		return nil, fmt.Errorf("sparse: window %d is not a multiple of 1024 in [1024, 32768]", w)
	}
	modKey := fmt.Sprintf("%s/window=%d", step.Name, w)
	key := modKey + "." + name
	if f, ok := g.funcs[key]; ok {
		return f, nil
	}
	mod, ok := g.modules[modKey]
	if !ok {
		file := step.file()
		src, err := kernels.CUDA(file)
		if err != nil {
			return nil, err
		}
		mod, err = g.ctx.Compile(cuda.Source{Name: file + ".cu", Code: src, Headers: kernels.CUDAFamily.Headers(),
			Options: []string{fmt.Sprintf("-DWINDOW=%d", w)}})
		if err != nil {
			return nil, err
		}
		g.modules[modKey] = mod
	}
	f, err := mod.Function(name)
	if err != nil {
		return nil, err
	}
	g.funcs[key] = f
	return f, nil
}

// Multiply computes C = A·B with one step of the ladder (one of GPUSteps).
// C is the caller's to free; stats hold the per-phase times and the peak
// memory.
func (g *GPUSpGEMM) Multiply(step string, a, b cuda.CSR) (c cuda.CSR, stats GPUStats, err error) {
	st, ok := spgemmStepNamed(step)
	if !ok {
		return c, stats, fmt.Errorf("sparse: unknown GPU SpGEMM step %q (have %v)", step, GPUSteps)
	}
	if a.Cols != b.Rows {
		return c, stats, fmt.Errorf("sparse: A·B needs A's columns to equal B's rows; A is %d×%d, B is %d×%d", a.Rows, a.Cols, b.Rows, b.Cols)
	}
	if a.Rows == 0 || b.Cols == 0 {
		return c, stats, fmt.Errorf("sparse: A·B with an empty dimension (A %d×%d, B %d×%d)", a.Rows, a.Cols, b.Rows, b.Cols)
	}
	r := &run{g: g, step: st, mem: &meter{pool: g.pool}}
	defer func() {
		if err == nil {
			stats, err = r.stats()
		}
		for _, m := range r.marks {
			m.ev.Destroy()
		}
		for _, e := range r.events {
			e.Destroy()
		}
		r.start.Destroy()
		if err != nil {
			r.mem.releaseAll() // C too
			c = cuda.CSR{}
			return
		}
		for _, x := range []*cuda.Buffer{c.RowPtr, c.ColIdx, c.Val} {
			r.mem.keep(x)
		}
		r.mem.releaseAll()
	}()
	if r.start, err = g.ctx.NewEvent(); err != nil {
		return c, stats, err
	}
	if err = r.start.Record(nil); err != nil {
		return c, stats, err
	}
	c = cuda.CSR{Rows: a.Rows, Cols: b.Cols}
	if err = st.multiply(r, a, b, &c); err == nil {
		err = g.ctx.Synchronize()
	}
	return c, stats, err
}
