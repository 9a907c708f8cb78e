package lfm2

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"gpulab/engine/bench"
	"gpulab/engine/plot"
)

// moeRecord is a synthetic moe-schedule record of a schedule at tokens and
// skew, with a median time and each kernel's theoretical occupancy.
func moeRecord(device string, tokens, skew int, schedule string, ms, gateUpOcc, downOcc float64) bench.Record {
	kernels := map[string][2]string{
		schedulePerExpert: {"moe_gate_up_expert", "moe_down_expert"},
		scheduleStatic:    {"moe_gate_up", "moe_down"},
		scheduleQueue:     {"moe_gate_up_queue", "moe_down_queue"},
	}[schedule]
	return bench.Record{
		Suite: moeScheduleSuite, Variant: schedule, Device: device, DeviceName: "GPU " + device,
		Size: fmt.Sprintf("moe:tokens=%d,skew=%d", tokens, skew), MedianMS: ms, OK: true, GBps: 1000, PctPeakGBps: 30,
		Params: bench.Params{"tokens": tokens, "skew": skew, "topk": 4, "launches": 2, "wave_fill": 90.0,
			"gate_up_kernel": kernels[0], "gate_up_regs": 128, "gate_up_blocks_per_sm": 2, "gate_up_occupancy": gateUpOcc,
			"down_kernel": kernels[1], "down_regs": 128, "down_blocks_per_sm": 2, "down_occupancy": downOcc},
	}
}

// moeRecords is one device's records: each (tokens, skew, per-expert ms,
// static ms, queue ms), every kernel at 25% theoretical occupancy.
func moeRecords(device string, rows ...[5]float64) []bench.Record {
	var recs []bench.Record
	for _, r := range rows {
		for i, schedule := range moeSchedules {
			recs = append(recs, moeRecord(device, int(r[0]), int(r[1]), schedule, r[2+i], 25, 25))
		}
	}
	return recs
}

func TestMoESeries(t *testing.T) {
	// Out of order: the lines still run from few tokens to many.
	recs := moeRecords("cuda:0", [5]float64{1024, 0, 10, 8, 8}, [5]float64{64, 0, 0.5, 0.25, 0.4}, [5]float64{64, 90, 1, 0.5, 0.5})
	series := moeSeries(moeRuns(recs)[0])
	var names []string
	for _, s := range series {
		names = append(names, s.Name)
	}
	want := []string{"per-expert, even load", "per-expert, 90% skewed", "static, even load", "static, 90% skewed",
		"queue, even load", "queue, 90% skewed"}
	if !slices.Equal(names, want) {
		t.Fatalf("series %q, want %q", names, want)
	}
	// per-expert, even: 64 tokens in 0.5 ms, 1024 in 10 ms.
	if s := series[0]; !slices.Equal(s.X, []float64{64, 1024}) || !slices.Equal(s.Y, []float64{128000, 102400}) {
		t.Errorf("%s: X %v, Y %v", s.Name, s.X, s.Y)
	}
	// static, 90% skewed: 64 tokens in 0.5 ms.
	if s := series[3]; !slices.Equal(s.X, []float64{64}) || !slices.Equal(s.Y, []float64{128000}) {
		t.Errorf("%s: X %v, Y %v", s.Name, s.X, s.Y)
	}
	// Four loads make twelve lines: only the even and the most skewed stay.
	var many [][5]float64
	for _, skew := range []float64{60, 0, 90, 30} {
		many = append(many, [5]float64{64, skew, 1, 1, 1})
	}
	series = moeSeries(moeRuns(moeRecords("cuda:0", many...))[0])
	if len(series) != 6 || series[0].Name != "per-expert, even load" || series[1].Name != "per-expert, 90% skewed" {
		t.Errorf("%d series, first %q and %q", len(series), series[0].Name, series[1].Name)
	}
}

