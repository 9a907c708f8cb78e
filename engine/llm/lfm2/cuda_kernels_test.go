package lfm2

// Each kernel of kernels/cuda/lfm2 against the CPU reference's math, on odd
// sizes. They skip without a GPU.

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gpulab/engine/cuda"
	"gpulab/engine/cuda/cudatest"
)

// kernelTest holds the kernels of one config and dtype, and frees what a
// test uploads.
type kernelTest struct {
	t   *testing.T
	ctx *cuda.Context
	k   *kernelSet
	o   CUDAOptions
	rng *rand.Rand
}

// newKernelTest compiles the kernels for head_dim hd, conv width convL,
// hidden h and expert width im.
func newKernelTest(t *testing.T, dtype string, hd, convL, h, im int) *kernelTest {
	ctx := cudatest.Context(t)
	o, err := CUDAOptions{DType: dtype}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	k, err := compileKernels(ctx, &Config{HeadDim: hd, ConvL: convL, Hidden: h, MoEIntermediate: im}, o)
	if err != nil {
		t.Fatal(err)
	}
	return &kernelTest{t: t, ctx: ctx, k: k, o: o, rng: rand.New(rand.NewPCG(9, 10))}
}

// randn is n standard normal values.
func (kt *kernelTest) randn(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(kt.rng.NormFloat64())
	}
	return v
}

// keep registers b to be freed at the end of the test.
func (kt *kernelTest) keep(b *cuda.Buffer, err error) *cuda.Buffer {
	kt.t.Helper()
	if err != nil {
		kt.t.Fatal(err)
	}
	kt.t.Cleanup(func() { b.Free() })
	return b
}

func (kt *kernelTest) f32(v []float32) *cuda.Buffer { return kt.keep(cuda.Upload(kt.ctx, v)) }

// elem uploads v in the engine's element type, and returns the values the
// GPU sees (rounded to bf16 in the bf16 engine).
func (kt *kernelTest) elem(v []float32) (*cuda.Buffer, []float32) {
	if kt.o.DType == "f32" {
		return kt.f32(v), v
	}
	bits, seen := make([]uint16, len(v)), make([]float32, len(v))
	for i, x := range v {
		bits[i] = f32ToBF16(x)
		seen[i] = math.Float32frombits(uint32(bits[i]) << 16)
	}
	return kt.keep(cuda.Upload(kt.ctx, bits)), seen
}

// zeros is a zeroed buffer of n 4-byte values.
func (kt *kernelTest) zeros(n int) *cuda.Buffer {
	b := kt.keep(kt.ctx.Alloc(4 * max(n, 1)))
	if err := b.Memset(0, nil); err != nil {
		kt.t.Fatal(err)
	}
	return b
}

// get waits for the GPU and reads n values of b.
func get[T cuda.Number](kt *kernelTest, b *cuda.Buffer, n int) []T {
	kt.t.Helper()
	if err := kt.ctx.Synchronize(); err != nil {
		kt.t.Fatal(err)
	}
	v, err := cuda.Download[T](b, n)
	if err != nil {
		kt.t.Fatal(err)
	}
	return v
}

// getElem reads n values of an elem buffer as float32.
func (kt *kernelTest) getElem(b *cuda.Buffer, n int) []float32 {
	if kt.o.DType == "f32" {
		return get[float32](kt, b, n)
	}
	out := make([]float32, n)
	for i, x := range get[uint16](kt, b, n) {
		out[i] = math.Float32frombits(uint32(x) << 16)
	}
	return out
}

// launch runs f on the default stream.
func (kt *kernelTest) launch(f *cuda.Function, grid cuda.Dim3, block, smem int, args ...any) {
	kt.t.Helper()
	if err := f.Launch(cuda.LaunchConfig{Grid: grid, Block: cuda.Dim3{X: block}, SharedMem: smem}, args...); err != nil {
		kt.t.Fatal(err)
	}
}

// near fails the test if got and want differ by more than tol·(1 + |want|).
func near(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(float64(got[i] - want[i])); !(d <= tol*(1+math.Abs(float64(want[i])))) {
			t.Fatalf("%s: [%d] = %g, want %g", what, i, got[i], want[i])
		}
	}
}

