package opencl_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"gpulab/engine/opencl"
)

// newContext returns a Context on the first OpenCL device found, released
// when the test ends. It skips the test where OpenCL is not available.
func newContext(t *testing.T) *opencl.Context {
	t.Helper()
	platforms, err := opencl.Platforms()
	if err != nil {
		t.Skipf("no OpenCL platform: %v", err)
	}
	for _, p := range platforms {
		devices, err := p.Devices()
		if err != nil {
			t.Fatalf("devices of %q: %v", p.Name(), err)
		}
		if len(devices) == 0 {
			continue
		}
		c, err := opencl.NewContext(devices[0])
		if err != nil {
			t.Fatalf("NewContext: %v", err)
		}
		t.Cleanup(c.Release)
		return c
	}
	t.Skipf("no OpenCL platform: %d platforms, none with a device", len(platforms))
	return nil
}

const vaddSource = `
__kernel void vadd(__global const TYPE *a, __global const TYPE *b, __global TYPE *c, const int n) {
	int i = get_global_id(0);
	if (i < n) {
		c[i] = a[i] + b[i];
	}
}
`

// sumSource reduces each work-group's slice of x into one partial sum,
// using a __local scratch buffer.
const sumSource = `
__kernel void groupsum(__global const float *x, __global float *sums, __local float *scratch, const uint n) {
	uint gid = get_global_id(0);
	uint lid = get_local_id(0);
	scratch[lid] = gid < n ? x[gid] : 0.0f;
	barrier(CLK_LOCAL_MEM_FENCE);
	for (uint s = get_local_size(0) / 2; s > 0; s /= 2) {
		if (lid < s) {
			scratch[lid] += scratch[lid + s];
		}
		barrier(CLK_LOCAL_MEM_FENCE);
	}
	if (lid == 0) {
		sums[get_group_id(0)] = scratch[0];
	}
}
`

func TestPlatformsAndDevices(t *testing.T) {
	if err := opencl.Load(); err != nil {
		t.Skipf("no OpenCL platform: %v", err)
	}
	platforms, err := opencl.Platforms()
	if err != nil {
		t.Fatalf("Platforms: %v", err)
	}
	if len(platforms) == 0 {
		t.Skip("no OpenCL platform: the ICD loader found no driver")
	}
	types := map[string]bool{"CPU": true, "GPU": true, "ACCELERATOR": true, "CUSTOM": true, "DEFAULT": true}
	for _, p := range platforms {
		t.Logf("platform %q vendor %q version %q", p.Name(), p.Vendor(), p.Version())
		if p.Name() == "" || !strings.HasPrefix(p.Version(), "OpenCL ") {
			t.Errorf("platform name %q version %q: want a name and an \"OpenCL \" version", p.Name(), p.Version())
		}
		devices, err := p.Devices()
		if err != nil {
			t.Fatalf("Devices: %v", err)
		}
		for _, d := range devices {
			info, err := d.Info()
			if err != nil {
				t.Fatalf("Info: %v", err)
			}
			t.Logf("device %+v", info)
			if d.Platform() != p {
				t.Errorf("device %q: Platform() is not the platform it was listed by", info.Name)
			}
			for _, check := range []struct {
				field string
				ok    bool
			}{
				{"Name", info.Name != ""},
				{"Version", strings.HasPrefix(info.Version, "OpenCL ")},
				{"OpenCLCVersion", strings.HasPrefix(info.OpenCLCVersion, "OpenCL C ")},
				{"Type", types[info.Type]},
				{"ComputeUnits", info.ComputeUnits > 0},
				{"MaxClockMHz", info.MaxClockMHz >= 0},
				{"GlobalMemBytes", info.GlobalMemBytes > 0},
				{"LocalMemBytes", info.LocalMemBytes > 0},
				{"MaxAllocBytes", info.MaxAllocBytes > 0 && info.MaxAllocBytes <= info.GlobalMemBytes},
				{"MaxWorkGroupSize", info.MaxWorkGroupSize > 0},
				{"MaxWorkItemSizes", len(info.MaxWorkItemSizes) >= 3 && info.MaxWorkItemSizes[0] > 0},
				{"PreferredVectorWidthFloat", info.PreferredVectorWidthFloat > 0},
				{"NativeVectorWidthFloat", info.NativeVectorWidthFloat > 0},
				{"GlobalMemCachelineBytes", info.GlobalMemCachelineBytes >= 0},
			} {
				if !check.ok {
					t.Errorf("device %q: implausible %s in %+v", info.Name, check.field, info)
				}
			}
		}
	}
}

