package exercise

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gpulab/engine/cuda"
	"gpulab/engine/exercise/wire"
	"gpulab/engine/gemm"
)

// naiveGEMM is a submission without bounds checks, as its lines come out
// of the cell: line 1 is the line of the opening backtick.
const naiveGEMM = `
extern "C" __global__ void sgemm(int M, int N, int K, const float* A,
                                 const float* B, float* C) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        acc += A[row * K + k] * B[k * N + col];
    }
    C[row * N + col] = acc;
}
`

// tiledGEMM lacks the barrier after the k loop: the next tile's stores
// race with this tile's loads.
const tiledGEMM = `
#define TILE 32
extern "C" __global__ void sgemm(int M, int N, int K, const float* A, const float* B, float* C) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        As[ty][tx] = (row < M && t + tx < K) ? A[row * K + t + tx] : 0.0f;
        Bs[ty][tx] = (t + ty < K && col < N) ? B[(t + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * Bs[k][tx];
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
`

// Sanitizer logs, written after compute-sanitizer's text format: a
// banner, each report's first line flush after "========= ", its details
// indented, a host backtrace, a summary. memcheckNew is the form of CUDA
// 12 and later (the kernel before the offset, the file and line after
// "in"), memcheckOld the form of earlier tools ("at 0x… in file:line:kernel").
const (
	memcheckNew = `========= COMPUTE-SANITIZER
some output the program printed
========= Invalid __global__ read of size 4 bytes
=========     at sgemm+0x2f0 in exercise.cu:8
=========     by thread (1,1,0) in block (1,0,0)
=========     Address 0x7f4c2b000554 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f4c2b000400 of size 340 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2f0e45] in /lib/x86_64-linux-gnu/libcuda.so.1
=========
========= Program hit CUDA_ERROR_LAUNCH_FAILED (error 719) due to "unspecified launch failure" on CUDA API call to cuCtxSynchronize.
=========     Saved host backtrace up to driver entry point at error
=========
========= ERROR SUMMARY: 2 errors
`
	memcheckOld = `========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at 0x00000390 in exercise.cu:10:sgemm
=========     by thread (0,0,0) in block (0,1,0)
=========     Address 0x7f0000000204 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f0000000200 of size 4 bytes
=========
========= ERROR SUMMARY: 1 error
`
	memcheckShared = `========= COMPUTE-SANITIZER
========= Invalid __shared__ write of size 4 bytes
=========     at sgemm+0x1c0 in exercise.cu:9
=========     by thread (31,2,0) in block (0,0,0)
=========     Address 0x00002000 is out of bounds
=========
========= ERROR SUMMARY: 1 error
`
	memcheckMisaligned = `========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 16 bytes
=========     at sgemm+0x450 in exercise.cu:8
=========     by thread (3,0,0) in block (0,0,0)
=========     Address 0x7f4c2b000414 is misaligned
=========
========= ERROR SUMMARY: 1 error
`
	racecheck = `========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at sgemm+0x1e0 in exercise.cu:9
=========     and Read access at sgemm+0x2a0 in exercise.cu:13 [2048 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
`
	racecheckOld = `========= COMPUTE-SANITIZER
========= ERROR: Race reported between Write access at 0x00000150 in exercise.cu:10:sgemm and Read access at 0x00000170 in exercise.cu:10:sgemm [4 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
`
	clean = `========= COMPUTE-SANITIZER
========= ERROR SUMMARY: 0 errors
`
)

