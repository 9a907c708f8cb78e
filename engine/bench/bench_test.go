package bench

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gpulab/engine"
)

// fakeCase runs in a fixed time and checks against a fixed error.
func fakeCase(variant string, d time.Duration, relErr float64, baseline bool) Case {
	return Case{
		Variant: variant, Baseline: baseline, Params: Params{"n": 10}, Flops: 2e6, Bytes: 1e6, Tol: 1e-6,
		Run:   func() (time.Duration, error) { return d, nil },
		Check: func() (Checked, error) { return Checked{MaxRelErr: relErr, Worst: 3}, nil },
	}
}

func TestMeasure(t *testing.T) {
	r := Measure(fakeCase("a", 2*time.Millisecond, 0, false), Options{MinReps: 3, MaxReps: 7, MinTime: time.Second})
	if r.Reps != 7 || r.MedianMS != 2 || r.MinMS != 2 || !r.OK {
		t.Errorf("record %+v", r)
	}
	if math.Abs(r.GFLOPS-1) > 1e-9 || math.Abs(r.GBps-0.5) > 1e-9 || r.Intensity != 2 {
		t.Errorf("throughput %+v", r)
	}
	for _, tc := range []struct {
		relErr float64
		err    string
	}{{1e-3, "exceeds"}, {math.Inf(1), "must propagate"}, {math.NaN(), "must propagate"}} {
		r := Measure(fakeCase("bad", time.Millisecond, tc.relErr, false), Options{})
		if r.OK || !strings.Contains(r.Error, tc.err) {
			t.Errorf("relErr %v: ok=%v error=%q", tc.relErr, r.OK, r.Error)
		}
	}
}

// TestMeasureRunsUntilMinTime: the timed runs go on until their device
// time adds up to MinTime, as the runs report it (a fake clock here), or
// MaxReps runs are done; the record says how much they took.
func TestMeasureRunsUntilMinTime(t *testing.T) {
	for _, tc := range []struct {
		minTime time.Duration
		maxReps int
		want    int
	}{{50 * time.Millisecond, 1_000_000, 50}, {2 * time.Second, 1_000_000, 2000}, {2 * time.Second, 0, 200}, {2 * time.Second, 300, 300}} {
		r := Measure(fakeCase("a", time.Millisecond, 0, false), Options{MinReps: 1, MaxReps: tc.maxReps, MinTime: tc.minTime})
		if r.Reps != tc.want || r.TotalMS != float64(tc.want) {
			t.Errorf("MinTime %v, MaxReps %d: %d runs of 1ms, %g ms in all; want %d", tc.minTime, tc.maxReps, r.Reps, r.TotalMS, tc.want)
		}
	}
}

func TestRunSpeedupsAndVariants(t *testing.T) {
	suite := Suite{Name: "fake", Cases: func(*engine.Device, string) ([]Case, func(), error) {
		return []Case{fakeCase("base", 4*time.Millisecond, 0, true), fakeCase("fast", time.Millisecond, 0, false),
			fakeCase("slow", 8*time.Millisecond, 0, false)}, nil, nil
	}}
	dev := &engine.Device{Info: engine.Info{ID: "cpu", Name: "test", Kind: engine.CPU, PeakGFLOPS: 10, PeakGBps: 1}}
	recs, err := Run(suite, dev, []string{"1"}, Options{MinTime: time.Millisecond})
	if err != nil || len(recs) != 3 {
		t.Fatalf("%v %v", recs, err)
	}
	if !recs[0].OnCPU {
		t.Errorf("a record of the CPU backend is not marked on_cpu: %+v", recs[0])
	}
	if recs[1].Speedup != 4 || recs[1].PctOfBaseline != 400 || recs[2].Speedup != 0.5 || recs[0].Baseline != "base" {
		t.Errorf("speedups %+v", recs)
	}
	if recs[1].PctPeakGFLOPS != 20 || recs[1].PctPeakGBps != 100 {
		t.Errorf("peaks %+v", recs[1])
	}
	if tab := Table(recs); !strings.Contains(tab, "4.00x") || !strings.Contains(tab, "(baseline)") {
		t.Errorf("table:\n%s", tab)
	}
	if md := Markdown(recs); !strings.Contains(md, "| fake | cpu | 1 | fast |") || !strings.Contains(md, "| ---: |") {
		t.Errorf("markdown:\n%s", md)
	}
	cw := fakeCase("tc", time.Millisecond, 0, false)
	cw.CompareWith = "slow"
	suite2 := Suite{Name: "fake2", Cases: func(*engine.Device, string) ([]Case, func(), error) {
		return []Case{fakeCase("base", 4*time.Millisecond, 0, true), fakeCase("slow", 8*time.Millisecond, 0, false), cw}, nil, nil
	}}
	recs2, _ := Run(suite2, dev, []string{"1"}, Options{Variants: []string{"tc"}, MinTime: time.Millisecond})
	if len(recs2) != 3 || recs2[2].Baseline != "slow" || recs2[2].Speedup != 8 {
		t.Errorf("CompareWith: %+v", recs2)
	}
	recs, _ = Run(suite, dev, []string{"1"}, Options{Variants: []string{"slow"}, MinTime: time.Millisecond})
	if len(recs) != 2 || recs[0].Variant != "base" || recs[1].Variant != "slow" {
		t.Errorf("variant filter kept %v", recs)
	}
	if Failed(recs) != nil {
		t.Error("Failed on passing records")
	}
	amended := suite
	amended.Amend = func(recs []Record) []Record {
		recs[1].Device = "elsewhere"
		return recs
	}
	recs, _ = Run(amended, dev, []string{"1", "2"}, Options{MinTime: time.Millisecond})
	if len(recs) != 6 || recs[1].Device != "elsewhere" || recs[1].Speedup != 4 || recs[4].Device != "elsewhere" || recs[4].Size != "2" {
		t.Errorf("Amend, after the speedups, on each size: %+v", recs)
	}
}