func TestVectorAdd(t *testing.T) {
	c := newContext(t)
	prog, err := c.Build(vaddSource, "-DTYPE=float -cl-fast-relaxed-math")
	if err != nil {
		t.Fatal(err)
	}
	k, err := prog.Kernel("vadd")
	if err != nil {
		t.Fatal(err)
	}
	if k.Name() != "vadd" || k.NumArgs() != 4 {
		t.Fatalf("kernel %q with %d arguments, want vadd with 4", k.Name(), k.NumArgs())
	}
	maxSize, multiple, localMem, privateMem, err := k.WorkGroupInfo()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("vadd: max work-group %d, preferred multiple %d, local %d B, private %d B", maxSize, multiple, localMem, privateMem)
	if maxSize <= 0 || multiple <= 0 {
		t.Errorf("WorkGroupInfo: max work-group size %d, preferred multiple %d: want both positive", maxSize, multiple)
	}

	const local = 64
	for _, n := range []int{1, 1000, 1<<20 + 3} {
		a := make([]float32, n)
		b := make([]float32, n)
		for i := range a {
			a[i] = float32(i) * 0.5
			b[i] = 1 / float32(i+1)
		}
		bufs := make([]*opencl.Buffer, 3)
		for i := range bufs {
			bufs[i], err = c.Alloc(4 * n)
			if err != nil {
				t.Fatal(err)
			}
			defer bufs[i].Release()
		}
		if err := opencl.WriteSlice(c, bufs[0], a); err != nil {
			t.Fatal(err)
		}
		if err := opencl.WriteSlice(c, bufs[1], b); err != nil {
			t.Fatal(err)
		}
		global := (n + local - 1) / local * local
		ev, err := c.Launch(k, []int{global}, []int{local}, bufs[0], bufs[1], bufs[2], int32(n))
		if err != nil {
			t.Fatal(err)
		}
		d, err := ev.Duration()
		if err != nil {
			t.Fatal(err)
		}
		ev.Release()
		if d <= 0 {
			t.Errorf("n=%d: event duration %v, want > 0", n, d)
		}
		got := make([]float32, n)
		if err := opencl.ReadSlice(c, bufs[2], got); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if want := a[i] + b[i]; got[i] != want {
				t.Fatalf("n=%d: c[%d] = %v, want %v", n, i, got[i], want)
			}
		}
		t.Logf("n=%d: global %d local %d: %v", n, global, local, d)
	}
}

func TestLocalArgument(t *testing.T) {
	c := newContext(t)
	prog, err := c.Build(sumSource, "")
	if err != nil {
		t.Fatal(err)
	}
	k, err := prog.Kernel("groupsum")
	if err != nil {
		t.Fatal(err)
	}
	const n, local = 1000, 128
	groups := (n + local - 1) / local
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i % 7)
	}
	xs := mustAlloc(t, c, 4*n)
	sums := mustAlloc(t, c, 4*groups)
	if err := opencl.WriteSlice(c, xs, x); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Launch(k, []int{groups * local}, []int{local}, xs, sums, opencl.Local(4*local), uint32(n)); err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, groups)
	if err := opencl.ReadSlice(c, sums, got); err != nil {
		t.Fatal(err)
	}
	for g := range got {
		var want float32
		for i := g * local; i < min(n, (g+1)*local); i++ {
			want += x[i] // small integers: exact in any order
		}
		if got[g] != want {
			t.Errorf("group %d: sum %v, want %v", g, got[g], want)
		}
	}
}

