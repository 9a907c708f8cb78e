package sqfd

import (
	"fmt"
	"sync"
)

// Candidate is a cluster's best new medoid seen by one shard: the least
// score (a sum of distances in 32.32 fixed point) and, on equal scores, the
// least signature index, the CPU's tie rule. Point is -1 where the shard
// scored no member of the cluster.
type Candidate struct {
	Score uint64
	Point int32
}

// none is the Candidate of a cluster with no scored member.
var none = Candidate{Score: ^uint64(0), Point: -1}

// better reports whether c beats o: a lower score, or the same score and a
// lower point; a real candidate always beats none.
func (c Candidate) better(o Candidate) bool {
	switch {
	case c.Point < 0:
		return false
	case o.Point < 0:
		return true
	case c.Score != o.Score:
		return c.Score < o.Score
	}
	return c.Point < o.Point
}

// Exchange is how the shards of one k-medoids run share results: the two
// collectives of an iteration, each called once per iteration by every
// shard (rank 0..Ranks()-1), as MPI ranks call theirs. HostExchange is the
// in-process implementation; docs/kmedoids.md says how MPI or NCCL fits.
type Exchange interface {
	Ranks() int
	// AllGather: the caller has filled items [lo, hi) of labels and dist
	// (each rank's own full-length arrays); on return every rank's arrays
	// hold every rank's items.
	AllGather(rank, lo, hi int, labels []int32, dist []float64) error
	// AllReduceMin: on return best[c] is, on every rank, the best of all
	// ranks' best[c].
	AllReduceMin(rank int, best []Candidate) error
	// Abort makes every pending and later call fail with err: a shard that
	// failed calls it so that the others do not wait for it forever.
	Abort(err error)
}

// HostExchange is an Exchange between goroutines of one process, through
// host memory: the last rank to arrive at a collective does it for all.
type HostExchange struct {
	ranks   int
	mu      sync.Mutex
	cond    *sync.Cond
	done    int // collectives completed
	arrived int
	err     error
	parts   []gatherPart // this collective's arguments, by rank
	best    [][]Candidate
}

type gatherPart struct {
	lo, hi int
	labels []int32
	dist   []float64
}

// NewHostExchange returns an exchange between ranks goroutines.
func NewHostExchange(ranks int) *HostExchange {
	h := &HostExchange{ranks: ranks, parts: make([]gatherPart, ranks), best: make([][]Candidate, ranks)}
	h.cond = sync.NewCond(&h.mu)
	return h
}

// Ranks is the number of shards.
func (h *HostExchange) Ranks() int { return h.ranks }

// Abort fails every pending and later collective with err (the first error
// given wins).
func (h *HostExchange) Abort(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		h.err = err
	}
	h.cond.Broadcast()
}

// collective registers a rank's arguments and waits for the others; the last
// to arrive runs complete, which may fail every rank.
func (h *HostExchange) collective(rank int, register func() error, complete func() error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if rank < 0 || rank >= h.ranks {
		return fmt.Errorf("sqfd: exchange: rank %d of %d", rank, h.ranks)
	}
	if h.err != nil {
		return h.err
	}
	if err := register(); err != nil {
		h.err = err
		h.cond.Broadcast()
		return err
	}
	h.arrived++
	if h.arrived == h.ranks {
		h.arrived = 0
		if err := complete(); err != nil && h.err == nil {
			h.err = err
		}
		h.done++
		h.cond.Broadcast()
		return h.err
	}
	for done := h.done; h.done == done && h.err == nil; {
		h.cond.Wait()
	}
	return h.err
}

// AllGather copies every rank's items into every rank's arrays.
func (h *HostExchange) AllGather(rank, lo, hi int, labels []int32, dist []float64) error {
	return h.collective(rank, func() error {
		if lo < 0 || lo > hi || hi > len(labels) || len(dist) != len(labels) {
			return fmt.Errorf("sqfd: exchange: rank %d gathers items [%d, %d) of %d labels and %d distances", rank, lo, hi, len(labels), len(dist))
		}
		h.parts[rank] = gatherPart{lo, hi, labels, dist}
		return nil
	}, func() error {
		n := len(h.parts[0].labels)
		for r, p := range h.parts {
			if len(p.labels) != n {
				return fmt.Errorf("sqfd: exchange: rank %d has %d labels, rank 0 has %d", r, len(p.labels), n)
			}
		}
		if n == 0 {
			return nil
		}
		for _, to := range h.parts {
			for _, from := range h.parts {
				if &to.labels[0] != &from.labels[0] {
					copy(to.labels[from.lo:from.hi], from.labels[from.lo:from.hi])
					copy(to.dist[from.lo:from.hi], from.dist[from.lo:from.hi])
				}
			}
		}
		return nil
	})
}

// AllReduceMin leaves the best candidate of every cluster in every rank's
// slice.
func (h *HostExchange) AllReduceMin(rank int, best []Candidate) error {
	return h.collective(rank, func() error {
		h.best[rank] = best
		return nil
	}, func() error {
		k := len(h.best[0])
		for r, b := range h.best {
			if len(b) != k {
				return fmt.Errorf("sqfd: exchange: rank %d has %d clusters, rank 0 has %d", r, len(b), k)
			}
		}
		for c := range k {
			m := none
			for _, b := range h.best {
				if b[c].better(m) {
					m = b[c]
				}
			}
			for _, b := range h.best {
				b[c] = m
			}
		}
		return nil
	})
}