// TestCUDAConvert: every source dtype widens to exactly the CPU's float32,
// and the bf16 engine rounds like f32ToBF16.
func TestCUDAConvert(t *testing.T) {
	vals := []float32{0, float32(math.Copysign(0, -1)), 1, -2.5, 3.14159, 1e-7, 6e-8, 65504, -1e30, float32(math.Inf(1)), 0.1}
	for _, dtype := range []string{"F32", "BF16", "F16"} {
		raw := make([]byte, 0)
		for _, v := range vals {
			switch dtype {
			case "F32":
				raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
			case "BF16":
				raw = binary.LittleEndian.AppendUint16(raw, f32ToBF16(v))
			case "F16":
				raw = binary.LittleEndian.AppendUint16(raw, f32ToF16(v))
			}
		}
		want := (&Tensor{DType: dtype, Shape: []int{len(vals)}, data: raw}).Float32()
		for _, engine := range []string{"f32", "bf16"} {
			kt := newKernelTest(t, engine, 8, 3, 8, 8)
			src, dst, dstF32 := kt.keep(cuda.Upload(kt.ctx, raw)), kt.zeros(len(vals)), kt.zeros(len(vals))
			kt.launch(kt.k.convertElem, cuda.Dim3{X: 1}, 256, 0, src, sourceDTypes[dtype], len(vals), dst)
			kt.launch(kt.k.convertF32, cuda.Dim3{X: 1}, 256, 0, src, sourceDTypes[dtype], len(vals), dstF32)
			got, gotF32 := kt.getElem(dst, len(vals)), get[float32](kt, dstF32, len(vals))
			for i := range vals {
				w := want[i]
				if engine == "bf16" {
					w = math.Float32frombits(uint32(f32ToBF16(w)) << 16)
				}
				if math.Float32bits(got[i]) != math.Float32bits(w) || math.Float32bits(gotF32[i]) != math.Float32bits(want[i]) {
					t.Errorf("%s -> %s: value %d is %g (f32 %g), want %g (f32 %g)", dtype, engine, i, got[i], gotF32[i], w, want[i])
				}
			}
		}
	}
}

// TestCUDAFillNormal: the random weights have the asked mean and standard
// deviation, and the bf16 ones are the f32 ones rounded.
func TestCUDAFillNormal(t *testing.T) {
	const n = 1 << 20
	var f32 []float32
	for _, engine := range []string{"f32", "bf16"} {
		kt := newKernelTest(t, engine, 8, 3, 8, 8)
		dst := kt.zeros(n)
		kt.launch(kt.k.fillElem, cuda.Dim3{X: 512}, 256, 0, uint64(5), uint64(77), n, float32(1), float32(0.02), dst)
		got := kt.getElem(dst, n)
		if engine == "f32" {
			f32 = got
			var sum, sq float64
			for _, x := range got {
				sum += float64(x)
				sq += float64(x) * float64(x)
			}
			mean := sum / n
			std := math.Sqrt(sq/n - mean*mean)
			if math.Abs(mean-1) > 1e-4 || math.Abs(std-0.02) > 2e-4 {
				t.Errorf("mean %g, std %g; want 1, 0.02", mean, std)
			}
			continue
		}
		for i, x := range got {
			if w := math.Float32frombits(uint32(f32ToBF16(f32[i])) << 16); x != w {
				t.Fatalf("bf16 value %d is %g, want %g (the f32 %g rounded)", i, x, w, f32[i])
			}
		}
	}
}