func TestSpansDecades(t *testing.T) {
	for _, tc := range []struct {
		x, y []float64
		logX bool
		logY bool
	}{
		{[]float64{64, 1024}, []float64{1e5, 9e5}, true, false},
		{[]float64{64, 256}, []float64{1e5, 1e6}, false, true},
		{[]float64{0, 1024}, []float64{1, 1}, false, false}, // not positive: no log axis
	} {
		s := []plot.Series{{X: tc.x, Y: tc.y}}
		if moeSpansDecades(s, true) != tc.logX || moeSpansDecades(s, false) != tc.logY {
			t.Errorf("x %v, y %v: log x %v, log y %v; want %v, %v", tc.x, tc.y, moeSpansDecades(s, true), moeSpansDecades(s, false), tc.logX, tc.logY)
		}
	}
}

func TestDecadeBars(t *testing.T) {
	for _, tc := range []struct {
		values []float64
		log    bool
	}{
		{[]float64{251, 261, 10543}, true},
		{[]float64{0.05, 118}, true},
		{[]float64{1, 9.9}, false},
		{[]float64{0, 118}, false}, // a bar of 0: no log axis
		{nil, false},
	} {
		if got := spansDecades(tc.values); got != tc.log {
			t.Errorf("spansDecades(%v) = %v, want %v", tc.values, got, tc.log)
		}
		if len(tc.values) == 0 {
			continue
		}
		labels := make([]string, len(tc.values))
		for i := range labels {
			labels[i] = fmt.Sprint(i)
		}
		html, err := decadeBars("t", "ms", labels, tc.values).HTML()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(html), `"type":"log"`); got != tc.log {
			t.Errorf("decadeBars(%v): a log axis %v, want %v", tc.values, got, tc.log)
		}
	}
}

func TestMoEScheduleFigure(t *testing.T) {
	recs := moeRecords("cuda:0", [5]float64{1024, 0, 10, 8, 8}, [5]float64{64, 0, 0.5, 0.25, 0.4})
	recs = append(recs, moeRecords("cuda:1", [5]float64{64, 0, 1, 1, 1})...) // the second device is left out
	if _, err := MoEScheduleFigure(recs).PNG(0, 0); err != nil {
		t.Errorf("figure: %v", err)
	}
	failed := moeRecord("cuda:0", 64, 0, scheduleQueue, 1, 25, 25)
	failed.OK = false
	for _, recs := range [][]bench.Record{nil, {failed}} {
		if _, err := MoEScheduleFigure(recs).PNG(0, 0); err == nil || !strings.Contains(err.Error(), "moe-schedule") && !strings.Contains(err.Error(), "series") {
			t.Errorf("figure of %d records without a passing one: %v, want an error", len(recs), err)
		}
	}
}

func TestSkewEffect(t *testing.T) {
	for _, tc := range []struct {
		even, skewed float64
		want         string
	}{
		{2, 4, "widens that lead"},
		{4, 2, "narrows that lead"},
		{1.10, 1.10, "leaves that lead unchanged (within 2%)"},
		{1.10, 1.12, "leaves that lead unchanged (within 2%)"},
		{1.10, 1.08, "leaves that lead unchanged (within 2%)"},
		{1.10, 1.13, "widens that lead"},
		{1.10, 1.07, "narrows that lead"},
	} {
		if got := skewEffect(tc.even, tc.skewed); got != tc.want {
			t.Errorf("skewEffect(%g, %g) = %q, want %q", tc.even, tc.skewed, got, tc.want)
		}
	}
}