// TestReadJSONAmends: records read back pass through their suite's Amend,
// each suite's in their order; other suites' are read as they are.
func TestReadJSONAmends(t *testing.T) {
	Register(Suite{Name: "amended-on-read", Amend: func(recs []Record) []Record {
		for i := range recs {
			recs[i].Device = fmt.Sprintf("amended %d", i)
		}
		return recs
	}})
	path := filepath.Join(t.TempDir(), "recs.json")
	recs := []Record{{Suite: "amended-on-read", Variant: "a", Device: "cpu"}, {Suite: "other", Variant: "b", Device: "cpu"}, {Suite: "amended-on-read", Variant: "c", Device: "cpu"}}
	if err := WriteJSON(path, recs); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJSON(path)
	if err != nil || len(got) != 3 || got[0].Device != "amended 0" || got[1].Device != "cpu" || got[2].Device != "amended 1" || got[2].Variant != "c" {
		t.Errorf("%+v, %v", got, err)
	}
}

func TestCompare(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, tc := range []struct {
		got, want []float32
		err       float64
		worst     int
		nonFinite int
	}{
		{[]float32{1, 2}, []float32{1, 2}, 0, -1, 0},
		{[]float32{1, 2.5}, []float32{1, 2}, 0.25, 1, 0},
		{[]float32{0.5}, []float32{0}, 0.5, 0, 0},
		{[]float32{1, nan}, []float32{1, 1}, math.Inf(1), 1, 1},
		{[]float32{1}, []float32{nan}, math.Inf(1), 0, 0},
		{[]float32{nan, 3}, []float32{nan, 3}, 0, -1, 1},
		{[]float32{inf}, []float32{inf}, 0, -1, 1},
		{[]float32{-inf}, []float32{inf}, math.Inf(1), 0, 1},
		{[]float32{1}, []float32{1, 2}, math.Inf(1), -1, 0},
	} {
		c := Compare(tc.got, tc.want)
		if c.MaxRelErr != tc.err || c.Worst != tc.worst || c.NonFinite != tc.nonFinite {
			t.Errorf("Compare(%v, %v) = %+v, want err %v at %d, %d non-finite", tc.got, tc.want, c, tc.err, tc.worst, tc.nonFinite)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in  string
		out int
	}{{"4096", 4096}, {"64K", 64 << 10}, {"256M", 256 << 20}, {"1G", 1 << 30}, {"1GiB", 1 << 30}, {"1.5k", 1536}} {
		if got, err := ParseBytes(tc.in); err != nil || got != tc.out {
			t.Errorf("ParseBytes(%q) = %d, %v", tc.in, got, err)
		}
	}
	for _, bad := range []string{"", "0", "-1", "x", "12Q", "1e30", "NaN", "nanK", "+Inf", "-Inf", "0.5", "0.0001K"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) accepted", bad)
		}
	}
}

func TestJSONRoundTripIsAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	recs := []Record{{Suite: "s", Variant: "v", Device: "cpu", Params: Params{"bytes": 4}, OK: true, MedianMS: 1.5}}
	if err := WriteJSON(path, recs); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJSON(path)
	if err != nil || len(got) != 1 || got[0].MedianMS != 1.5 || got[0].Params["bytes"] != 4.0 {
		t.Fatalf("%+v %v", got, err)
	}
	if err := WriteJSON(filepath.Join(dir, "missing", "r.json"), recs); err == nil {
		t.Error("write into a missing dir succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left files behind: %v", entries)
	}
	data, _ := os.ReadFile(path)
	for _, key := range []string{`"suite"`, `"variant"`, `"device"`, `"params"`, `"median_ms"`, `"max_rel_err"`, `"ok"`, `"commit"`, `"date"`, `"device_name"`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
}