// TestCUDARMSNorm: strided rows normalized as rmsNorm does, for widths
// that take the scalar path (37, and 4100: wider than the register path's
// 4·RMS_VEC floats per thread) and the vector one (64, 2048).
func TestCUDARMSNorm(t *testing.T) {
	for _, tc := range []struct {
		engine string
		h      int
	}{{"f32", 37}, {"bf16", 37}, {"f32", 64}, {"bf16", 2048}, {"f32", 2048}, {"bf16", 4100}} {
		const rows, first, stride = 11, 1, 3
		engine, h := tc.engine, tc.h
		kt := newKernelTest(t, engine, 8, 3, h, 8)
		x, w := kt.randn(rows*h), kt.randn(h)
		out := kt.zeros(rows * h)
		n := (rows - first + stride - 1) / stride
		kt.launch(kt.k.rmsnorm, cuda.Dim3{X: n}, 256, 0, kt.f32(x), first, stride, h, kt.f32(w), float32(1e-5), out)
		var want []float32
		for r := first; r < rows; r += stride {
			y := make([]float32, h)
			rmsNorm(y, x[r*h:(r+1)*h], w, 1e-5)
			want = append(want, y...)
		}
		tol := 1e-5
		if engine == "bf16" {
			tol = 1.0 / 256
		}
		near(t, fmt.Sprintf("%s rmsnorm of width %d", engine, h), kt.getElem(out, n*h), want, tol)
	}
}

// TestCUDAQKNormRope: queries and keys normalized and rotated as forward.go
// does, in head-major order and at their cache positions; values copied.
func TestCUDAQKNormRope(t *testing.T) {
	for _, hd := range []int{8, 64} {
		const b, s, nh, nkv, b0, pos0, maxSeq, maxBatch = 2, 3, 4, 2, 1, 2, 8, 3
		c := &Config{HeadDim: hd, RopeTheta: 1e4, NormEps: 1e-5}
		kt := newKernelTest(t, "f32", hd, 3, 8, 8)
		width := (nh + 2*nkv) * hd
		qkv, qn, kn := kt.randn(b*s*width), kt.randn(hd), kt.randn(hd)
		q, kc, vc := kt.zeros(b*nh*s*hd), kt.zeros(maxBatch*nkv*maxSeq*hd), kt.zeros(maxBatch*nkv*maxSeq*hd)
		kt.launch(kt.k.qkNormRope, cuda.Dim3{X: b * s}, 256, 0, kt.f32(qkv), s, nh, nkv, b0, pos0, maxSeq,
			kt.f32(qn), kt.f32(kn), float32(c.NormEps), kt.f32(ropeTable(c, maxSeq)), q, kc, vc)
		gq, gk, gv := get[float32](kt, q, b*nh*s*hd), get[float32](kt, kc, maxBatch*nkv*maxSeq*hd), get[float32](kt, vc, maxBatch*nkv*maxSeq*hd)
		for bi := range b {
			for si := range s {
				row := qkv[(bi*s+si)*width:]
				for h := range nh + 2*nkv {
					head := slices.Clone(row[h*hd : (h+1)*hd])
					var got []float32
					switch {
					case h < nh:
						rmsNorm(head, head, qn, c.NormEps)
						rope(head, pos0+si, c.RopeTheta)
						got = gq[((bi*nh+h)*s+si)*hd:][:hd]
					case h < nh+nkv:
						rmsNorm(head, head, kn, c.NormEps)
						rope(head, pos0+si, c.RopeTheta)
						got = gk[(((b0+bi)*nkv+h-nh)*maxSeq+pos0+si)*hd:][:hd]
					default:
						got = gv[(((b0+bi)*nkv+h-nh-nkv)*maxSeq+pos0+si)*hd:][:hd]
					}
					near(t, "q/k/v head", got, head, 1e-5)
				}
			}
		}
	}
}

