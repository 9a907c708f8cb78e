package bandwidth

import (
	"fmt"
	"time"

	"gpulab/engine/cuda"
)

// PeerLink is the measured copy bandwidth from one GPU's memory to another's:
// what a pipeline stage pays to hand its activations to the next one.
type PeerLink struct {
	Src    string  `json:"src"`    // device id, e.g. cuda:0
	Dst    string  `json:"dst"`    // device id
	Direct bool    `json:"direct"` // peer access on: NVLink or PCIe without the host in between
	Bytes  int     `json:"bytes"`  // bytes per copy
	GBps   float64 `json:"gbps"`   // bytes / the fastest copy's GPU time
}

// PeerBandwidth times cuMemcpyPeerAsync of bytes from every GPU of ctxs to
// every other one (reps copies per pair after one warm-up; the fastest
// counts), on a stream of the destination, timed by the destination's events.
// Peer access is enabled where the hardware allows it; where it does not, the
// driver stages the copy through host memory and Direct is false. Each
// destination's copy is checked byte for byte against the source.
func PeerBandwidth(ctxs []*cuda.Context, bytes, reps int) ([]PeerLink, error) {
	if len(ctxs) < 2 {
		return nil, fmt.Errorf("peer bandwidth: %d GPUs; it needs at least 2", len(ctxs))
	}
	if bytes <= 0 || bytes%4 != 0 || reps <= 0 {
		return nil, fmt.Errorf("peer bandwidth: %d bytes × %d copies: want a positive multiple of 4 bytes and at least 1 copy", bytes, reps)
	}
	pattern := make([]uint32, bytes/4)
	for i := range pattern {
		pattern[i] = uint32(i)*2654435761 + 1
	}
	bufs := make([]*cuda.Buffer, len(ctxs))
	defer func() {
		for _, b := range bufs {
			if b != nil {
				b.Free()
			}
		}
	}()
	for i, c := range ctxs {
		b, err := cuda.Upload(c, pattern)
		if err != nil {
			return nil, fmt.Errorf("peer bandwidth: %s: %w", c.ID(), err)
		}
		bufs[i] = b
	}
	var links []PeerLink
	for d, dst := range ctxs {
		for s, src := range ctxs {
			if s == d {
				continue
			}
			if err := bufs[d].Memset(0, nil); err != nil {
				return nil, err
			}
			l := PeerLink{Src: src.ID(), Dst: dst.ID(), Bytes: bytes, Direct: dst.EnablePeerAccess(src) == nil}
			best, err := timePeerCopy(bufs[d], bufs[s], bytes, reps)
			if err != nil {
				return nil, fmt.Errorf("peer bandwidth %s -> %s: %w", l.Src, l.Dst, err)
			}
			got, err := cuda.Download[uint32](bufs[d], len(pattern))
			if err != nil {
				return nil, err
			}
			for i := range got {
				if got[i] != pattern[i] {
					return nil, fmt.Errorf("peer bandwidth %s -> %s: word %d is %#x after the copy, want %#x", l.Src, l.Dst, i, got[i], pattern[i])
				}
			}
			l.GBps = float64(bytes) / best.Seconds() / 1e9
			links = append(links, l)
		}
	}
	return links, nil
}

// timePeerCopy returns the fastest of reps copies of src into dst, after one
// untimed copy.
func timePeerCopy(dst, src *cuda.Buffer, bytes, reps int) (time.Duration, error) {
	stream, err := dst.Context().NewStream()
	if err != nil {
		return 0, err
	}
	defer stream.Destroy()
	timer, err := dst.Context().NewTimer(stream)
	if err != nil {
		return 0, err
	}
	defer timer.Destroy()
	copyOnce := func() error { return cuda.CopyPeer(dst, src, bytes, stream) }
	if err := copyOnce(); err != nil {
		return 0, err
	}
	best := time.Duration(1<<63 - 1)
	for range reps {
		d, err := timer.Time(copyOnce)
		if err != nil {
			return 0, err
		}
		best = min(best, d)
	}
	return best, nil
}