// Logs recorded on an H200 (compute-sanitizer of CUDA 13.0, driver
// 580.159) from a CUDA program built with -lineinfo, the file name changed
// to the exercise's: memcheckTrap from a __trap() at line 5, memcheckAssert
// from a failed assert at line 6 (its message, the device's printf, goes
// to the program's output: assertOutput), memcheckNULL from a write
// through the NULL that a failed device malloc returned, at line 7;
// memcheckHung is what a rerun killed at its limit leaves.
const (
	memcheckTrap = `========= COMPUTE-SANITIZER
========= Trace/breakpoint trap
=========     at sgemm(int, int, int, const float *, const float *, float *)+0x3f0 in exercise.cu:5
=========     by thread (3,0,0) in block (0,0,0)
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: main [0x8d42] in k
========= 
========= Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" on CUDA API call to cudaDeviceSynchronize.
=========     Saved host backtrace up to driver entry point at error
=========         Host Frame: main [0x8d47] in k
========= 
========= ERROR SUMMARY: 2 errors
`
	memcheckAssert = `========= COMPUTE-SANITIZER
========= Warp assert
=========     at __assertfail+0x19a0
========= 
========= ERROR SUMMARY: 1 error
`
	assertOutput = "exercise.cu:6: void sgemm(int, int, int, const float *, const float *, float *): block: [0,0,0], thread: [5,0,0] Assertion `i < 5` failed.\n" +
		"exercise.cu:6: void sgemm(int, int, int, const float *, const float *, float *): block: [0,0,0], thread: [6,0,0] Assertion `i < 5` failed.\n"
	memcheckNULL = `========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at sgemm(int, int, int, const float *, const float *, float *)+0x1f0 in exercise.cu:7
=========     by thread (0,0,0) in block (0,0,0)
=========     Access to 0x0 is out of bounds
=========     and is 8,680,112,128 bytes before the nearest allocation at 0x205600000 of size 8,388,864 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: main [0x8d42] in k
========= 
========= ERROR SUMMARY: 1 error
`
	memcheckHung = `========= COMPUTE-SANITIZER
`
)

// Logs recorded on an H100 (compute-sanitizer of CUDA 13, driver 580.159)
// from the planted bugs below, cut to their first reports: memcheck13 from
// plantedOOB, whose memcheck says "Access to 0x… is out of bounds";
// hostOnly13 from plantedRace, whose memcheck reports nothing on the device,
// only an API error (here one a binding once made by probing
// cuFuncGetParamInfo past the last parameter); racecheck13 from plantedRace.
const (
	memcheck13 = `========= COMPUTE-SANITIZER
========= Program hit CUDA_ERROR_INVALID_VALUE (error 1) due to "invalid argument" on CUDA API call to cuFuncGetParamInfo.
=========     Saved host backtrace up to driver entry point at error
=========         Host Frame:  [0x1f4337] in gpulab-engine-exercise.test
=========
========= Invalid __global__ read of size 4 bytes
=========     at sgemm+0x210 in exercise.cu:10
=========     by thread (0,1,0) in block (0,0,0)
=========     Access to 0x7fbfec800004 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7fbfec800000 of size 4 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: cuLaunchKernel [0x39fb94] in libcuda.so.1
=========         Host Frame:  [0x1f4337] in gpulab-engine-exercise.test
=========
========= Invalid __global__ read of size 4 bytes
=========     at sgemm+0x210 in exercise.cu:10
=========     by thread (1,1,0) in block (0,0,0)
=========     Access to 0x7fbfec800008 is out of bounds
=========     and is 5 bytes after the nearest allocation at 0x7fbfec800000 of size 4 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: cuLaunchKernel [0x39fb94] in libcuda.so.1
=========         Host Frame:  [0x1f4337] in gpulab-engine-exercise.test
=========
`
	hostOnly13 = `========= COMPUTE-SANITIZER
========= Program hit CUDA_ERROR_INVALID_VALUE (error 1) due to "invalid argument" on CUDA API call to cuFuncGetParamInfo.
=========     Saved host backtrace up to driver entry point at error
=========         Host Frame:  [0x1f4337] in gpulab-engine-exercise.test
=========
`
	racecheck13 = `========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at sgemm+0x300 in exercise.cu:11
=========     and Read access at sgemm+0x310 in exercise.cu:13 [256 hazards]
=========     and Read access at sgemm+0x330 in exercise.cu:13 [128 hazards]
=========
========= Warning: Race reported between Write access at sgemm+0x2f0 in exercise.cu:10
=========     and Read access at sgemm+0x320 in exercise.cu:13 [512 hazards]
=========
`
)

