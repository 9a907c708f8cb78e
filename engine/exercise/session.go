package exercise

import (
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"gpulab/engine"
	"gpulab/engine/cuda"
	"gpulab/engine/exercise/wire"
)

// A Runner runs code on a batch of tasks (one launch on different
// inputs): it returns each task's outputs, raw bits in argument order, and
// how long the batch took. In a notebook the runner is in the student's
// own process and the time is the kernels' device time; under lab grade it
// is a worker process in a sandbox, and the time is the round trip the
// grader measured (wire.Client).
type Runner interface {
	Run(ts []wire.Task) (outs [][][]uint32, took time.Duration, err error)
}

// runOne runs a single task.
func runOne(r Runner, t wire.Task) ([][]uint32, error) {
	outs, _, err := r.Run([]wire.Task{t})
	if err != nil {
		return nil, err
	}
	return outs[0], nil
}

// A session is one check of a source: where its code runs and how it is
// judged. The judging side draws every input and compares every output
// with its own reference; the runners only compute.
type session struct {
	info     engine.Info    // the device the code runs on
	student  Runner         // the source being checked
	solution Runner         // the reference solution, run the same way; nil under lab grade, which times it once for all submissions
	local    bool           // the check runs in the student's own process (a notebook): the ladder's other steps are timed too
	dev      *engine.Device // the device, in the student's own process; nil under lab grade
	rng      *rand.Rand     // seeded from crypto/rand: inputs nobody can know beforehand
	// fresh draws new inputs for every timed run (lab grade): a kernel
	// cannot then reuse what an earlier launch computed. A notebook checks
	// the student's own kernel and reuses one timing problem.
	fresh bool
	ran   bool // a task ran: the source compiled
	// src is the source being checked, for checks that read it (a
	// puzzle's required constructs, a course's refusal of the public
	// solution). hidden are a course's own problems, checked after the
	// public shapes (Course.Apply).
	src    string
	hidden []draw
}

// newRand is a generator seeded from crypto/rand.
func newRand() *rand.Rand {
	var seed [16]byte
	if _, err := crand.Read(seed[:]); err != nil {
		panic(fmt.Sprintf("exercise: crypto/rand: %v", err)) // never fails on Linux
	}
	return rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])))
}

// A problem is one input of a check, drawn by the judging side, and how
// to judge the outputs of a run on it.
type problem interface {
	String() string  // its shape, for messages
	task() wire.Task // the launch and its inputs
	// mismatch describes the first wrong output among the given rows
	// (rows of C, points, tokens...; all rows when rows is nil), or "".
	mismatch(out [][]uint32, rows []int) (string, error)
	rows() int     // how many rows mismatch can check
	work() float64 // the flops, or bytes, of one run
}

// A hinter is a problem that can say what its shape has that a kernel
// easily gets wrong (a size that is a multiple of no tile, a row of zeros),
// shown with a wrong result on it.
type hinter interface{ hint() string }

// A draw makes a problem with fresh random inputs.
type draw func(rng *rand.Rand) (problem, error)

const (
	timedRuns   = 5  // the speed is the best of this many batches of runs
	timedBatch  = 4  // runs per batch, each on fresh inputs: the round trip's overhead is shared
	sampledRows = 16 // rows checked in each timed run's outputs
)

// judge checks the student's code on a problem from each of shapes,
// verifying every row, then measures its speed on timing problems, and the
// reference solution's if the session runs it (named refName), and adds
// the ladder's other steps in a notebook.
func (s *session) judge(shapes []draw, timing draw, refName string, ladder func(p problem) []Rung) Result {
	var r Result
	for i, d := range append(slices.Clip(shapes), s.hidden...) {
		p, err := d(s.rng)
		if err != nil {
			r.Error = err.Error()
			return r
		}
		out, err := s.runGuarded(s.student, p)
		if se, ok := asStray(err); ok {
			s.ran, r.Compiled = true, true
			se.report(&r, p, false)
			return r
		}
		if err != nil {
			s.fail(&r, err)
			return r
		}
		s.ran, r.Compiled = true, true
		msg, err := p.mismatch(out, nil)
		if err != nil || msg != "" {
			r.Error, r.Detail = "wrong result for "+p.String(), msg
			if i >= len(shapes) {
				r.Error += " (one of the course's hidden shapes)"
			}
			if err != nil {
				r.Error = err.Error()
			}
			if h, ok := p.(hinter); ok {
				r.Hint = h.hint()
			}
			r.Pictures = s.pictures(p, out)
			return r
		}
	}
	speed, p, err := s.speed(s.student, timing)
	if err != nil {
		s.fail(&r, err)
		var w *wrongResult
		if errors.As(err, &w) {
			r.Error, r.Detail = "correct on the small problems, but wrong at the timing size "+w.problem, w.detail
		}
		if se, ok := asStray(err); ok {
			se.report(&r, p, true)
		}
		return r
	}
	r.Correct, r.GFLOPS, r.Size, r.Reference = true, speed, p.String(), refName
	if s.solution != nil {
		if ref, _, err := s.speed(s.solution, timing); err == nil {
			r.Ladder = append(r.Ladder, Rung{Name: refName, GFLOPS: ref})
			r.PctOfRef = 100 * speed / ref
		}
	}
	if s.local && ladder != nil {
		r.Ladder = append(r.Ladder, ladder(p)...)
	}
	slices.SortStableFunc(r.Ladder, func(a, b Rung) int { return strings.Compare(a.Name, b.Name) }) // steps in ladder order
	return r
}

