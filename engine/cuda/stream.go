package cuda

import (
	"fmt"
	"time"
)

// Stream is a queue of work on one device. A nil *Stream means the legacy
// default stream.
type Stream struct {
	ctx *Context
	h   uintptr
}

// NewStream creates a stream that does not synchronize with the default stream.
func (c *Context) NewStream() (*Stream, error) {
	s := &Stream{ctx: c}
	err := c.Do(func() error { return check("cuStreamCreate", cuStreamCreate(&s.h, 1)) }) // CU_STREAM_NON_BLOCKING
	if err != nil {
		return nil, err
	}
	return s, nil
}

// NewStreamPriority is NewStream with a scheduling priority: when both have
// blocks waiting, the GPU starts those of the stream with the higher
// priority first (running blocks are not preempted). rank 0 is the device's
// highest priority, rank 1 the next, down to its lowest, where larger ranks
// stay.
func (c *Context) NewStreamPriority(rank int) (*Stream, error) {
	s := &Stream{ctx: c}
	err := c.Do(func() error {
		var least, greatest int32 // CUDA counts down: greatest is the smallest number
		if err := check("cuCtxGetStreamPriorityRange", cuCtxGetStreamPriorityRange(&least, &greatest)); err != nil {
			return err
		}
		p := min(greatest+int32(rank), least)
		return check("cuStreamCreateWithPriority", cuStreamCreateWithPriority(&s.h, 1, p))
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Stream) handle() uintptr {
	if s == nil {
		return 0
	}
	return s.h
}

// Synchronize waits until all work queued on s has finished.
func (s *Stream) Synchronize() error {
	return s.ctx.Do(func() error { return check("cuStreamSynchronize", cuStreamSynchronize(s.h)) })
}

// WaitEvent makes the work queued on s after this call wait until e, as last
// recorded, has happened; e may belong to another device's context (that is
// how a pipeline hands work from one GPU to the next). The host does not wait.
// A nil s is the default stream of e's context.
func (s *Stream) WaitEvent(e *Event) error {
	ctx := e.ctx
	if s != nil {
		ctx = s.ctx
	}
	return ctx.Do(func() error { return check("cuStreamWaitEvent", cuStreamWaitEvent(s.handle(), e.h, 0)) })
}

// Destroy releases the stream once its work is done.
func (s *Stream) Destroy() error {
	if s == nil || s.h == 0 {
		return nil
	}
	h := s.h
	s.h = 0
	return s.ctx.Do(func() error { return check("cuStreamDestroy_v2", cuStreamDestroy(h)) })
}

// Event marks a point in a stream; two of them time the work between.
type Event struct {
	ctx *Context
	h   uintptr
}

// NewEvent creates a timing event.
func (c *Context) NewEvent() (*Event, error) {
	e := &Event{ctx: c}
	err := c.Do(func() error { return check("cuEventCreate", cuEventCreate(&e.h, 0)) })
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Record enqueues the event on stream s (nil: the default stream).
func (e *Event) Record(s *Stream) error {
	return e.ctx.Do(func() error { return check("cuEventRecord", cuEventRecord(e.h, s.handle())) })
}

// Synchronize waits until the event has happened.
func (e *Event) Synchronize() error {
	return e.ctx.Do(func() error { return check("cuEventSynchronize", cuEventSynchronize(e.h)) })
}

// Destroy releases the event.
func (e *Event) Destroy() error {
	if e == nil || e.h == 0 {
		return nil
	}
	h := e.h
	e.h = 0
	return e.ctx.Do(func() error { return check("cuEventDestroy_v2", cuEventDestroy(h)) })
}

// Elapsed returns the GPU time between two recorded events (resolution about 0.5 µs).
func Elapsed(start, end *Event) (time.Duration, error) {
	var ms float32
	err := end.ctx.Do(func() error {
		if err := check("cuEventSynchronize", cuEventSynchronize(end.h)); err != nil {
			return err
		}
		return eventElapsed(&ms, start.h, end.h)
	})
	return time.Duration(float64(ms) * float64(time.Millisecond)), err
}

// Timer times work on one stream with a reusable pair of events.
type Timer struct {
	stream     *Stream
	start, end *Event
}

// NewTimer makes a timer for stream s (nil: the default stream).
func (c *Context) NewTimer(s *Stream) (*Timer, error) {
	start, err := c.NewEvent()
	if err != nil {
		return nil, err
	}
	end, err := c.NewEvent()
	if err != nil {
		start.Destroy()
		return nil, err
	}
	return &Timer{stream: s, start: start, end: end}, nil
}

// Time records an event, runs enqueue (which queues work on the timer's
// stream), records a second event and returns the GPU time between them.
func (t *Timer) Time(enqueue func() error) (time.Duration, error) {
	if err := t.start.Record(t.stream); err != nil {
		return 0, err
	}
	if err := enqueue(); err != nil {
		return 0, err
	}
	if err := t.end.Record(t.stream); err != nil {
		return 0, err
	}
	d, err := Elapsed(t.start, t.end)
	if err != nil {
		return 0, fmt.Errorf("timer: %w", err)
	}
	return d, nil
}

// Destroy releases the timer's events.
func (t *Timer) Destroy() {
	t.start.Destroy()
	t.end.Destroy()
}