// TestCUDAAttention: causal GQA attention against a direct softmax, for
// numbers of keys that are and are not multiples of the kernel's 4.
func TestCUDAAttention(t *testing.T) {
	for _, tc := range []struct{ hd, nh, nkv, pos0 int }{{8, 4, 2, 5}, {64, 4, 1, 0}, {64, 6, 3, 2}} {
		const b, s, b0, maxSeq, maxBatch = 2, 3, 1, 9, 3
		kt := newKernelTest(t, "f32", tc.hd, 3, 8, 8)
		hd, nh, nkv := tc.hd, tc.nh, tc.nkv
		q, kc, vc := kt.randn(b*nh*s*hd), kt.randn(maxBatch*nkv*maxSeq*hd), kt.randn(maxBatch*nkv*maxSeq*hd)
		out := kt.zeros(b * s * nh * hd)
		scale := float32(1 / math.Sqrt(float64(hd)))
		kt.launch(kt.k.attention, cuda.Dim3{X: (b*s*nh + 3) / 4}, 128, 0, kt.f32(q), b, s, nh, nkv, b0, tc.pos0, maxSeq,
			kt.f32(kc), kt.f32(vc), scale, out)
		got := get[float32](kt, out, b*s*nh*hd)
		for bi := range b {
			for si := range s {
				for h := range nh {
					qh := q[((bi*nh+h)*s+si)*hd:][:hd]
					base := ((b0+bi)*nkv + h/(nh/nkv)) * maxSeq * hd
					n := tc.pos0 + si + 1
					scores, m := make([]float64, n), math.Inf(-1)
					for j := range n {
						scores[j] = float64(dot(qh, kc[base+j*hd:][:hd]) * scale)
						m = max(m, scores[j])
					}
					var sum float64
					for j := range scores {
						scores[j] = math.Exp(scores[j] - m)
						sum += scores[j]
					}
					want := make([]float32, hd)
					for d := range want {
						var o float64
						for j, p := range scores {
							o += p / sum * float64(vc[base+j*hd+d])
						}
						want[d] = float32(o)
					}
					near(t, "attention", got[((bi*s+si)*nh+h)*hd:][:hd], want, 1e-5)
				}
			}
		}
	}
}

// TestCUDAShortConv: B⊙x through the causal conv with the state as history,
// gated by C; the new state is the last convL-1 inputs.
func TestCUDAShortConv(t *testing.T) {
	const b, s, h, b0, L, maxBatch = 2, 4, 37, 1, 3, 3
	kt := newKernelTest(t, "f32", 8, L, h, 8)
	bcx, w, state := kt.randn(b*s*3*h), kt.randn(h*L), kt.randn(maxBatch*(L-1)*h)
	stateBuf, out := kt.f32(state), kt.zeros(b*s*h)
	kt.launch(kt.k.shortConv, cuda.Dim3{X: (h + 127) / 128, Y: b}, 128, 0, kt.f32(bcx), s, h, b0, kt.f32(w), stateBuf, out)
	got, gotState := get[float32](kt, out, b*s*h), get[float32](kt, stateBuf, maxBatch*(L-1)*h)
	for bi := range b {
		var seq [][]float32
		for j := range L - 1 {
			seq = append(seq, state[((b0+bi)*(L-1)+j)*h:][:h])
		}
		for si := range s {
			r := bcx[(bi*s+si)*3*h:]
			bx := make([]float32, h)
			for i := range bx {
				bx[i] = r[i] * r[2*h+i]
			}
			seq = append(seq, bx)
		}
		conv := causalConv(seq, w, L)
		for si := range s {
			for i := range conv[si] {
				conv[si][i] *= bcx[(bi*s+si)*3*h+h+i]
			}
			near(t, "short conv", got[(bi*s+si)*h:][:h], conv[si], 1e-5)
		}
		for j := range L - 1 {
			near(t, "conv state", gotState[((b0+bi)*(L-1)+j)*h:][:h], seq[len(seq)-(L-1)+j], 0)
		}
	}
	// The other sequence's state is untouched.
	near(t, "sequence 0's state", gotState[:(L-1)*h], state[:(L-1)*h], 0)
}

// moeCase is a small mixture of experts and its CPU weights.
type moeCase struct {
	c  *Config
	lw *LayerWeights
}

func newMoECase(kt *kernelTest, h, im, e, k int, bias bool) moeCase {
	c := &Config{Hidden: h, Experts: e, ExpertsPerToken: k, MoEIntermediate: im, NormTopK: true, RoutedScaling: 1}
	lw := &LayerWeights{}
	if bias {
		lw.Bias = kt.randn(e)
		for i := range lw.Bias {
			lw.Bias[i] *= 0.1
		}
	}
	scale := func(v []float32, s float64) []float32 {
		for i := range v {
			v[i] *= float32(s)
		}
		return v
	}
	lw.Gate = scale(kt.randn(e*h), 1/math.Sqrt(float64(h))) // logits of order 1: sigmoids that do not saturate
	for range e {
		lw.Experts = append(lw.Experts, SwiGLU{W1: scale(kt.randn(im*h), 1/math.Sqrt(float64(h))),
			W3: scale(kt.randn(im*h), 1/math.Sqrt(float64(h))), W2: scale(kt.randn(h*im), 1/math.Sqrt(float64(im))), Inter: im})
	}
	return moeCase{c, lw}
}