// smallTiming reports whether the session times small problems: on PoCL,
// which runs kernels on this machine's CPU, and under compute-sanitizer
// (cuda.Sanitized), whose checks slow kernels down a hundredfold and more.
func (s *session) smallTiming() bool { return isPoCL(s.info) || cuda.Sanitized() }

// drawBatch draws timedBatch problems from timing, in parallel, each with
// a generator seeded from s.rng; without s.fresh, one problem timedBatch
// times.
func (s *session) drawBatch(timing draw) ([]problem, error) {
	ps := make([]problem, timedBatch)
	if !s.fresh {
		p, err := timing(s.rng)
		for i := range ps {
			ps[i] = p
		}
		return ps, err
	}
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i := range ps {
		rng := rand.New(rand.NewPCG(s.rng.Uint64(), s.rng.Uint64()))
		wg.Go(func() { ps[i], errs[i] = timing(rng) })
	}
	wg.Wait()
	return ps, errors.Join(errs...)
}

// wrongResult is a timed run whose outputs were wrong.
type wrongResult struct{ problem, detail string }

func (w *wrongResult) Error() string { return "wrong result for " + w.problem + ": " + w.detail }

// speed runs timedRuns batches of timedBatch problems from timing on run
// (fresh ones for every run when s.fresh), checks sampled rows of every
// run's outputs, and returns the best batch's speed (work per second, in
// billions) and a problem of it.
func (s *session) speed(run Runner, timing draw) (float64, problem, error) {
	best := math.Inf(1) // seconds per unit of work
	var ps []problem
	runs := timedRuns
	if cuda.Sanitized() {
		runs = 1 // a speed under compute-sanitizer means nothing: one batch checks the kernel
	}
	for range runs {
		if s.fresh || ps == nil {
			var err error
			if ps, err = s.drawBatch(timing); err != nil {
				return 0, nil, err
			}
		}
		var tasks []wire.Task
		for _, p := range ps {
			tasks = append(tasks, guarded(p.task()))
		}
		outs, took, err := run.Run(tasks)
		if err == nil {
			outs, err = checkStrays(ps, tasks, s.src, outs)
		}
		if err != nil {
			return 0, ps[0], err
		}
		for i, p := range ps {
			msg, err := p.mismatch(outs[i], sample(s.rng, p.rows(), sampledRows))
			if err != nil {
				return 0, nil, err
			}
			if msg != "" {
				return 0, nil, &wrongResult{problem: p.String(), detail: msg}
			}
		}
		var work float64
		for _, p := range ps {
			work += p.work()
		}
		best = min(best, max(took.Seconds(), 1e-9)/work)
	}
	return 1 / best / 1e9, ps[0], nil
}

// fail records a run's error: a compile fault, a run fault, or anything
// else the runner reports (a worker that died, the time limit).
func (s *session) fail(r *Result, err error) {
	var f *wire.FaultError
	switch {
	case errors.As(err, &f):
		r.Compiled, r.Error = f.Kind == wire.RunFault, f.Msg
	default:
		r.Compiled, r.Error = s.ran, err.Error()
	}
}

// sample is k distinct rows of n in increasing order, drawn with rng; nil
// (every row) when n <= k. It takes O(k) time and memory whatever n is
// (Floyd's algorithm: for each j of the last k rows, a row at most j, or j
// itself if that one is taken): a puzzle's timing problem has millions of
// rows, and a permutation of them all cost more than the kernel's run.
func sample(rng *rand.Rand, n, k int) []int {
	if n <= k {
		return nil
	}
	taken := make(map[int]bool, k)
	rows := make([]int, 0, k)
	for j := n - k; j < n; j++ {
		r := rng.IntN(j + 1)
		if taken[r] {
			r = j
		}
		taken[r] = true
		rows = append(rows, r)
	}
	slices.Sort(rows)
	return rows
}

// each calls f for the given rows, or for 0..n−1 when rows is nil, and
// stops at the first non-empty description.
func each(n int, rows []int, f func(i int) string) string {
	if rows == nil {
		for i := range n {
			if d := f(i); d != "" {
				return d
			}
		}
		return ""
	}
	for _, i := range rows {
		if d := f(i); d != "" {
			return d
		}
	}
	return ""
}