func TestMoEScheduleStory(t *testing.T) {
	// 64 tokens even: per-expert 2 ms, static 1, queue 1.25; skewed 4, 1, 1;
	// 1024 tokens even: 10, 8, 8.1.
	recs := moeRecords("cuda:0", [5]float64{64, 0, 2, 1, 1.25}, [5]float64{64, 90, 4, 1, 1}, [5]float64{1024, 0, 10, 8, 8.1})
	mixed := moeRecords("cuda:0", [5]float64{64, 0, 2, 1, 1.1}, [5]float64{1024, 0, 10, 8.8, 8})
	mixed[1].Params["down_occupancy"] = 37.5
	mixed[0].Params["wave_fill"], mixed[3].Params["wave_fill"] = 48.4, 91.2 // the per-expert records
	tied := moeRecords("cuda:0", [5]float64{64, 0, 2, 1, 1.01})
	failed := moeRecords("cuda:0", [5]float64{64, 0, 2, 1, 1})
	failed[2].OK, failed[2].Error = false, "check: max relative error 0.5"
	for _, tc := range []struct {
		name string
		recs []bench.Record
		want []string
	}{
		{"none", nil, []string{"No moe-schedule records"}},
		{"three sizes", recs, []string{
			"### The MoE layer step on GPU cuda:0 (cuda:0)",
			"| 64 | even load | per-expert | 2 ms | 32 k | 1000 | 30% | 2 | 90% | 1.00× |",
			"| 64 | even load | queue | 1.25 ms | 51.2 k | 1000 | 30% | 2 | 90% | 1.60× |",
			"- 64 tokens, even load: **static** is fastest (1 ms, 64 k tokens/s): 2.00× the per-expert schedule's speed, " +
				"1.25× the queue schedule's speed.",
			"The faster persistent schedule runs the step 4.00× as fast as one grid per expert at 64 tokens, 90% skewed, " +
				"and 1.25× at 1024 tokens, even load.",
			"At 64 tokens the skewed load widens that lead: 2.00× with an even load, 4.00× 90% skewed.",
			"The atomic queue is never faster than the static turn, and takes up to 25% longer (64 tokens, even load)",
			"Every kernel has the same ceiling, 25.0%",
			"fills 90% of the warp slots it holds, the persistent grids 90%",
			"- 64 tokens, 90% skewed: **static** is fastest (1 ms, 64 k tokens/s): 4.00× the per-expert schedule's speed, " +
				"level with the queue schedule.",
			"**Against the devlog's 23.4% → 78.3%.**", "*achieved* occupancy", "*theoretical*",
			"Here the ceiling, 25.0% at most, is below the log's achieved 78.3%",
		}},
		{"mixed", mixed, []string{
			"the static turn takes up to 10% longer (1024 tokens, even load), the queue up to 10% longer (64 tokens, even load)",
			"The ceilings range from 25.0% to 37.5%.",
			"one grid per expert fills 48–91% of the warp slots it holds",
		}},
		{"tied", tied, []string{"within 2% of each other at every size",
			"The faster persistent schedule runs the step 2.00× as fast as one grid per expert."}},
		{"failed", failed, []string{"**Failed, and left out above:**", "- queue at moe:tokens=64,skew=0: check: max relative error 0.5"}},
	} {
		story := MoEScheduleStory(tc.recs)
		for _, w := range tc.want {
			if !strings.Contains(story, w) {
				t.Errorf("%s: the story lacks %q:\n%s", tc.name, w, story)
			}
		}
	}
	if story := MoEScheduleStory(failed); strings.Contains(story, "| queue |") {
		t.Errorf("a failed record is in the table:\n%s", story)
	}
	// Records read back from JSON (numbers as float64) tell the same story.
	data, err := json.Marshal(recs)
	if err != nil {
		t.Fatal(err)
	}
	var back []bench.Record
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if MoEScheduleStory(back) != MoEScheduleStory(recs) {
		t.Errorf("the story of records read back from JSON differs:\n%s\nwant\n%s", MoEScheduleStory(back), MoEScheduleStory(recs))
	}
	two := MoEScheduleStory(append(moeRecords("cuda:1", [5]float64{64, 0, 1, 1, 1}), recs...))
	if strings.Count(two, "### The MoE layer step on") != 2 || strings.Index(two, "(cuda:1)") > strings.Index(two, "(cuda:0)") {
		t.Errorf("two devices, in the order they come:\n%s", two)
	}
}
