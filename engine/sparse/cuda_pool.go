package sparse

import "gpulab/engine/cuda"

// Device memory for the GPU SpGEMM ladder and cuSPARSE alike: a caching
// pool, and a meter that records the most a multiplication had out.

// next multiplication of it makes no cuMemAlloc or cuMemFree calls, which
// would otherwise cost more than the kernels on small matrices. The bench
// gives cuSPARSE's buffers the same pool.
type pool struct {
	ctx  *cuda.Context
	free map[int][]*cuda.Buffer
}

func (p *pool) get(bytes int) (*cuda.Buffer, error) {
	size := (max(bytes, 4) + 255) &^ 255
	if list := p.free[size]; len(list) > 0 {
		b := list[len(list)-1]
		p.free[size] = list[:len(list)-1]
		return b, nil
	}
	return p.ctx.Alloc(size)
}

func (p *pool) put(b *cuda.Buffer) {
	if b != nil && b.Ptr() != 0 {
		p.free[b.Size()] = append(p.free[b.Size()], b)
	}
}

// drain frees every pooled buffer.
func (p *pool) drain() {
	for _, list := range p.free {
		for _, b := range list {
			b.Free()
		}
	}
	clear(p.free)
}

// meter hands out device memory from a pool and remembers the highest total
// it had out.
type meter struct {
	pool       *pool
	live, peak int
	held       []*cuda.Buffer
}

func (m *meter) alloc(bytes int) (*cuda.Buffer, error) {
	b, err := m.pool.get(bytes)
	if err != nil {
		return nil, err
	}
	m.live += b.Size()
	m.peak = max(m.peak, m.live)
	m.held = append(m.held, b)
	return b, nil
}

func (m *meter) release(b *cuda.Buffer) {
	for i, h := range m.held {
		if h == b {
			m.live -= b.Size()
			m.held = append(m.held[:i], m.held[i+1:]...)
			m.pool.put(b)
			return
		}
	}
}

// keep takes b off the meter's list (it outlives the run).
func (m *meter) keep(b *cuda.Buffer) {
	for i, h := range m.held {
		if h == b {
			m.held = append(m.held[:i], m.held[i+1:]...)
			return
		}
	}
}

// releaseAll returns everything not kept to the pool.
func (m *meter) releaseAll() {
	for len(m.held) > 0 {
		m.release(m.held[0])
	}
}