// TestCUDARoute: the chosen experts are the CPU's, in order, with its
// weights, and each choice is counted: for inputs that take the scalar and
// the vector gate loads, one token (decode) and several blocks, more
// experts than lanes, and two experts whose scores tie exactly (the lower
// index must win, across lanes and within one).
func TestCUDARoute(t *testing.T) {
	for _, tc := range []struct {
		tokens, h, e, k int
		norm            bool
		tie             [2]int // experts made identical, and likely to be chosen
	}{
		{9, 37, 5, 2, true, [2]int{1, 3}}, {9, 37, 5, 2, false, [2]int{1, 3}}, {1, 64, 32, 4, true, [2]int{7, 30}},
		{6, 2048, 32, 4, true, [2]int{0, 31}}, {5, 48, 40, 4, true, [2]int{2, 34}}, {13, 40, 70, 3, false, [2]int{5, 69}},
	} {
		tokens, h, e, k := tc.tokens, tc.h, tc.e, tc.k
		kt := newKernelTest(t, "f32", 8, 3, h, 8)
		mc := newMoECase(kt, h, 8, e, k, true)
		mc.c.NormTopK, mc.c.RoutedScaling = tc.norm, 1.5
		a, b := tc.tie[0], tc.tie[1]
		copy(mc.lw.Gate[b*h:(b+1)*h], mc.lw.Gate[a*h:(a+1)*h])
		mc.lw.Bias[a], mc.lw.Bias[b] = 2, 2
		x := kt.randn(tokens * h)
		idx, wts, meta := kt.zeros(tokens*k), kt.zeros(tokens*k), kt.zeros(4*e+2)
		xb, _ := kt.elem(x)
		normFlag := 0
		if tc.norm {
			normFlag = 1
		}
		kt.launch(kt.k.route, cuda.Dim3{X: (tokens + routeTokens - 1) / routeTokens}, routeThreads, routeSmem(h, e), xb, tokens, h,
			kt.f32(mc.lw.Gate), kt.f32(mc.lw.Bias), e, k, normFlag, float32(1.5), idx, wts, meta)
		gotIdx, gotW, counts := get[int32](kt, idx, tokens*k), get[float32](kt, wts, tokens*k), get[int32](kt, meta, e)
		wantCounts := make([]int32, e)
		rows := make([][]float32, tokens)
		for i := range rows {
			rows[i] = x[i*h : (i+1)*h]
		}
		logits := linear(rows, mc.lw.Gate, e)
		for i := range tokens {
			wi, ww := route(mc.c, logits[i], mc.lw.Bias)
			if wi[0] != a || wi[1] != b {
				t.Fatalf("%+v: token %d: the CPU chose %v, want the tied experts first", tc, i, wi)
			}
			for j := range k {
				if int(gotIdx[i*k+j]) != wi[j] {
					t.Fatalf("%+v: token %d: experts %v, want %v", tc, i, gotIdx[i*k:(i+1)*k], wi)
				}
				wantCounts[wi[j]]++
			}
			near(t, "router weights", gotW[i*k:(i+1)*k], ww, 1e-5)
		}
		if !slices.Equal(counts, wantCounts) {
			t.Errorf("%+v: counts %v, want %v", tc, counts, wantCounts)
		}
	}
}

// TestCUDAMoE: route, group, the persistent kernel and the combine give
// x + moe(x) of the CPU, with vectorized and scalar weight loads, in both
// engines, and the expert-load histogram counts the choices: for one token
// (decode), experts with several tiles of moeTile rows (40 tokens over 3
// experts), a hidden size that is no multiple of the down kernel's two rows
// (37), and more experts than a warp has lanes (the scan's second group).
// moeSizes is one MoE test: tokens routed top-k among e experts of width im.
type moeSizes struct {
	engine              string
	tokens, h, im, e, k int
}