func TestBuildError(t *testing.T) {
	c := newContext(t)
	for _, test := range []struct {
		name, source, options string
		want                  []string
	}{
		{
			name:   "syntax error",
			source: "__kernel void broken(__global float *x) { x[0] = ; }",
			want:   []string{"opencl: build program: CL_BUILD_PROGRAM_FAILURE (-11)", "error"},
		},
		{
			name:   "undeclared identifier",
			source: "__kernel void broken(__global float *x) { x[0] = nosuchthing; }",
			want:   []string{"CL_BUILD_PROGRAM_FAILURE", "nosuchthing"},
		},
		{
			name:    "invalid option",
			source:  vaddSource,
			options: "-DTYPE=float -no-such-option",
			want:    []string{"opencl: build program: CL_INVALID_BUILD_OPTIONS (-43)"},
		},
		{
			name: "empty source",
			want: []string{"empty source"},
		},
	} {
		_, err := c.Build(test.source, test.options)
		if err == nil {
			t.Errorf("%s: Build succeeded, want an error", test.name)
			continue
		}
		for _, w := range test.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", test.name, err, w)
			}
		}
	}

	_, err := c.Build("__kernel void broken(void) { x }", "")
	var code opencl.Error
	if !errors.As(err, &code) || code != -11 {
		t.Errorf("errors.As(%v): code %d, want -11", err, code)
	}
	t.Logf("a build error reads:\n%v", err)
}

func TestLaunchErrors(t *testing.T) {
	c := newContext(t)
	prog, err := c.Build(vaddSource, "-DTYPE=float")
	if err != nil {
		t.Fatal(err)
	}
	k, err := prog.Kernel("vadd")
	if err != nil {
		t.Fatal(err)
	}
	buf := mustAlloc(t, c, 4*64)
	released, err := c.Alloc(4)
	if err != nil {
		t.Fatal(err)
	}
	released.Release()
	released.Release() // idempotent

	for _, test := range []struct {
		name          string
		global, local []int
		args          []any
		want          string
	}{
		{"too few arguments", []int{64}, nil, []any{buf, buf, buf}, "vadd: got 3 arguments, kernel takes 4"},
		{"too many arguments", []int{64}, nil, []any{buf, buf, buf, int32(64), int32(1)}, "vadd: got 5 arguments, kernel takes 4"},
		{"string argument", []int{64}, nil, []any{buf, buf, buf, "64"}, "vadd: argument 3: unsupported type string"},
		{"slice argument", []int{64}, nil, []any{[]float32{1}, buf, buf, int32(64)}, "vadd: argument 0: unsupported type []float32"},
		{"Go int argument", []int{64}, nil, []any{buf, buf, buf, 64}, "vadd: argument 3: unsupported type int: use int32"},
		{"nil argument", []int{64}, nil, []any{buf, nil, buf, int32(64)}, "vadd: argument 1: unsupported type <nil>"},
		{"nil buffer", []int{64}, nil, []any{buf, (*opencl.Buffer)(nil), buf, int32(64)}, "vadd: argument 1: nil *Buffer"},
		{"released buffer", []int{64}, nil, []any{buf, buf, released, int32(64)}, "vadd: argument 2: buffer released"},
		{"wrong scalar size", []int{64}, nil, []any{buf, buf, buf, int64(64)}, "vadd: argument 3: CL_INVALID_ARG_SIZE (-51)"},
		{"no dimensions", []int{}, nil, []any{buf, buf, buf, int32(64)}, "vadd: global [] has 0 dimensions"},
		{"four dimensions", []int{1, 1, 1, 1}, nil, []any{buf, buf, buf, int32(64)}, "vadd: global [1 1 1 1] has 4 dimensions"},
		{"local dimensions", []int{64}, []int{8, 8}, []any{buf, buf, buf, int32(64)}, "vadd: local [8 8] has 2 dimensions"},
		{"zero global", []int{0}, nil, []any{buf, buf, buf, int32(64)}, "vadd: global [0]: sizes must be positive"},
		{"negative local", []int{64}, []int{-8}, []any{buf, buf, buf, int32(64)}, "vadd: local [-8]: sizes must be positive"},
		{"local too large", []int{1 << 20}, []int{1 << 20}, []any{buf, buf, buf, int32(64)}, "launch vadd global [1048576] local [1048576]: CL_INVALID"},
	} {
		_, err := c.Launch(k, test.global, test.local, test.args...)
		if err == nil {
			t.Errorf("%s: Launch succeeded, want an error", test.name)
			continue
		}
		if !strings.Contains(err.Error(), test.want) {
			t.Errorf("%s: error %q does not contain %q", test.name, err, test.want)
		}
	}

	if _, err := c.Launch(nil, []int{1}, nil); err == nil {
		t.Error("Launch(nil kernel) succeeded, want an error")
	}

	_, err = prog.Kernel("nosuchkernel")
	if err == nil || !strings.Contains(err.Error(), `"nosuchkernel"`) {
		t.Errorf("unknown kernel: error %v, want one naming \"nosuchkernel\"", err)
	}
}

