package sparse

import (
	"time"

	"gpulab/engine/cuda"
)

// One GPU multiplication as it runs: its step, its memory meter, and the
// timeline of events that splits its GPU time into phases.

// Phase is the GPU time of one part of a GPU SpGEMM: a kernel or a host
// round trip, or one bin of rows in the binned steps.
type Phase struct {
	Name string
	Rows int // rows the phase worked on (0: not row-based)
	Time time.Duration
}

// GPUStats describes one GPU SpGEMM run.
type GPUStats struct {
	Step      string
	Phases    []Phase
	Total     time.Duration
	PeakBytes int // device memory allocated beyond A and B, at its highest: C plus workspaces
}

// run is one multiplication: its step, memory meter and timeline.
type run struct {
	g      *GPUSpGEMM
	step   spgemmStep
	mem    *meter
	start  *cuda.Event
	marks  []mark
	events []*cuda.Event // alongside's, destroyed with the marks
}

type mark struct {
	phase Phase
	ev    *cuda.Event
}

func (r *run) launch(name string, cfg cuda.LaunchConfig, args ...any) error {
	f, err := r.g.function(r.step, name)
	if err != nil {
		return err
	}
	return f.Launch(cfg, args...)
}

// event records a new event on s (nil: the default stream), destroyed with
// the run.
func (r *run) event(s *cuda.Stream) (*cuda.Event, error) {
	e, err := r.g.ctx.NewEvent()
	if err != nil {
		return nil, err
	}
	r.events = append(r.events, e)
	return e, e.Record(s)
}

// alongside queues dense on a second stream and rest on the default one,
// both after the work queued so far, and makes the default stream wait for
// both (step 06). The two hold different rows of C, so they can share the
// GPU: the dense windows are latency bound, and the hash bins' blocks fill
// the SMs they leave idle, instead of each waiting for the other to finish.
func (r *run) alongside(dense func(s *cuda.Stream) error, rest func() error) error {
	if r.g.side == nil {
		s, err := r.g.ctx.NewStream()
		if err != nil {
			return err
		}
		r.g.side = s
	}
	ready, err := r.event(nil)
	if err != nil {
		return err
	}
	if err := r.g.side.WaitEvent(ready); err != nil {
		return err
	}
	if err := dense(r.g.side); err != nil {
		return err
	}
	if err := rest(); err != nil {
		return err
	}
	done, err := r.event(r.g.side)
	if err != nil {
		return err
	}
	return (*cuda.Stream)(nil).WaitEvent(done)
}

// done closes a phase: everything queued since the previous mark.
func (r *run) done(name string, rows int) error {
	ev, err := r.g.ctx.NewEvent()
	if err != nil {
		return err
	}
	r.marks = append(r.marks, mark{Phase{Name: name, Rows: rows}, ev})
	return ev.Record(nil)
}

func (r *run) stats() (GPUStats, error) {
	s := GPUStats{Step: r.step.Name, PeakBytes: r.mem.peak}
	prev := r.start
	for _, m := range r.marks {
		d, err := cuda.Elapsed(prev, m.ev)
		if err != nil {
			return s, err
		}
		m.phase.Time = d
		s.Phases = append(s.Phases, m.phase)
		s.Total += d
		prev = m.ev
	}
	return s, nil
}