// TestCUDAMoE checks the router, grouping, step 08's persistent experts and
// the combine against the CPU's moe.
func TestCUDAMoE(t *testing.T) {
	for _, tc := range []moeSizes{
		{"f32", 13, 48, 20, 5, 2}, {"f32", 13, 37, 13, 4, 3}, {"bf16", 13, 48, 24, 5, 2}, {"bf16", 13, 48, 20, 6, 1},
		{"bf16", 1, 64, 40, 8, 4}, {"f32", 1, 37, 13, 4, 2}, {"f32", 40, 64, 32, 3, 2}, {"bf16", 40, 48, 24, 3, 2},
		{"bf16", 13, 64, 40, 40, 4}, {"f32", 5, 48, 20, 70, 3},
	} {
		checkMoE(t, tc, MoEPersistent)
	}
}

// TestCUDAMoEWgmma checks step 12's grouped wgmma experts the same way, at
// sizes that leave partial tiles everywhere: experts of 1 to 3 row tiles, K
// not a multiple of 64, outputs not a multiple of 128 or 256, more than 32
// experts (some empty).
func TestCUDAMoEWgmma(t *testing.T) {
	for _, tc := range []moeSizes{
		{"bf16", 300, 72, 40, 3, 2}, {"bf16", 200, 128, 136, 8, 4}, {"bf16", 40, 64, 24, 40, 4}, {"bf16", 700, 264, 264, 4, 1},
	} {
		checkMoE(t, tc, MoEWgmma)
	}
}