func TestAllocErrors(t *testing.T) {
	c := newContext(t)
	info, err := c.Device().Info()
	if err != nil {
		t.Fatal(err)
	}
	tooBig := int(min(info.MaxAllocBytes+1, math.MaxInt))
	for _, test := range []struct {
		bytes int
		want  string
	}{
		{0, "alloc 0 bytes: size must be positive"},
		{-1, "alloc -1 bytes: size must be positive"},
		{tooBig, fmt.Sprintf("alloc %d bytes: more than the device's max allocation of %d bytes", tooBig, info.MaxAllocBytes)},
	} {
		b, err := c.Alloc(test.bytes)
		if err == nil {
			b.Release()
			t.Errorf("Alloc(%d) succeeded, want an error", test.bytes)
			continue
		}
		if !strings.Contains(err.Error(), test.want) {
			t.Errorf("Alloc(%d): error %q does not contain %q", test.bytes, err, test.want)
		}
	}
}

func TestReadWriteBounds(t *testing.T) {
	c := newContext(t)
	b := mustAlloc(t, c, 16)
	if b.Size() != 16 {
		t.Fatalf("Size() = %d, want 16", b.Size())
	}
	for _, test := range []struct {
		offset, n int
		want      string // "" for success
	}{
		{0, 16, ""},
		{8, 8, ""},
		{16, 0, ""},
		{8, 9, "offset 8 + len 9 is outside buffer size 16"},
		{0, 17, "offset 0 + len 17 is outside buffer size 16"},
		{-1, 4, "offset -1 + len 4 is outside buffer size 16"},
		{17, 0, "offset 17 + len 0 is outside buffer size 16"},
		{math.MaxInt, 2, fmt.Sprintf("offset %d + len 2 is outside buffer size 16", math.MaxInt)},
	} {
		data := make([]byte, test.n)
		for op, err := range map[string]error{
			"write": c.Write(b, test.offset, data),
			"read":  c.Read(b, test.offset, data),
		} {
			switch {
			case test.want == "" && err != nil:
				t.Errorf("%s offset %d len %d: %v", op, test.offset, test.n, err)
			case test.want != "" && err == nil:
				t.Errorf("%s offset %d len %d succeeded, want an error", op, test.offset, test.n)
			case test.want != "" && !strings.Contains(err.Error(), "opencl: "+op+": "+test.want):
				t.Errorf("%s: error %q does not contain %q", op, err, test.want)
			}
		}
	}

	want := []byte("0123456789abcdef")
	if err := c.Write(b, 0, want); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 6)
	if err := c.Read(b, 10, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != "abcdef" {
		t.Errorf("Read at offset 10 = %q, want %q", got, "abcdef")
	}
}