// gemmTask is the task of the exercise's GEMM at shape s, its inputs of
// the right lengths.
func gemmTask(s gemm.Shape) wire.Task {
	return wire.Task{Entry: "sgemm", Decl: gemm.CUDADecl("sgemm"),
		Args: []any{s.M, s.N, s.K, make([]float32, s.M*s.K), make([]float32, s.K*s.N), wire.Out(s.M * s.N)}}
}

func TestParseSanitizer(t *testing.T) {
	r := ParseSanitizer("memcheck", memcheckNew)
	if len(r) != 2 {
		t.Fatalf("%d reports, want the invalid read and the launch failure: %+v", len(r), r)
	}
	got := r[0]
	if got.Space != "global" || got.Access != "read" || got.Size != 4 || got.File != "exercise.cu" || got.Line != 8 || got.Kernel != "sgemm" ||
		got.Thread[0] != 1 || got.Thread[1] != 1 || got.Block[0] != 1 || got.Address != 0x7f4c2b000554 || got.AllocBase != 0x7f4c2b000400 || got.AllocSize != 340 {
		t.Errorf("new format: %+v", got)
	}
	if !strings.HasPrefix(r[1].Summary, "Program hit CUDA_ERROR_LAUNCH_FAILED") || r[1].Access != "" {
		t.Errorf("host error: %+v", r[1])
	}
	old := ParseSanitizer("memcheck", memcheckOld)
	if len(old) != 1 || old[0].Access != "write" || old[0].Line != 10 || old[0].Kernel != "sgemm" || old[0].Block[1] != 1 || old[0].AllocSize != 4 {
		t.Errorf("old format: %+v", old)
	}
	if m := ParseSanitizer("memcheck", memcheckMisaligned); len(m) != 1 || !m[0].Misaligned || m[0].Size != 16 {
		t.Errorf("misaligned: %+v", m)
	}
	for _, log := range []string{racecheck, racecheckOld} {
		rc := ParseSanitizer("racecheck", log)
		if len(rc) != 1 || rc[0].Race == nil || rc[0].Race.First != "Write" || rc[0].Race.Second != "Read" {
			t.Fatalf("racecheck: %+v", rc)
		}
	}
	if rc := ParseSanitizer("racecheck", racecheck)[0].Race; rc.FirstLine != 9 || rc.SecondLine != 13 || rc.Hazards != 2048 || rc.File != "exercise.cu" {
		t.Errorf("race: %+v", rc)
	}
	if rc := ParseSanitizer("racecheck", racecheckOld)[0].Race; rc.FirstLine != 10 || rc.SecondLine != 10 || rc.Hazards != 4 {
		t.Errorf("race on one line: %+v", rc)
	}
	if r := ParseSanitizer("memcheck", clean); len(r) != 0 {
		t.Errorf("a clean run: %+v", r)
	}
}