// checkMoE runs one case through route, group, the experts by path
// (persistent or wgmma) and combine, and compares with the CPU.
func checkMoE(t *testing.T, tc moeSizes, path string) {
	kt := newKernelTest(t, tc.engine, 8, 3, tc.h, tc.im)
	if path == MoEWgmma && kt.k.moeGateUpWgmma == nil {
		t.Skipf("step 12 needs compute capability 9.0 (sm_90a); %s is %s", kt.ctx.ID(), kt.ctx.Properties().ComputeCapability)
	}
	tokens, h, im, e, k := tc.tokens, tc.h, tc.im, tc.e, tc.k
	mc := newMoECase(kt, h, im, e, k, true)
	x := kt.randn(tokens * h)
	// The engine sees its element type: round the CPU's inputs alike.
	xnBuf, xn := kt.elem(x)
	var w13, w2 []float32
	for i := range mc.lw.Experts {
		ex := &mc.lw.Experts[i]
		w13 = append(append(w13, ex.W1...), ex.W3...)
		w2 = append(w2, ex.W2...)
	}
	w13Buf, w13Seen := kt.elem(w13)
	w2Buf, w2Seen := kt.elem(w2)
	for i := range mc.lw.Experts {
		ex := &mc.lw.Experts[i]
		ex.W1, ex.W3 = w13Seen[i*2*im*h:][:im*h], w13Seen[(i*2+1)*im*h:][:im*h]
		ex.W2 = w2Seen[i*h*im:][:h*im]
	}
	pairs := tokens * k
	topIdx, topW, slotRow, perm := kt.zeros(pairs), kt.zeros(pairs), kt.zeros(pairs), kt.zeros(pairs)
	meta, load, gath := kt.zeros(4*e+2), kt.zeros(e), kt.zeros(pairs*h)
	act, y, xBuf := kt.zeros(pairs*im), kt.zeros(pairs*h), kt.f32(x)
	kt.launch(kt.k.route, cuda.Dim3{X: (tokens + routeTokens - 1) / routeTokens}, routeThreads, routeSmem(h, e), xnBuf, tokens, h,
		kt.f32(mc.lw.Gate), kt.f32(mc.lw.Bias), e, k, 1, float32(1), topIdx, topW, meta)
	kt.launch(kt.k.moeOffsets, cuda.Dim3{X: 1}, 32, 0, e, moeTile, meta, load)
	if path == MoEWgmma {
		kt.launch(kt.k.moeScatter, cuda.Dim3{X: pairs}, 32, 0, xnBuf, h, k, topIdx, meta, e, perm, slotRow, 1, gath)
		maps := make([]*cuda.TensorMap, 4)
		for i, m := range []struct {
			b          *cuda.Buffer
			rows, cols int
		}{{gath, pairs, h}, {w13Buf, e * 2 * im, h}, {act, pairs, im}, {w2Buf, e * h, im}} {
			var err error
			if maps[i], err = wgmmaMap(m.b, int64(m.rows), int64(m.cols)); err != nil {
				t.Fatal(err)
			}
		}
		kt.launch(kt.k.moeGateUpWgmma, wgmmaGrid(2*im, pairs, e), wgmmaThreads, wgmmaSmem, h, im, meta, e, maps[0], maps[1], act)
		kt.launch(kt.k.moeDownWgmma, wgmmaGrid(h, pairs, e), wgmmaThreads, wgmmaSmem, h, im, meta, e, maps[2], maps[3], y)
	} else {
		kt.launch(kt.k.moeScatter, cuda.Dim3{X: pairs}, 32, 0, xnBuf, h, k, topIdx, meta, e, perm, slotRow, 0, gath)
		kt.launch(kt.k.moeGateUp, cuda.Dim3{X: kt.k.gateUpBlocks}, persistentThreads, 0, xnBuf, h, im, w13Buf, perm, meta, e, act)
		kt.launch(kt.k.moeDown, cuda.Dim3{X: kt.k.downBlocks}, persistentThreads, 0, act, h, im, w2Buf, meta, e, y)
	}
	kt.launch(kt.k.moeCombine, cuda.Dim3{X: tokens}, 256, 0, y, h, k, slotRow, topW, xBuf)
	got := get[float32](kt, xBuf, tokens*h)
	rows := make([][]float32, tokens)
	for i := range rows {
		rows[i] = xn[i*h : (i+1)*h]
	}
	cpuLoad := make([]int, e)
	ff := moe(mc.c, mc.lw, rows, cpuLoad)
	want := slices.Clone(x)
	for i := range tokens {
		for d := range h {
			want[i*h+d] += ff[i][d]
		}
	}
	tol := 1e-5
	if tc.engine == "bf16" {
		tol = 1e-2 // the act between the two GEMMs is rounded to bf16
	}
	near(t, fmt.Sprintf("%+v %s: moe", tc, path), got, want, tol)
	gotLoad := get[int32](kt, load, e)
	for i := range cpuLoad {
		if int(gotLoad[i]) != cpuLoad[i] {
			t.Errorf("%+v: expert load %v, want %v", tc, gotLoad, cpuLoad)
			break
		}
	}
	// The scan zeroed the counts for the next layer: scanning again gives
	// empty experts.
	kt.launch(kt.k.moeOffsets, cuda.Dim3{X: 1}, 32, 0, e, moeTile, meta, load)
	if offs := get[int32](kt, meta, 2*e+1)[e:]; slices.ContainsFunc(offs, func(v int32) bool { return v != 0 }) {
		t.Errorf("%+v: counts not zeroed for the next layer: offsets %v", tc, offs)
	}
}

func TestCUDASwiGLU(t *testing.T) {
	const rows, inter = 7, 13
	kt := newKernelTest(t, "f32", 8, 3, 8, 8)
	hv, act := kt.randn(rows*2*inter), kt.zeros(rows*inter)
	kt.launch(kt.k.swiglu, cuda.Dim3{X: 2}, 256, 0, kt.f32(hv), rows, inter, act)
	want := make([]float32, rows*inter)
	for r := range rows {
		for i := range inter {
			a, u := hv[r*2*inter+i], hv[r*2*inter+inter+i]
			want[r*inter+i] = a / (1 + float32(math.Exp(-float64(a)))) * u
		}
	}
	near(t, "swiglu", get[float32](kt, act, rows*inter), want, 1e-6)
}