func TestSliceRoundTrip(t *testing.T) {
	c := newContext(t)
	b := mustAlloc(t, c, 64)
	for _, test := range []struct {
		name string
		run  func() (bool, error)
	}{
		{"float32", func() (bool, error) { return roundTrip(c, b, []float32{1.5, -2, float32(math.Pi), math.MaxFloat32}) }},
		{"float64", func() (bool, error) {
			return roundTrip(c, b, []float64{math.E, math.Copysign(0, -1), math.SmallestNonzeroFloat64})
		}},
		{"int32", func() (bool, error) { return roundTrip(c, b, []int32{math.MinInt32, -1, 0, math.MaxInt32}) }},
		{"uint32", func() (bool, error) { return roundTrip(c, b, []uint32{0, 1, math.MaxUint32}) }},
		{"int64", func() (bool, error) { return roundTrip(c, b, []int64{math.MinInt64, math.MaxInt64}) }},
		{"uint8", func() (bool, error) { return roundTrip(c, b, []uint8{0, 7, 255}) }},
		{"int16", func() (bool, error) { return roundTrip(c, b, []int16{-300, 300}) }},
	} {
		ok, err := test.run()
		if err != nil || !ok {
			t.Errorf("%s: round trip equal %t, error %v", test.name, ok, err)
		}
	}
	if err := opencl.WriteSlice(c, b, make([]float64, 9)); err == nil || !strings.Contains(err.Error(), "len 72 is outside buffer size 64") {
		t.Errorf("WriteSlice of 72 bytes into 64: error %v, want out of bounds", err)
	}
}

func roundTrip[T opencl.Number](c *opencl.Context, b *opencl.Buffer, want []T) (bool, error) {
	if err := opencl.WriteSlice(c, b, want); err != nil {
		return false, err
	}
	got := make([]T, len(want))
	if err := opencl.ReadSlice(c, b, got); err != nil {
		return false, err
	}
	for i := range got {
		if !sameBits(got[i], want[i]) {
			return false, nil
		}
	}
	return true, nil
}

// sameBits compares floats bit for bit, so that -0 and +0 differ (and a
// NaN equals itself); other numbers with ==.
func sameBits[T opencl.Number](a, b T) bool {
	switch x := any(a).(type) {
	case float32:
		return math.Float32bits(x) == math.Float32bits(any(b).(float32))
	case float64:
		return math.Float64bits(x) == math.Float64bits(any(b).(float64))
	}
	return a == b
}

func TestCopyBuffer(t *testing.T) {
	c := newContext(t)
	const n = 1000
	src := mustAlloc(t, c, 4*n)
	dst := mustAlloc(t, c, 4*n)
	want := make([]int32, n)
	for i := range want {
		want[i] = int32(i*i - 500)
	}
	if err := opencl.WriteSlice(c, src, want); err != nil {
		t.Fatal(err)
	}
	if err := opencl.WriteSlice(c, dst, make([]int32, n)); err != nil {
		t.Fatal(err)
	}
	ev, err := c.CopyBuffer(dst, src, 4*n)
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.Wait(); err != nil {
		t.Fatal(err)
	}
	ev.Release()
	ev.Release() // idempotent
	if err := ev.Wait(); err == nil {
		t.Error("Wait on a released event succeeded, want an error")
	}
	got := make([]int32, n)
	if err := opencl.ReadSlice(c, dst, got); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("dst[%d] = %d, want %d", i, got[i], want[i])
		}
	}

	small := mustAlloc(t, c, 8)
	for _, test := range []struct {
		name     string
		dst, src *opencl.Buffer
		bytes    int
		want     string
	}{
		{"zero bytes", dst, src, 0, "copy 0 bytes: size must be positive"},
		{"dst too small", small, src, 16, "copy to: offset 0 + len 16 is outside buffer size 8"},
		{"src too small", dst, small, 16, "copy from: offset 0 + len 16 is outside buffer size 8"},
		{"nil src", dst, nil, 4, "copy from: nil *Buffer"},
	} {
		if _, err := c.CopyBuffer(test.dst, test.src, test.bytes); err == nil || !strings.Contains(err.Error(), test.want) {
			t.Errorf("%s: error %v, want one containing %q", test.name, err, test.want)
		}
	}
}