// TestReadJSONErrors: what is not a file of records is refused, naming the
// file and the problem.
func TestReadJSONErrors(t *testing.T) {
	const rec = `{"suite": "copy", "variant": "memcpy", "device": "cpu", "median_ms": 1}`
	for _, tc := range []struct{ text, want string }{
		{"[" + rec + "]\n[]", "invalid character '[' after top-level value"},
		{"[" + rec + "] x", "invalid character 'x' after top-level value"},
		{`{"suite": "copy"}`, "cannot unmarshal object"},
		{"[" + rec + `, {"src": 0, "dst": 1, "gbps": 40}]`, `record 1 has suite "", variant "" and device "": a bench record names all three`},
		{`[{"suite": "copy", "variant": "memcpy", "median_ms": "fast"}]`, "cannot unmarshal string into Go struct field Record.median_ms"},
		{"", "unexpected end of JSON input"},
	} {
		path := filepath.Join(t.TempDir(), "r.json")
		if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadJSON(path); err == nil || !strings.Contains(err.Error(), "bench: "+path+": ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n%v\nwant %q", tc.text, err, tc.want)
		}
	}
	for _, ok := range []string{"[" + rec + "]\n\t ", "[]", "null"} {
		path := filepath.Join(t.TempDir(), "r.json")
		os.WriteFile(path, []byte(ok), 0o644)
		if _, err := ReadJSON(path); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	if _, err := ReadJSON(t.TempDir()); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory: %v", err)
	}
}

// FuzzReadJSON: whatever a file holds, ReadJSON returns records or an
// error that names the file; the tables of what it returns never panic,
// and the records write and read back the same.
func FuzzReadJSON(f *testing.F) {
	for _, name := range []string{"h200-kmeans-3xtf32-stream.json", "h200-fastmath-cuda-0.json", "h200-spgemm-phases-rmat-06.json"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "docs", "results", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`[{"suite": "s", "variant": "v", "baseline": "v", "device": "cpu", "speedup": 1, "pct_peak_gbps": 120, "error": "x", "params": {"n": 1e308, "s": [1, {"a": null}]}}]`))
	f.Add([]byte(`[{"suite": "s", "variant": "v", "device": "cpu"}] []`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "in.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		recs, err := ReadJSON(path)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "bench: "+path+": ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		Table(recs)
		Markdown(recs)
		out := filepath.Join(dir, "out.json")
		if err := WriteJSON(out, recs); err != nil {
			t.Fatal(err)
		}
		back, err := ReadJSON(out)
		if err != nil || !reflect.DeepEqual(back, recs) {
			t.Fatalf("read back differently (%v):\n%+v\n%+v", err, back, recs)
		}
	})
}

func TestLookupUnknown(t *testing.T) {
	Register(Suite{Name: "known"})
	if _, err := Lookup("nope"); err == nil || !strings.Contains(err.Error(), "known") {
		t.Errorf("Lookup: %v", err)
	}
}

// TestPeakOfThePrecision: a tensor-core record's share of peak is of the
// tensor cores' peak at its precision, never of the FP32 lanes'.
func TestPeakOfThePrecision(t *testing.T) {
	dev := engine.Info{PeakGFLOPS: 60_000, TensorPeaks: map[string]float64{"bf16": 1_000_000}}
	for _, tc := range []struct {
		precision string
		want      float64
	}{{"", 50}, {"fp32", 50}, {"bf16", 3}, {"tf32", 0}} {
		r := Record{GFLOPS: 30_000, Params: Params{"precision": tc.precision}}
		fillPeaks(&r, Case{}, dev)
		if r.PctPeakGFLOPS != tc.want {
			t.Errorf("%q: %v%% of peak, want %v", tc.precision, r.PctPeakGFLOPS, tc.want)
		}
	}
	r := Record{GFLOPS: 30_000, GBps: 10, Params: Params{"precision": "fp32"}}
	fillPeaks(&r, Case{NoRoof: true}, engine.Info{PeakGFLOPS: 60_000, PeakGBps: 20})
	if r.PctPeakGFLOPS != 0 || r.PctPeakGBps != 0 || tableRow(r, "")[7] != "-" {
		t.Errorf("a case without a roof got a share of one: %+v, %% roof %q", r, tableRow(r, "")[7])
	}
}
