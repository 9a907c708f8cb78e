package lfm2

// Timing a run kernel by kernel: a pair of events around every operation of
// every lane, read once the run is over.

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"gpulab/engine/cuda"
)

// profile is a lane's events. They come from a pool that grows during the
// first profiled run and is reused after, so a timed run creates none.
type profile struct {
	ctx    *cuda.Context
	on     bool
	pool   []*cuda.Event
	used   int
	origin *cuda.Event // recorded when the run starts
	spans  []span
	mb     int // the micro-batch being queued
}

// span is one timed operation.
type span struct {
	name       string
	layer, mb  int
	start, end *cuda.Event
}

// record takes the next event of the pool and records it on s.
func (p *profile) record(s *cuda.Stream) (*cuda.Event, error) {
	if p.used == len(p.pool) {
		e, err := p.ctx.NewEvent()
		if err != nil {
			return nil, err
		}
		p.pool = append(p.pool, e)
	}
	e := p.pool[p.used]
	p.used++
	return e, e.Record(s)
}

func (p *profile) free() error {
	var errs []error
	for _, e := range p.pool {
		errs = append(errs, e.Destroy())
	}
	p.pool = nil
	return errors.Join(errs...)
}

// op runs f, which queues work on the lane's stream, and times that work
// when the lane is being profiled.
func (ln *lane) op(name string, layer int, f func() error) error {
	p := ln.prof
	if p == nil || !p.on {
		return f()
	}
	start, err := p.record(ln.stream)
	if err != nil {
		return err
	}
	if err := f(); err != nil {
		return err
	}
	end, err := p.record(ln.stream)
	if err != nil {
		return err
	}
	p.spans = append(p.spans, span{name: name, layer: layer, mb: p.mb, start: start, end: end})
	return nil
}

// Profile is the GPU time of one run, operation by operation.
type Profile struct {
	// Wall is the run's time on the host clock, from the first launch to the
	// end of the last kernel.
	Wall time.Duration
	// Kernels is each operation's time summed over layers, micro-batches,
	// lanes and stages, slowest first. Lanes overlap, so the sum can exceed
	// Wall.
	Kernels []KernelTime
	// Layers is each layer's time, summed over micro-batches; Parts the
	// same, part by part (2l: layer l's mixer, 2l+1 its feed-forward); Head
	// is the final norm, LM head and argmax.
	Layers []time.Duration
	Parts  []time.Duration
	Head   time.Duration
	// Timeline is every micro-batch on every stage and lane, for a Gantt
	// chart of the pipeline. Times count from the start of the run on each
	// device (devices are aligned by a host synchronization, to a few µs).
	Timeline []Span
}

// KernelTime is one operation's GPU time over Calls calls.
type KernelTime struct {
	Name  string
	Calls int
	Time  time.Duration
}

// Span is one micro-batch's work on one lane of one stage.
type Span struct {
	Device      string
	Stage, Lane int
	MicroBatch  int
	Start, End  time.Duration
	From, To    int // the stage's parts [From, To) (see StageInfo)
}

// profiled runs f with every lane timed and returns the profile.
func (m *CUDAModel) profiled(f func() error) (*Profile, error) {
	for _, st := range m.stages {
		if err := st.ctx.Synchronize(); err != nil {
			return nil, fmt.Errorf("lfm2: %w", err)
		}
	}
	start := time.Now()
	for _, st := range m.stages {
		for _, ln := range st.lanes {
			if ln.prof == nil {
				ln.prof = &profile{ctx: st.ctx}
			}
			p := ln.prof
			p.on, p.used, p.spans, p.mb = true, 0, p.spans[:0], 0
			var err error
			if p.origin, err = p.record(ln.stream); err != nil {
				return nil, fmt.Errorf("lfm2: %w", err)
			}
		}
	}
	err := f()
	for _, st := range m.stages {
		for _, ln := range st.lanes {
			ln.prof.on = false
		}
	}
	if err != nil {
		return nil, err
	}
	if err := m.synchronize(); err != nil {
		return nil, err
	}
	prof := &Profile{Wall: time.Since(start), Layers: make([]time.Duration, m.c.Layers), Parts: make([]time.Duration, 2*m.c.Layers)}
	byName := map[string]*KernelTime{}
	for si, st := range m.stages {
		for li, ln := range st.lanes {
			for _, sp := range ln.prof.spans {
				t0, err := cuda.Elapsed(ln.prof.origin, sp.start)
				if err != nil {
					return nil, fmt.Errorf("lfm2: %w", err)
				}
				t1, err := cuda.Elapsed(ln.prof.origin, sp.end)
				if err != nil {
					return nil, fmt.Errorf("lfm2: %w", err)
				}
				switch {
				case sp.name == "micro-batch":
					prof.Timeline = append(prof.Timeline, Span{Device: st.ctx.ID(), Stage: si, Lane: li, MicroBatch: sp.mb,
						Start: t0, End: t1, From: st.from, To: st.to})
				case sp.name == "mixer" || sp.name == "feed-forward":
					prof.Layers[sp.layer] += t1 - t0
					part := 2 * sp.layer
					if sp.name == "feed-forward" {
						part++
					}
					prof.Parts[part] += t1 - t0
				default:
					if sp.layer < 0 && sp.name != "embedding" {
						prof.Head += t1 - t0
					}
					kt := byName[sp.name]
					if kt == nil {
						kt = &KernelTime{Name: sp.name}
						byName[sp.name] = kt
					}
					kt.Calls++
					kt.Time += t1 - t0
				}
			}
		}
	}
	for _, kt := range byName {
		prof.Kernels = append(prof.Kernels, *kt)
	}
	slices.SortFunc(prof.Kernels, func(a, b KernelTime) int { return cmp.Or(cmp.Compare(b.Time, a.Time), cmp.Compare(a.Name, b.Name)) })
	slices.SortFunc(prof.Timeline, func(a, b Span) int { return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Stage, b.Stage)) })
	return prof, nil
}

// synchronize waits for every stage's device.
func (m *CUDAModel) synchronize() error {
	for _, st := range m.stages {
		if err := st.ctx.Synchronize(); err != nil {
			return fmt.Errorf("lfm2: %w", err)
		}
	}
	return nil
}