func TestProgramCache(t *testing.T) {
	c := newContext(t)
	p1, err := c.Build(vaddSource, "-DTYPE=float")
	if err != nil {
		t.Fatal(err)
	}
	p2, err := c.Build(vaddSource, "-DTYPE=float")
	if err != nil {
		t.Fatal(err)
	}
	if p1 != p2 {
		t.Error("Build twice with the same source and options returned different programs")
	}
	p3, err := c.Build(vaddSource, "-DTYPE=int")
	if err != nil {
		t.Fatal(err)
	}
	if p3 == p1 {
		t.Error("Build with other options returned the cached program")
	}
	k1, err := p1.Kernel("vadd")
	if err != nil {
		t.Fatal(err)
	}
	k2, err := p1.Kernel("vadd")
	if err != nil {
		t.Fatal(err)
	}
	if k1 != k2 {
		t.Error("Kernel twice with the same name returned different kernels")
	}
}

func TestConcurrentUse(t *testing.T) {
	c := newContext(t)
	const goroutines, n = 4, 5000
	errs := make([]error, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() { errs[g] = addOnce(c, n, float32(g)) })
	}
	wg.Wait()
	for g, err := range errs {
		if err != nil {
			t.Errorf("goroutine %d: %v", g, err)
		}
	}
}

// addOnce builds (or finds cached) the vadd kernel, adds two vectors of
// length n on the device and checks the sum.
func addOnce(c *opencl.Context, n int, base float32) error {
	prog, err := c.Build(vaddSource, "-DTYPE=float")
	if err != nil {
		return err
	}
	k, err := prog.Kernel("vadd")
	if err != nil {
		return err
	}
	a := make([]float32, n)
	for i := range a {
		a[i] = base + float32(i)
	}
	bufs := make([]*opencl.Buffer, 3)
	for i := range bufs {
		if bufs[i], err = c.Alloc(4 * n); err != nil {
			return err
		}
		defer bufs[i].Release()
	}
	for _, b := range bufs[:2] {
		if err := opencl.WriteSlice(c, b, a); err != nil {
			return err
		}
	}
	ev, err := c.Launch(k, []int{n}, nil, bufs[0], bufs[1], bufs[2], int32(n))
	if err != nil {
		return err
	}
	defer ev.Release()
	if err := ev.Wait(); err != nil {
		return err
	}
	got := make([]float32, n)
	if err := opencl.ReadSlice(c, bufs[2], got); err != nil {
		return err
	}
	for i := range got {
		if got[i] != 2*a[i] {
			return fmt.Errorf("c[%d] = %v, want %v", i, got[i], 2*a[i])
		}
	}
	return nil
}

func TestReleasedContext(t *testing.T) {
	c := newContext(t)
	prog, err := c.Build(vaddSource, "-DTYPE=float")
	if err != nil {
		t.Fatal(err)
	}
	k, err := prog.Kernel("vadd")
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Alloc(16)
	if err != nil {
		t.Fatal(err)
	}
	c.Release()
	c.Release() // idempotent
	b.Release() // a buffer outlives its context's Release

	errs := map[string]error{"Finish": c.Finish()}
	_, errs["Build"] = c.Build(vaddSource, "-DTYPE=float")
	_, errs["Kernel"] = prog.Kernel("vadd")
	_, errs["Alloc"] = c.Alloc(16)
	_, errs["Launch"] = c.Launch(k, []int{1}, nil, b, b, b, int32(1))
	_, _, _, _, errs["WorkGroupInfo"] = k.WorkGroupInfo()
	for name, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "opencl: context released") {
			t.Errorf("%s after Release: error %v, want \"opencl: context released\"", name, err)
		}
	}
}

func TestErrorText(t *testing.T) {
	for _, test := range []struct {
		code opencl.Error
		want string
	}{
		{0, "CL_SUCCESS (0)"},
		{-1, "CL_DEVICE_NOT_FOUND (-1)"},
		{-11, "CL_BUILD_PROGRAM_FAILURE (-11)"},
		{-19, "CL_KERNEL_ARG_INFO_NOT_AVAILABLE (-19)"},
		{-30, "CL_INVALID_VALUE (-30)"},
		{-54, "CL_INVALID_WORK_GROUP_SIZE (-54)"},
		{-72, "CL_MAX_SIZE_RESTRICTION_EXCEEDED (-72)"},
		{-1001, "CL_PLATFORM_NOT_FOUND_KHR (-1001)"},
		{-20, "unknown OpenCL error (-20)"},
		{-9999, "unknown OpenCL error (-9999)"},
	} {
		if got := test.code.Error(); got != test.want {
			t.Errorf("Error(%d) = %q, want %q", int32(test.code), got, test.want)
		}
	}
}

