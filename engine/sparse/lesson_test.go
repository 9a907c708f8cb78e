package sparse

import (
	"strings"
	"testing"
	"time"

	"gpulab/engine/bench"
)

func TestLabel(t *testing.T) {
	for spec, want := range map[string]string{
		"uniform:n=65536,k=16":                         "uniform (16 per row)",
		"gen:banded:n=8192,w=8":                        "banded (w=8)",
		"poisson:k=512":                                "Poisson 512²",
		"rmat:scale=18,ef=8,a=0.57,b=0.19,c=0.19":      "R-MAT scale 18 (a=0.57)",
		"rmat:scale=12":                                "R-MAT scale 12",
		"datasets/mtx/sym5x5.mtx":                      "sym5x5",
		"HB/bcsstk01":                                  "bcsstk01",
		"/tmp/web.mtx.gz":                              "web",
		"other:x=1":                                    "other:x=1",
		" rmat:scale=16, ef=16, a=0.65, b=0.15,c=0.15": "R-MAT scale 16 (a=0.65)",
	} {
		if got := Label(spec); got != want {
			t.Errorf("Label(%q) = %q, want %q", spec, got, want)
		}
	}
}

func TestNumberText(t *testing.T) {
	for d, want := range map[time.Duration]string{
		35_507_900:            "35.5 ms",
		675_007:               "675 µs",
		37_439:                "37.4 µs",
		999:                   "999 ns",
		70_762_657:            "70.8 ms",
		1_500_000_000:         "1.50 s",
		999_600:               "1.00 ms",
		122_720_700:           "123 ms",
		0:                     "0 ns",
		4_400_032:             "4.40 ms",
		-2 * time.Millisecond: "-2.00 ms",
	} {
		if got := timeText(d); got != want {
			t.Errorf("timeText(%d) = %q, want %q", int64(d), got, want)
		}
	}
	for x, want := range map[float64]string{3.7412: "3.74×", 0.0068: "0.01×", 12.47: "12.5×", 503.2: "503×", 9.999: "10.0×"} {
		if got := times(x); got != want {
			t.Errorf("times(%g) = %q, want %q", x, got, want)
		}
	}
	for x, want := range map[float64]string{0.93: "93%", 1.66: "166%", 0.052: "5.2%", 0.00023: "0.023%", 0: "0%"} {
		if got := percent(x); got != want {
			t.Errorf("percent(%g) = %q, want %q", x, got, want)
		}
	}
	if got := bytesText(24795966464); got != "23.1 GiB" {
		t.Errorf("bytesText: %q", got)
	}
	if got := bytesText(556550144); got != "531 MiB" {
		t.Errorf("bytesText: %q", got)
	}
	if got := geomean([]float64{1, 4}); got != 2 {
		t.Errorf("geomean: %g", got)
	}
}

// rec is a passing record of a run on one device.
func rec(size, variant, baseline string, ms, speedup float64, params bench.Params) bench.Record {
	return bench.Record{Suite: "test", Device: "cuda:0", DeviceName: "GPU A", Commit: "abc", Size: size, Variant: variant,
		Baseline: baseline, MedianMS: ms, Speedup: speedup, Params: params, OK: true}
}

