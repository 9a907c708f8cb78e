package bandwidth

import (
	"strings"
	"testing"

	"gpulab/engine/cuda"
	"gpulab/engine/cuda/cudatest"
)

// TestPeerBandwidth copies between every pair of this machine's GPUs (on a
// one-GPU machine, between two buffers of the same GPU) and checks that each
// pair is measured and each copy arrived whole.
func TestPeerBandwidth(t *testing.T) {
	ctx := cudatest.Context(t)
	ctxs := []*cuda.Context{ctx, ctx}
	if n, _ := cuda.DeviceCount(); n >= 2 {
		ctxs = []*cuda.Context{ctx}
		for i := 1; i < n; i++ {
			c, err := cuda.NewContext(i)
			if err != nil {
				t.Fatal(err)
			}
			ctxs = append(ctxs, c)
		}
	}
	links, err := PeerBandwidth(ctxs, 4<<20+12, 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(ctxs) * (len(ctxs) - 1); len(links) != want {
		t.Fatalf("%d links, want %d", len(links), want)
	}
	for _, l := range links {
		t.Logf("%s -> %s: %.1f GB/s (direct %v)", l.Src, l.Dst, l.GBps, l.Direct)
		if l.GBps <= 0 {
			t.Errorf("%s -> %s: no bandwidth", l.Src, l.Dst)
		}
	}
}

func TestPeerBandwidthBadInput(t *testing.T) {
	for _, tc := range []struct {
		gpus, bytes, reps int
		want              string
	}{
		{1, 1024, 1, "at least 2"},
		{2, 1023, 1, "multiple of 4"},
		{2, 1024, 0, "at least 1 copy"},
	} {
		ctxs := make([]*cuda.Context, tc.gpus) // checked before any GPU is touched
		if _, err := PeerBandwidth(ctxs, tc.bytes, tc.reps); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d GPUs, %d bytes, %d copies: %v, want an error saying %q", tc.gpus, tc.bytes, tc.reps, err, tc.want)
		}
	}
}