// mustAlloc allocates a buffer released when the test ends, or stops the test.
// vaddKernel builds vaddSource with options and returns its kernel.
func vaddKernel(t *testing.T, c *opencl.Context, options string) *opencl.Kernel {
	t.Helper()
	prog, err := c.Build(vaddSource, options)
	if err != nil {
		t.Fatal(err)
	}
	k, err := prog.Kernel("vadd")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustAlloc(t *testing.T, c *opencl.Context, bytes int) *opencl.Buffer {
	t.Helper()
	b, err := c.Alloc(bytes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Release)
	return b
}

// TestBuildIsQuiet: a failing build says everything in its error, and
// nothing on the process's stderr (PoCL's clang would print "1 error
// generated." there, a second, stray report). The build runs in a child
// process whose stderr the test reads.
func TestBuildIsQuiet(t *testing.T) {
	if os.Getenv("GPULAB_BUILD_QUIET_CHILD") == "1" {
		ctx := newContext(t)
		_, err := ctx.Build("__kernel void f(void) { this does not compile }", "")
		fmt.Println(err != nil)
		return
	}
	newContext(t) // skips without OpenCL
	cmd := exec.Command(os.Args[0], "-test.run=^TestBuildIsQuiet$")
	cmd.Env = append(os.Environ(), "GPULAB_BUILD_QUIET_CHILD=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "true") || strings.Contains(stderr.String(), "generated") {
		t.Errorf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
}

// TestSubBuffer: a kernel given a sub-buffer writes at the parent's offset
// and leaves the parent's bytes around it alone; an unaligned or
// out-of-range sub-buffer is refused.
func TestSubBuffer(t *testing.T) {
	c := newContext(t)
	k := vaddKernel(t, c, "-DTYPE=float")
	align := c.SubAlign() / 4 // in floats
	const n = 100
	parent := mustAlloc(t, c, 4*(2*align+n))
	all := make([]float32, 2*align+n)
	for i := range all {
		all[i] = -1
	}
	if err := opencl.WriteSlice(c, parent, all); err != nil {
		t.Fatal(err)
	}
	sub, err := parent.Sub(4*align, 4*n)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Release()
	a, b := mustAlloc(t, c, 4*n), mustAlloc(t, c, 4*n)
	ones := make([]float32, n)
	for i := range ones {
		ones[i] = 1
	}
	for _, buf := range []*opencl.Buffer{a, b} {
		if err := opencl.WriteSlice(c, buf, ones); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := c.Launch(k, []int{128}, []int{64}, a, b, sub, int32(n))
	if err != nil {
		t.Fatal(err)
	}
	ev.Release()
	if err := opencl.ReadSlice(c, parent, all); err != nil {
		t.Fatal(err)
	}
	for i, v := range all {
		want := float32(-1)
		if i >= align && i < align+n {
			want = 2
		}
		if v != want {
			t.Fatalf("parent[%d] = %v, want %v (the sub-buffer starts at %d)", i, v, want, align)
		}
	}
	for _, tc := range []struct {
		offset, size int
		want         string
	}{
		{4*align + 4, 4, "not a multiple of the device's base address alignment"},
		{0, 4 * (2*align + n + 1), "outside it or empty"},
		{0, 0, "outside it or empty"},
	} {
		if s, err := parent.Sub(tc.offset, tc.size); err == nil || !strings.Contains(err.Error(), tc.want) {
			s.Release()
			t.Errorf("Sub(%d, %d): %v, want %q", tc.offset, tc.size, err, tc.want)
		}
	}
}