func TestCPUMarkdown(t *testing.T) {
	recs := []bench.Record{
		rec("uniform:n=8192,k=8", "gustavson_serial", "gustavson_serial", 40, 1, nil),
		rec("uniform:n=8192,k=8", "gustavson_parallel", "gustavson_serial", 25, 1.6, nil),
		rec("uniform:n=8192,k=8", "outer_product", "gustavson_serial", 160, 0.25, nil),
		rec("rmat:scale=12", "gustavson_serial", "gustavson_serial", 10, 1, nil),
		rec("rmat:scale=12", "gustavson_parallel", "gustavson_serial", 12.5, 0.8, nil),
	}
	md := CPUMarkdown(recs, 2)
	for _, want := range []string{
		"- **uniform (8 per row):** against gustavson_serial (40.0 ms): gustavson_parallel 1.60× on 2 cores and outer_product 0.25×.",
		"- **R-MAT scale 12:** against gustavson_serial (10.0 ms): gustavson_parallel 0.80× on 2 cores (slower than serial here: other work on the cores, or too little work to share).",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
}

// spgemmRun is a CUDA spgemm run on two matrices: on "uniform" every step
// from 03 on beats cuSPARSE, on "poisson" none does.
func spgemmRun() []bench.Record {
	var recs []bench.Record
	add := func(size string, rows, nnzC int, times map[string]float64, peaks map[string]int) {
		for _, v := range append([]string{"cusparse"}, GPUSteps...) {
			p := bench.Params{"rows": rows, "products": 10 * rows, "nnz_c": nnzC, "peak_bytes": float64(peaks[v])}
			recs = append(recs, rec(size, v, "cusparse", times[v], times["cusparse"]/times[v], p))
		}
	}
	add("uniform:n=1000,k=16", 1000, 256000, map[string]float64{"cusparse": 16, "01_row_per_block": 16, "02_two_phase": 48, "03_shared_hash": 6, "04_binned": 4, "05_outer_product": 5, "06_balanced": 4},
		map[string]int{"cusparse": 2 << 30, "01_row_per_block": 1 << 30, "02_two_phase": 800 << 20, "03_shared_hash": 500 << 20, "04_binned": 500 << 20, "05_outer_product": 1 << 30, "06_balanced": 500 << 20})
	add("poisson:k=512", 1000, 13000, map[string]float64{"cusparse": 0.5, "01_row_per_block": 3.5, "02_two_phase": 6, "03_shared_hash": 3, "04_binned": 1, "05_outer_product": 1.25, "06_balanced": 1},
		map[string]int{"cusparse": 200 << 20, "01_row_per_block": 300 << 20, "02_two_phase": 250 << 20, "03_shared_hash": 30 << 20, "04_binned": 40 << 20, "05_outer_product": 80 << 20, "06_balanced": 40 << 20})
	return recs
}

func TestSpGEMMLadderMarkdown(t *testing.T) {
	md := SpGEMMLadderMarkdown(spgemmRun())
	for _, want := range []string{
		"| uniform (16 per row) | 2048 | 1024 | 800 | 500 | 500 | 1024 | 500 |",
		"Step 02 needs less memory than step 01 on 2 of 2 matrices (the table above), and is slower on 2 of them: uniform (16 per row) 16.0 ms → 48.0 ms; Poisson 512² 3.50 ms → 6.00 ms.",
		"Step 03 is from 2.00× as fast as step 02's dense accumulator in global memory on Poisson 512² to 8.00× on uniform (16 per row).",
		"runs 1.50× on uniform (16 per row) at 10 products per row and 3.00× on Poisson 512² at 10 products per row as fast as step 03",
		"wins on uniform (16 per row) with step 04 at 4.00× and loses on Poisson 512² with step 04 at 0.50×. Where it loses, the rows of C are short (at most 13 entries on average, against at least 256 where it wins)",
		"**Memory.** On uniform (16 per row), cuSPARSE peaked at 2048 MiB of device memory, step 04 at 500 MiB.",
		"is slower than step 04 on 2 of 2 matrices, furthest behind on uniform (16 per row): 5.00 ms against 4.00 ms.",
		"on par with step 04, within noise, on uniform (16 per row) and Poisson 512².",
		"**Geometric mean against cuSPARSE:** step 06 1.41× over 2 matrices and step 04 1.41× over 2 matrices.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
	if got := SpGEMMLadderMarkdown(nil); !strings.Contains(got, "no passing records") {
		t.Errorf("no records: %q", got)
	}
}

func TestSpMVMarkdown(t *testing.T) {
	var recs []bench.Record
	add := func(size string, rows, nnz int, ms map[string]float64) {
		for v, m := range ms {
			recs = append(recs, rec(size, v, "copy_bound", m, ms["copy_bound"]/m, bench.Params{"rows": rows, "nnz": nnz}))
		}
	}
	add("poisson:k=2048", 100, 500, map[string]float64{"copy_bound": 1, "x_gather_probe": 0.5, "spmv_scalar": 1.25, "spmv_vector": 10,
		"spmv_vector_adaptive": 4, "spmv_stream": 1.0, "spmv_vector_rows": 2, "cusparse_csr_alg1": 2, "cusparse_csr_alg2": 2.5})
	add("uniform:n=4194304,k=16", 100, 1600, map[string]float64{"copy_bound": 1, "x_gather_probe": 4, "spmv_scalar": 5, "spmv_vector": 5,
		"spmv_vector_adaptive": 4, "spmv_stream": 5, "spmv_vector_rows": 8, "cusparse_csr_alg1": 4.5, "cusparse_csr_alg2": 5})
	md := SpMVMarkdown(recs)
	for _, want := range []string{
		"reaches 80% of the bound on Poisson 2048² at 5.0 entries per row and 20% of the bound on uniform (16 per row) at 16.0 entries per row.",
		"10% of the bound on Poisson 2048², with 27 of 32 lanes idle; and 20% of the bound on uniform (16 per row), with 16 of 32 lanes idle.",
		"Against step 02 with lanes matched to the mean row length (spmv_vector_adaptive, step 2 of the chart): its speed times 2.00× on Poisson 2048² to 50% of the bound, but only 0.50× on uniform (16 per row) to 12% of the bound",
		"100% of the bound on Poisson 2048² and 20% of the bound on uniform (16 per row). Against cuSPARSE's better algorithm on each matrix, it is faster on Poisson 2048² and slower on uniform (16 per row).",
		"**SELL (05)** is not in these records",
		"on uniform (16 per row) the probe reaches 25% of the bound and the fastest kernel (spmv_vector_adaptive) 25%, 100% of the probe's speed",
		"**On Poisson 2048² (200%) the probe passes the bound:**",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
}

// TestSpMVPastTheBound: a share over 100% is marked ‡ and the note names
// it, says whether it is within noise of the copy, and why a kernel can
// pass a copy; shares under the bound are not marked.
func TestSpMVPastTheBound(t *testing.T) {
	var recs []bench.Record
	for v, ms := range map[string]float64{"copy_bound": 1, "spmv_scalar": 0.99, "spmv_stream": 0.8, "spmv_vector_adaptive": 2} {
		recs = append(recs, rec("poisson:k=2048", v, "copy_bound", ms, 1/ms, bench.Params{"rows": 100, "nnz": 500}))
	}
	md := SpMVMarkdown(recs)
	for _, want := range []string{
		"reaches 101% ‡ of the bound on Poisson 2048²",
		"125% ‡ of the bound on Poisson 2048²",
		"‡ **Past the bound:** spmv_scalar on Poisson 2048² (101%, within noise); and spmv_stream on Poisson 2048² (125%, beyond noise).",
		"a kernel whose reads of x hit L2",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "50% ‡") {
		t.Errorf("a share under the bound is marked:\n%s", md)
	}
}

func TestStepsLabel(t *testing.T) {
	for _, tc := range []struct {
		steps []string
		want  string
	}{
		{SpMVLadder, "step: 1 scalar · 2 vector_adaptive · 3 stream · 4 vector_rows · 5 sell"},
		{GPUSteps[:2], "step: 1 row_per_block · 2 two_phase"},
	} {
		if got := stepsLabel(tc.steps); got != tc.want {
			t.Errorf("stepsLabel(%v) = %q, want %q", tc.steps, got, tc.want)
		}
	}
}

// timed is a passing record whose fastest run is 1% under its median.
func timed(size, variant, baseline string, ms, baseMS float64, params bench.Params) bench.Record {
	r := rec(size, variant, baseline, ms, baseMS/ms, params)
	r.MinMS = 0.99 * ms
	return r
}

// TestLeadsBeyondNoise: a step leads cuSPARSE only by more than the noise
// (bench.Differ); a lead of half a percent is on par.
func TestLeadsBeyondNoise(t *testing.T) {
	for _, tc := range []struct {
		x, y float64 // median ms
		want int
	}{{1, 2, 1}, {2, 1, -1}, {0.4946, 0.4972, 0}, {0.3234, 0.3356, 0}, {1.0, 1.06, 1}} {
		if got := lead(timed("m", "x", "y", tc.x, 1, nil), timed("m", "y", "y", tc.y, 1, nil)); got != tc.want {
			t.Errorf("lead(%g ms, %g ms) = %d, want %d", tc.x, tc.y, got, tc.want)
		}
	}
	// SpMV: stream ahead by 0.5% and 3.8% (on par), and by 30% (faster).
	var spmv []bench.Record
	for size, ms := range map[string][3]float64{ // copy_bound, stream, cuSPARSE ALG1
		"uniform:n=4194304,k=16": {0.1494, 0.4946, 0.4972}, "rmat:scale=22,ef=8": {0.0878, 0.3234, 0.3356}, "banded:n=4194304,w=8": {0.1611, 0.1599, 0.2080}} {
		for i, v := range []string{"copy_bound", "spmv_stream", "cusparse_csr_alg1"} {
			spmv = append(spmv, timed(size, v, "copy_bound", ms[i], ms[0], bench.Params{"rows": 100, "nnz": 1600}))
		}
	}
	md := SpMVMarkdown(spmv)
	for _, want := range []string{"Against cuSPARSE's better algorithm on each matrix, it is faster on banded (w=8)", "and on par, within noise, on "} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "slower on") {
		t.Errorf("a lead within noise told as a loss:\n%s", md)
	}
	// SpGEMM: the best step 0.5% ahead of cuSPARSE is on par with it.
	var spgemm []bench.Record
	for _, v := range append([]string{"cusparse"}, GPUSteps...) {
		ms := map[string]float64{"cusparse": 1.5465, "06_balanced": 1.539}[v]
		if ms == 0 {
			ms = 3
		}
		spgemm = append(spgemm, timed("banded:n=262144,w=8", v, "cusparse", ms, 1.5465, bench.Params{"rows": 10, "nnz_c": 100}))
	}
	if md := SpGEMMLadderMarkdown(spgemm); !strings.Contains(md, "the best step is on par with it, within noise, on banded (w=8) with step 06 at 1.00×.") {
		t.Errorf("lacks the tie:\n%s", md)
	}
}

// TestSELLMarkdown: step 05's share of the bound, its speed against step
// 01's, and its padding, where the records have it.
func TestSELLMarkdown(t *testing.T) {
	recs := []bench.Record{
		timed("rmat:scale=22,ef=8", "copy_bound", "copy_bound", 0.1, 0.1, bench.Params{"rows": 100, "nnz": 800}),
		timed("rmat:scale=22,ef=8", "spmv_scalar", "copy_bound", 4, 0.1, bench.Params{"rows": 100, "nnz": 800}),
		timed("rmat:scale=22,ef=8", "spmv_sell", "copy_bound", 0.5, 0.1, bench.Params{"rows": 100, "nnz": 800, "padded_entries": 1200}),
	}
	md := SpMVMarkdown(recs)
	want := "**SELL (05)** is step 01's thread per row, with the matrix laid out so that a warp's loads coalesce: 20% of the bound on R-MAT scale 22. Against step 01's speed: 8.00× on R-MAT scale 22. Each chunk is as long as its longest row, so the layout holds more entries than the matrix: 1.50× on R-MAT scale 22 as many."
	if !strings.Contains(md, want) {
		t.Errorf("lacks %q:\n%s", want, md)
	}
}

func TestBaselineAndDeviceChange(t *testing.T) {
	first := []bench.Record{
		rec("rmat:scale=18,ef=8", "cusparse", "cusparse", 70, 1, nil),
		rec("rmat:scale=18,ef=8", "06_balanced", "cusparse", 35, 2, nil),
		rec("rmat:scale=18,ef=8", "01_row_per_block", "cusparse", 80, 0.875, nil),
	}
	md := BaselineMarkdown(first, "04_binned", "06_balanced")
	if want := "- **R-MAT scale 18:** 06_balanced 35.0 ms (2.00×), against cusparse 70.0 ms.\n"; md != want {
		t.Errorf("BaselineMarkdown = %q, want %q", md, want)
	}
	second := []bench.Record{
		rec("rmat:scale=18,ef=8", "cusparse", "cusparse", 77, 1, nil),
		rec("rmat:scale=18,ef=8", "06_balanced", "cusparse", 35.7, 77/35.7, nil),
	}
	for i := range first {
		first[i].Date = "2026-11-22"
	}
	for i := range second {
		second[i].DeviceName, second[i].Date = "GPU B", "2026-11-23T10:00:00Z"
	}
	md = DeviceChangeMarkdown(first, second)
	for _, want := range []string{
		"Time on the GPU B (commit `abc`, 2026-11-23) against the GPU A (commit `abc`, 2026-11-22), the same source,",
		"- cusparse: 1.10× (10% longer)\n- 06_balanced: 1.02× (2% longer)\n",
		"The baseline, cusparse, changed the most, so every other variant's speedup over it is higher on the GPU B.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "01_row_per_block") {
		t.Errorf("compares a variant only one run has:\n%s", md)
	}
	for i := range second {
		second[i].Commit = "def"
	}
	if md := DeviceChangeMarkdown(first, second); !strings.Contains(md, "Time on the GPU B (commit `def`, 2026-11-23) against the GPU A (commit `abc`, 2026-11-22): the source may differ as well as the GPU") {
		t.Errorf("two commits:\n%s", md)
	}
	// CompareDevices: the shown run against the first run on another GPU.
	if md := CompareDevices(second, second, first); !strings.Contains(md, "Time on the GPU B (commit `def`, 2026-11-23) against the GPU A") {
		t.Errorf("CompareDevices skips the run on its own GPU:\n%s", md)
	}
	if md := CompareDevices(first, first); !strings.Contains(md, "every run here is on the GPU A") {
		t.Errorf("CompareDevices with no other GPU:\n%s", md)
	}
}

func TestLadderFigure(t *testing.T) {
	recs := spgemmRun()
	recs = append(recs, rec("banded:n=10,w=1", "03_shared_hash", "cusparse", 1, 0, nil)) // no speedup: left out
	html, err := LadderFigure("C = A²", "speedup over cuSPARSE", "cuSPARSE", recs, GPUSteps).HTML()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"uniform (16 per row)", "Poisson 512²", "cuSPARSE"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("the figure lacks %q", want)
		}
	}
	if strings.Contains(string(html), "banded (w=1)") {
		t.Errorf("a matrix without speedups has a line")
	}
}
