package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func lab(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestDevicesJSON(t *testing.T) {
	code, out, errs := lab("devices", "--json", "--verbose")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var devs []map[string]any
	if err := json.Unmarshal([]byte(out), &devs); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if devs[0]["id"] != "cpu" {
		t.Errorf("first device %v", devs[0])
	}
	for _, d := range devs {
		for _, key := range []string{"id", "name", "kind", "peak_gflops", "peak_gbps"} {
			if _, ok := d[key]; !ok {
				t.Errorf("device %v lacks %q", d["id"], key)
			}
		}
	}
	if !strings.Contains(errs, "peaks:") {
		t.Errorf("--verbose printed %q", errs)
	}
	t.Log(out, errs)
}

func TestBenchCopyWritesJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "copy.json")
	code, out, errs := lab("bench", "copy", "--device", "cpu", "--size", "1M,4100", "--min-time", "1ms", "--json", path)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "go_parallel") || !strings.Contains(out, "(baseline)") {
		t.Errorf("table:\n%s", out)
	}
	data, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(data), `"suite": "copy"`) {
		t.Errorf("json %s %v", data, err)
	}
	code, out, errs = lab("report", path)
	if code != 0 || !strings.Contains(out, "| copy | cpu | 1M | go_parallel |") || !strings.Contains(out, "- cpu (") {
		t.Errorf("report: exit %d\n%s%s", code, out, errs)
	}
	png := filepath.Join(t.TempDir(), "copy.png")
	if code, out, errs := lab("plot", "--x", "bytes", "--y", "gbps", "--series", "device,variant", "--where", "device=cpu", "--logx", "--title", "copy", "--out", png, path); code != 0 || !strings.Contains(out, "wrote") {
		t.Errorf("plot: exit %d %s %s", code, out, errs)
	}
	if code, _, errs := lab("plot", "--bars", "--title", "speedups", "--out", png, path); code != 0 {
		t.Errorf("plot --bars: exit %d %s", code, errs)
	}
	if info, err := os.Stat(png); err != nil || info.Size() < 1000 {
		t.Errorf("plot wrote %v %v", info, err)
	}
	if code, _, errs := lab("plot", "--x", "bytes", "--where", "device=cuda:9", "--out", png, path); code == 0 || !strings.Contains(errs, `parameter "bytes"`) {
		t.Errorf("plot with nothing left after --where: exit %d, %s", code, errs)
	}
	if code, _, errs := lab("plot", "--x", "nope", "--out", png, path); code == 0 || !strings.Contains(errs, `parameter "nope"`) {
		t.Errorf("plot of a missing parameter: exit %d, %s", code, errs)
	}
	if code, _, errs := lab("report", filepath.Join(t.TempDir(), "missing.json")); code == 0 || !strings.Contains(errs, "missing.json") {
		t.Errorf("report of a missing file: exit %d, %s", code, errs)
	}
}

func TestBadUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"bench", "nope"}, "unknown suite"},
		{[]string{"bench", "copy", "--device", "cuda:42"}, "valid ids: cpu"},
		{[]string{"bench", "copy", "--size", "huge"}, "size \"huge\""},
		{[]string{"bench"}, "no suite"},
		{[]string{"devices", "extra"}, "unexpected"},
		{[]string{"p2p", "--size", "lots"}, `size "lots"`},
		{[]string{"p2p", "extra"}, "unexpected"},
	} {
		code, _, errs := lab(tc.args...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("lab %v: exit %d, stderr %q; want %q", tc.args, code, errs, tc.want)
		}
	}
	if code, out, _ := lab("bench", "--list"); code != 0 || !strings.Contains(out, "copy") {
		t.Errorf("--list: %d %s", code, out)
	}
}