// TestCUDAGemv: step 11's kernel computes out (+)= in·Wᵀ like a float64 dot
// of the values the GPU sees, for one row (gemv_1) and up to gemvMaxRows
// (gemv_8); widths that take the vector loop with and without its tail and
// lanes that run out early (200, 1280, 2056 bf16), the scalar path (37, and
// rows that start off a 16-byte boundary), an odd number of outputs (the
// last warp's second row is read but not written), views at offsets, and
// accumulation into the residual stream. Bad views are errors.
func TestCUDAGemv(t *testing.T) {
	for _, tc := range []struct {
		engine                          string
		rows, n, k, inOff, wOff, outOff int
		accumulate                      bool
	}{
		{"f32", 1, 7, 64, 0, 0, 0, false}, {"bf16", 1, 7, 64, 0, 0, 0, true}, {"bf16", 1, 257, 2048, 2048, 0, 3, true},
		{"f32", 1, 33, 2048, 0, 0, 0, false}, {"bf16", 1, 64, 1280, 0, 1280, 0, false}, {"bf16", 1, 9, 200, 0, 0, 0, true},
		{"f32", 3, 33, 37, 0, 0, 0, false}, {"bf16", 3, 33, 37, 37, 74, 5, true}, {"bf16", 2, 9, 64, 3, 0, 0, false},
		{"f32", 8, 64, 1288, 0, 0, 0, true}, {"bf16", 8, 65, 2056, 0, 0, 0, false}, {"bf16", 5, 130, 512, 512, 512, 130, true},
	} {
		kt := newKernelTest(t, tc.engine, 8, 3, 8, 8)
		rows, n, k := tc.rows, tc.n, tc.k
		in, w := kt.randn(tc.inOff+rows*k), kt.randn(tc.wOff+n*k)
		for i := range w {
			w[i] /= float32(math.Sqrt(float64(k)))
		}
		init := kt.randn(tc.outOff + rows*n)
		inBuf, inSeen := kt.elem(in)
		wBuf, wSeen := kt.elem(w)
		out := kt.f32(init)
		es := 4
		if tc.engine == "bf16" {
			es = 2
		}
		if err := kt.k.gemv(nil, es, rows, n, k, inBuf, tc.inOff, wBuf, tc.wOff, out, tc.outOff, tc.accumulate); err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		got := get[float32](kt, out, tc.outOff+rows*n)
		want := slices.Clone(init)
		for r := range rows {
			for j := range n {
				var d float64
				for i := range k {
					d += float64(inSeen[tc.inOff+r*k+i]) * float64(wSeen[tc.wOff+j*k+i])
				}
				if tc.accumulate {
					d += float64(init[tc.outOff+r*n+j])
				}
				want[tc.outOff+r*n+j] = float32(d)
			}
		}
		near(t, fmt.Sprintf("%+v: gemv", tc), got, want, 1e-5)
	}
	kt := newKernelTest(t, "f32", 8, 3, 8, 8)
	in, w, out := kt.zeros(5*16), kt.zeros(16*16), kt.zeros(3*16)
	for _, tc := range []struct {
		rows, n, k, inOff int
		want              string
	}{
		{0, 16, 16, 0, "want 1 to 8 rows"}, {9, 16, 16, 0, "want 1 to 8 rows"}, {1, 16, 0, 0, "positive sizes"},
		{5, 16, 16, 1, "input: 80 values at element 1 overrun a buffer of 320 bytes"},
		{1, 17, 16, 0, "weight: 272 values at element 0 overrun"}, {4, 16, 16, 0, "output: 64 values at element 0 overrun"},
	} {
		err := kt.k.gemv(nil, 4, tc.rows, tc.n, tc.k, in, tc.inOff, w, 0, out, 0, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("gemv %+v: %v, want an error with %q", tc, err, tc.want)
		}
	}
}

// TestCUDAArgmax: the first of equal maxima wins, as in Argmax.
func TestCUDAArgmax(t *testing.T) {
	const v = 3001
	kt := newKernelTest(t, "f32", 8, 3, 8, 8)
	logits := kt.randn(4 * v)
	logits[v+2000], logits[v+17] = 100, 100 // row 1: a tie, the lower index wins
	logits[2*v+v-1] = 50                    // row 2: the last
	for i := range v {                      // row 3: all equal
		logits[3*v+i] = -1
	}
	out := kt.zeros(4)
	kt.launch(kt.k.argmax, cuda.Dim3{X: 4}, 1024, 0, kt.f32(logits), v, out)
	got := get[int32](kt, out, 4)
	for r := range 4 {
		if want := Argmax(logits[r*v : (r+1)*v]); int(got[r]) != want {
			t.Errorf("row %d: argmax %d, want %d", r, got[r], want)
		}
	}
}