// TestExplain: each report in the student's terms, the argument found by
// its buffer's size (and, where sizes tie, by the line).
func TestExplain(t *testing.T) {
	small := gemmTask(gemm.Shape{M: 17, N: 33, K: 5}) // A 85 floats (340 bytes), B 165, C 561
	one := gemmTask(gemm.Shape{M: 1, N: 1, K: 1})     // A, B and C of one float each
	for _, tc := range []struct {
		name, tool, log, src string
		tasks                []wire.Task
		want                 string
	}{
		{"read past A", "memcheck", memcheckNew, naiveGEMM, []wire.Task{one, small},
			"thread (1,1,0) of block (1,0,0) read `A[85]`, past the end of A (85 elements: indices 0 to 84) at your line 8: `acc += A[row * K + k] * B[k * N + col];`"},
		{"write past C, sizes tied", "memcheck", memcheckOld, naiveGEMM, []wire.Task{one},
			"thread (0,0,0) of block (0,1,0) wrote `C[1]`, past the end of C (1 element: indices 0 to 0) at your line 10: `C[row * N + col] = acc;`"},
		{"read past A or B, sizes tied", "memcheck", strings.Replace(memcheckNew, "of size 340 bytes", "of size 4 bytes", 1), naiveGEMM, []wire.Task{one},
			"thread (1,1,0) of block (1,0,0) read `A[85]` or `B[85]`, past the end of A or B (1 element: indices 0 to 0) at your line 8"},
		{"shared", "memcheck", memcheckShared, tiledGEMM, []wire.Task{small},
			"thread (31,2,0) of block (0,0,0) wrote shared memory out of its bounds (address 0x2000, 4 bytes) at your line 9: `As[ty][tx] = (row < M && t + tx < K) ? A[row * K + t + tx] : 0.0f;`"},
		{"misaligned", "memcheck", memcheckMisaligned, naiveGEMM, []wire.Task{small},
			"thread (3,0,0) of block (0,0,0) read 16 bytes of global memory at address 0x7f4c2b000414, which is not a multiple of 16"},
		{"race", "racecheck", racecheck, tiledGEMM, []wire.Task{small},
			"a race on `As[ty][tx]` and `As[ty][k]` between your line 9 (a write: `As[ty][tx] = (row < M && t + tx < K) ? A[row * K + t + tx] : 0.0f;`) and line 13 (a read: `acc += As[ty][k] * Bs[k][tx];`): threads of a block reach one before others are done with the other; a missing __syncthreads()?"},
		{"in a header", "memcheck", strings.Replace(memcheckShared, "exercise.cu:9", "gemm/common.cuh:40", 1), tiledGEMM, []wire.Task{small},
			"thread (31,2,0) of block (0,0,0) wrote shared memory out of its bounds (address 0x2000, 4 bytes) at gemm/common.cuh:40"},
		{"CUDA 13: read past A, sizes tied, told by the line", "memcheck", memcheck13, plantedOOB, []wire.Task{one},
			"thread (0,1,0) of block (0,0,0) read `A[1]`, past the end of A (1 element: indices 0 to 0) at your line 10: `As[ty][tx] = A[row * K + t + tx];`"},
		{"CUDA 13: race", "racecheck", racecheck13, plantedRace, []wire.Task{small},
			"a race on `Bs[ty][tx]` and `Bs[k][tx]` between your line 11"},
		{"race on one line", "racecheck", racecheckOld, tiledGEMM, []wire.Task{small},
			"a race on `Bs[ty][tx]` at your line 10: `Bs[ty][tx] = (t + ty < K && col < N) ? B[(t + ty) * N + col] : 0.0f;`: threads of a block write and read the same shared element with no barrier between them"},
	} {
		reports := ParseSanitizer(tc.tool, tc.log)
		for len(reports) > 0 && reports[0].Access == "" && reports[0].Race == nil {
			reports = reports[1:] // a host-side report: Diagnose explains the device's first
		}
		if len(reports) == 0 {
			t.Fatalf("%s: no report from the device", tc.name)
		}
		if got := reports[0].Explain(tc.src, tc.tasks, ""); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// TestDiagnose: memcheck first, racecheck when memcheck is clean, a
// clean bill only when both ran the kernel and finished, a trap, an
// assert, a NULL write and a hang in the student's terms, and a rerun that
// cannot start, never reached the kernel or ended without its summary said
// as such.
func TestDiagnose(t *testing.T) {
	small := []wire.Task{gemmTask(gemm.Shape{M: 17, N: 33, K: 5})}
	logs := func(memcheck, race string) Rerun {
		return func(tool string) (RerunResult, error) {
			if tool == "memcheck" {
				return RerunResult{Log: memcheck, Tasks: small}, nil
			}
			return RerunResult{Log: race, Tasks: small}, nil
		}
	}
	// The lines the recorded trap, assert and NULL write name: 5, 6 and 7.
	trapSrc := "\nline 2\nline 3\nline 4\n    if (row >= M) __trap();\n    assert(i < 5);\n    scratch[threadIdx.x] = acc;\n"
	for _, tc := range []struct {
		name  string
		rerun Rerun
		want  string
		src   string // tiledGEMM if ""
	}{
		{"memcheck finds it", logs(memcheckNew, racecheck), "compute-sanitizer (memcheck), rerunning the check: thread (1,1,0) of block (1,0,0) read `A[85]`", ""},
		{"racecheck finds it", logs(clean, racecheck), "compute-sanitizer (racecheck), rerunning the check: a race on `As[ty][tx]`", ""},
		{"nothing found", logs(clean, clean), "compute-sanitizer found no out-of-bounds or misaligned access", ""},
		{"CUDA 13: memcheck finds it after an API error", logs(memcheck13, racecheck13), "compute-sanitizer (memcheck), rerunning the check: thread (0,1,0) of block (0,0,0) read ", ""},
		{"an API error alone does not hide a race", logs(hostOnly13, racecheck13), "compute-sanitizer (racecheck), rerunning the check: a race ", ""},
		{"an API error alone is said", logs(hostOnly13, clean), "compute-sanitizer (memcheck), rerunning the check: compute-sanitizer (memcheck): Program hit CUDA_ERROR_INVALID_VALUE", ""},
		{"a trap", logs(memcheckTrap, clean), "compute-sanitizer (memcheck), rerunning the check: the kernel stopped at a trap or assert at your line 5: `if (row >= M) __trap();` (thread (3,0,0) of block (0,0,0))", trapSrc},
		{"an assert", func(string) (RerunResult, error) {
			return RerunResult{Log: memcheckAssert, Output: assertOutput, Tasks: small}, nil
		},
			"compute-sanitizer (memcheck), rerunning the check: the kernel stopped at a trap or assert at your line 6: `assert(i < 5);`: assertion `i < 5` failed in thread (5,0,0) of block (0,0,0)", trapSrc},
		{"a NULL write", logs(memcheckNULL, clean), "compute-sanitizer (memcheck), rerunning the check: thread (0,0,0) of block (0,0,0) wrote address 0x0, through a NULL pointer", trapSrc},
		{"a hang", func(tool string) (RerunResult, error) {
			if tool != "memcheck" {
				t.Errorf("racecheck ran after memcheck's rerun timed out")
			}
			return RerunResult{Log: memcheckHung, Tasks: append(small, small...), TimedOut: true, Limit: 2 * time.Minute}, nil
		}, "compute-sanitizer (memcheck), rerunning the check: the kernel did not finish: it was still running 2m0s after the rerun began, on its 2nd launch (a grid of 1×1×1 blocks of 1×1×1 threads). Where it runs compute-sanitizer cannot say (not measured)", ""},
		{"a sanitizer too slow is no hang", func(tool string) (RerunResult, error) {
			return RerunResult{Log: memcheckHung, Tasks: small, TimedOut: true, Limit: time.Minute}, nil
		}, "not diagnosed: memcheck did not finish rerunning the check within 1m0s (the sanitizer slows a kernel down a hundredfold and more); racecheck did not finish", ""},
		{"a trap whose line info names the next line", logs(strings.Replace(memcheckTrap, "exercise.cu:5", "exercise.cu:6", 1), clean),
			"compute-sanitizer (memcheck), rerunning the check: the kernel stopped at a trap or assert at your line 5: `if (row >= M) __trap();` (compute-sanitizer's line information names line 6)",
			strings.Replace(trapSrc, "assert(i < 5);", "for (int k0 = 0; k0 < K; k0 += TILE) {", 1)},
		{"no log", logs("", ""), "not diagnosed: memcheck ended without its summary (nothing written); racecheck ended without its summary (nothing written)", ""},
		{"the sanitizer ran, the kernel never did", func(string) (RerunResult, error) {
			return RerunResult{Log: clean, Output: "exec: /tmp/gpulab-grade-1/trampoline: no such file or directory"}, nil
		}, "not diagnosed: memcheck never reached the kernel: the check process did not run under it (exec: /tmp/gpulab-grade-1/trampoline: no such file or directory)", ""},
		{"no sanitizer", func(string) (RerunResult, error) {
			return RerunResult{}, errors.New("compute-sanitizer is not on PATH, nor in /usr/local/cuda/bin")
		}, "not diagnosed: compute-sanitizer is not on PATH, nor in /usr/local/cuda/bin (compute-sanitizer comes with the CUDA toolkit)", ""},
	} {
		if tc.src == "" {
			tc.src = tiledGEMM
		}
		if got := Diagnose(tc.src, tc.name == "a hang", tc.rerun); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// TestSanitizedRunner: single tasks run with -lineinfo added and no
// guard zones (the caller's task untouched); of a batch the first task
// runs and the rerun ends; the tasks are kept in order.
func TestSanitizedRunner(t *testing.T) {
	var seen [][]string
	inner := runnerFunc(func(ts []wire.Task) ([][][]uint32, time.Duration, error) {
		seen = append(seen, ts[0].Options)
		return [][][]uint32{nil}, 0, nil
	})
	d := NewSanitizedRunner(inner, "memcheck", "")
	opts := []string{"-DVEC=1"}
	for range 2 {
		if _, _, err := d.Run([]wire.Task{{Entry: "sgemm", Options: opts}}); err != nil {
			t.Fatal(err)
		}
	}
	batch := make([]wire.Task, timedBatch)
	batch[0].Guard = 4096
	if _, _, err := d.Run(batch); !errors.Is(err, errRerunDone) {
		t.Errorf("a batch: %v", err)
	}
	if len(seen) != 3 || strings.Join(seen[0], " ") != "-DVEC=1 -lineinfo" || len(opts) != 1 || len(d.Tasks()) != 3 {
		t.Errorf("options seen %q, caller's %q, %d tasks kept (the batch's first one runs)", seen, opts, len(d.Tasks()))
	}
	if g := d.Tasks()[2].Guard; g != 0 || batch[0].Guard != 4096 {
		t.Errorf("the rerun's task has guard zones of %d words (the caller's %d): the sanitizer would not see a stray access", g, batch[0].Guard)
	}
	// racecheck runs no timing problem; a log with a device report ends
	// the rerun before the next task.
	race := NewSanitizedRunner(inner, "racecheck", "")
	if _, _, err := race.Run(batch); !errors.Is(err, errRerunDone) || len(race.Tasks()) != 0 {
		t.Errorf("racecheck ran a batch's task: %v, %d tasks", err, len(race.Tasks()))
	}
	logFile := filepath.Join(t.TempDir(), "log")
	os.WriteFile(logFile, []byte(memcheckOld), 0o644)
	done := NewSanitizedRunner(inner, "memcheck", logFile)
	if _, _, err := done.Run([]wire.Task{{Entry: "sgemm"}}); !errors.Is(err, errRerunDone) || len(done.Tasks()) != 0 {
		t.Errorf("a rerun went on after the sanitizer's report: %v, %d tasks", err, len(done.Tasks()))
	}
}

func TestNeedsDiagnosis(t *testing.T) {
	for _, tc := range []struct {
		lang string
		r    Result
		want bool
	}{
		{LangCUDA, Result{Compiled: true, Error: "wrong result for M=17 N=33 K=5"}, true},
		{LangCUDA, Result{Compiled: true, Error: "it compiled, but running it failed: …"}, true},
		{LangCUDA, Result{Error: "did not finish within 2m0s (an endless loop?)"}, true},
		{LangCUDA, Result{Error: "does not compile: line 3: error: …"}, false},
		{LangCUDA, Result{Compiled: true, Correct: true}, false},
		{LangCUDA, Result{Unavailable: true, Error: "no device here runs cuda kernels"}, false},
		{LangOpenCL, Result{Compiled: true, Error: "wrong result"}, false},
	} {
		if got := NeedsDiagnosis(tc.lang, tc.r); got != tc.want {
			t.Errorf("%s %+v: %v", tc.lang, tc.r, got)
		}
	}
}

// Planted bugs for gemm/tiled in CUDA (32×32 blocks): plantedOOB loads
// its tiles without bounds checks, so the 1×1×1 problem's threads read
// past the ends of A and B (and sum what they find there); plantedRace
// reads the tiles before a barrier says they are written.
const (
	plantedOOB = `
#define TILE 32
extern "C" __global__ void sgemm(int M, int N, int K, const float* A, const float* B, float* C) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        As[ty][tx] = A[row * K + t + tx];
        Bs[ty][tx] = B[(t + ty) * N + col];
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
`
	plantedRace = `
#define TILE 32
extern "C" __global__ void sgemm(int M, int N, int K, const float* A, const float* B, float* C) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        As[ty][tx] = (row < M && t + tx < K) ? A[row * K + t + tx] : 0.0f;
        Bs[ty][tx] = (t + ty < K && col < N) ? B[(t + ty) * N + col] : 0.0f;
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
`
)

// TestMain makes this test binary a rerun's worker when a diagnosis runs
// it again (TestDiagnosisOnGPU), as a notebook cell's program is.
func TestMain(m *testing.M) {
	serveIfDiagnosisWorker()
	os.Exit(m.Run())
}

// TestDiagnosisOnGPU reruns the planted bugs under compute-sanitizer the
// way a notebook's check does (this test binary, run again as the worker)
// and checks that each is explained at the right line. It needs an NVIDIA
// GPU and compute-sanitizer; it logs the sanitizer's raw reports.
func TestDiagnosisOnGPU(t *testing.T) {
	if _, err := cudaDevices(); err != nil {
		t.Skipf("needs a CUDA device: %v", err)
	}
	if _, err := cuda.Tool("compute-sanitizer"); err != nil {
		t.Skipf("needs compute-sanitizer: %v", err)
	}
	e, err := Lookup("gemm/tiled")
	if err != nil {
		t.Fatal(err)
	}
	f, err := e.Flavor(LangCUDA)
	if err != nil {
		t.Fatal(err)
	}
	infos, _ := f.Devices()
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"out of bounds", plantedOOB, []string{"compute-sanitizer (memcheck)", "past the end of", "at your line "}},
		{"race", plantedRace, []string{"compute-sanitizer (racecheck)", "a race on `", "your line"}},
	} {
		r := Run("gemm/tiled", tc.src)
		if r.Correct {
			t.Fatalf("%s: the planted bug passed the check", tc.name)
		}
		for _, want := range tc.want {
			if !strings.Contains(r.Diagnosis, want) {
				t.Errorf("%s: diagnosis lacks %q:\n%s", tc.name, want, r.Diagnosis)
			}
		}
		if r.Card == nil || r.Card.Error != "" || r.Card.Registers == 0 {
			t.Errorf("%s: card %+v", tc.name, r.Card)
		}
		rerun := e.rerunHere(f, tc.src, infos[0])
		for _, tool := range SanitizerTools {
			rr, err := rerun(tool)
			t.Logf("%s, %s (%d tasks, %v):\n%s", tc.name, tool, len(rr.Tasks), err, rr.Log)
		}
		t.Logf("%s: report:\n%s", tc.name, r.Markdown())
	}
}
