package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gpulab/engine/bench"
)

// commandPaths are the lab commands that take flags, as typed (the
// subcommands of sparse and lfm2 each their own). TestFlagTable checks
// that every command the usage texts list is here.
var commandPaths = [][]string{
	{"devices"}, {"p2p"}, {"bench"}, {"report"}, {"plot"}, {"sparse", "info"}, {"sparse", "fetch"}, {"sparse", "phases"},
	{"kmeans"}, {"grade"}, {"profile"}, {"nbrun"}, {"sqfd"}, {"lfm2", "pull"}, {"lfm2", "run"}, {"lfm2", "logits"}, {"lfm2", "bench"},
	{"copies"}, {"jupyter-config"}, {"exercise-fill"},
}

// The values every numeric flag is tried with, by class.
const (
	classNaN      = "NaN"
	classPlusInf  = "+Inf"
	classMinusInf = "-Inf"
	classNegative = "negative"
	classZero     = "zero"
	classHuge     = "huge"
)

var numericClasses = []string{classNaN, classPlusInf, classMinusInf, classNegative, classZero, classHuge}

// numericFlags are the classes of values that each numeric flag of each
// command accepts, written by hand from what the flag means; every other
// class must be a usage error that names the flag and the value. A
// numeric flag that is not here fails the test.
var numericFlags = map[string]string{
	"p2p --size":                "",                          // bytes, at least 1
	"p2p --reps":                "",                          // 1 to maxRuns
	"bench --n":                 "",                          // 1 to maxCount (0 by default: not given)
	"bench --d":                 "",                          // 1 to maxCount
	"bench --k":                 "",                          // 1 to maxCount
	"bench --iters":             "",                          // 1 to maxRuns
	"bench --stream-batch":      classZero,                   // 0 (resident) to maxCount
	"bench --warmup":            "",                          // 1 to maxRuns
	"bench --reps":              "",                          // 1 to maxRuns
	"bench --min-time":          "",                          // above 0, at most maxWait
	"sparse phases --window":    "",                          // 1024 to 32768 (0 by default: the engine's)
	"kmeans --k":                "",                          // 1 to maxCount (0 by default: not given)
	"kmeans --seed":             classZero + " " + classHuge, // 0 to 2^64-1
	"kmeans --iters":            "",                          // 1 to maxRuns
	"kmeans --tol":              classZero + " " + classHuge, // finite, at least 0
	"kmeans --stream-batch":     classZero,                   // 0 (resident) to maxCount
	"grade --timeout":           "",                          // above 0, at most maxWait
	"grade --memory":            "",                          // bytes, at least 64M
	"nbrun --timeout":           "",                          // above 0, at most maxWait
	"sqfd --alpha":              classHuge,                   // finite, above 0
	"lfm2 run --max-new":        "",                          // 1 to maxCount
	"lfm2 run --temperature":    classZero + " " + classHuge, // finite, at least 0 (0: greedy)
	"lfm2 run --top-p":          classZero,                   // 0 to 1
	"lfm2 run --seed":           classZero + " " + classHuge, // 0 to 2^64-1
	"lfm2 bench --batch":        "",                          // 1 to maxCount
	"lfm2 bench --seq":          "",                          // 1 to maxCount
	"lfm2 bench --reps":         "",                          // 1 to maxRuns
	"lfm2 bench --decode":       classZero,                   // 0 (none) to maxCount
	"lfm2 bench --micro-tokens": classZero,                   // 0 (the engine's default) to maxCount
	"lfm2 bench --seed":         classZero + " " + classHuge, // 0 to 2^64-1
	"lfm2 bench --tol":          classZero + " " + classHuge, // finite, at least 0
}

// sampleValue is the value of a class for a flag of a kind (numericKind).
func sampleValue(kind, class string) string {
	switch class {
	case classNaN:
		return "NaN"
	case classPlusInf:
		return "+Inf"
	case classMinusInf:
		return "-Inf"
	}
	if kind == "duration" {
		return map[string]string{classNegative: "-1s", classZero: "0s", classHuge: "2562047h"}[class]
	}
	if kind == "float" && class == classHuge {
		return "1e300"
	}
	return map[string]string{classNegative: "-1", classZero: "0", classHuge: "9223372036854775807"}[class]
}

// numericKind is the kind of number a flag takes (int, float, duration,
// bytes), or "" for a flag that takes no number.
func numericKind(v flag.Value) string {
	g, ok := v.(flag.Getter)
	if !ok {
		return ""
	}
	switch g.Get().(type) {
	case time.Duration:
		return "duration"
	case byteSize:
		return "bytes"
	case int, int64, uint, uint64:
		return "int"
	case float64:
		return "float"
	}
	return ""
}

// commandFlags runs a command with --help and returns the flags of the
// flag sets it made.
func commandFlags(path []string) []*flag.Flag {
	var sets []*flag.FlagSet
	flagSetMade = func(fs *flag.FlagSet) { sets = append(sets, fs) }
	defer func() { flagSetMade = nil }()
	lab(append(slices.Clone(path), "--help")...)
	var flags []*flag.Flag
	for _, fs := range sets {
		fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f) })
	}
	return flags
}

// tryFlag runs the command at path with --name=value (and --help, so that
// nothing runs past the parsing). It reports whether the value was
// refused, with the last line of stderr, and fails t where a refusal is
// not a usage error naming the flag, the value and what is allowed.
func tryFlag(t *testing.T, path []string, name, value string) (refused bool, stderr string) {
	t.Helper()
	args := append(slices.Clone(path), "--"+name+"="+value, "--help")
	code, _, errs := lab(args...)
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	last := lines[len(lines)-1] // lab CMD: the error
	if !strings.Contains(errs, "invalid value") {
		return false, last
	}
	if want := `invalid value "` + value + `" for flag -` + name + `: `; code != 2 || !strings.Contains(last, want) || !strings.Contains(last, ": want ") {
		t.Errorf("lab %s: exit %d, %q; want exit 2 and %q, then what is allowed", strings.Join(args, " "), code, last, want)
	}
	return true, last
}

// TestFlagTable tries NaN, +Inf, -Inf, a negative number, zero and a huge
// number on every numeric flag of every command, an unknown word on every
// flag with a fixed set of choices, and every form of device id on every
// --device flag. What is refused is a usage error (exit 2) that names the
// flag, the value and what is allowed, before the command does anything.
func TestFlagTable(t *testing.T) {
	checkCommandPaths(t)
	seen := map[string]bool{}
	deviceIDs := map[string]string{devCPU: "cpu", devCUDA: "cuda:0", devOpenCL: "opencl:0:0", devAll: devAll, "": "cuda:x"}
	for _, path := range commandPaths {
		cmd := strings.Join(path, " ")
		for _, f := range commandFlags(path) {
			key := cmd + " --" + f.Name
			switch v := f.Value.(type) {
			case *choiceValue:
				if refused, errs := tryFlag(t, path, f.Name, "nope"); !refused || !strings.Contains(errs, orList(v.choices)) {
					t.Errorf("%s nope: refused %v, %q; want the choices %s", key, refused, errs, orList(v.choices))
				}
				for _, c := range v.choices {
					if refused, errs := tryFlag(t, path, f.Name, c); refused {
						t.Errorf("%s %s: %s", key, c, errs)
					}
				}
				continue
			case *listValue:
				for _, value := range []string{"nope", v.choices[0] + ",nope", ","} {
					if refused, errs := tryFlag(t, path, f.Name, value); !refused || !strings.Contains(errs, orList(v.choices)) {
						t.Errorf("%s %s: refused %v, %q; want the choices %s", key, value, refused, errs, orList(v.choices))
					}
				}
				if refused, errs := tryFlag(t, path, f.Name, strings.Join(v.choices, ",")); refused {
					t.Errorf("%s %s: %s", key, strings.Join(v.choices, ","), errs)
				}
				continue
			case *deviceValue:
				for form, id := range deviceIDs {
					if refused, errs := tryFlag(t, path, f.Name, id); refused == slices.Contains(v.choices, form) {
						t.Errorf("%s %s: refused %v (takes %v): %s", key, id, refused, v.choices, errs)
					}
				}
				continue
			}
			kind := numericKind(f.Value)
			if kind == "" {
				continue
			}
			seen[key] = true
			accepted, ok := numericFlags[key]
			if !ok {
				t.Errorf("%s takes a number (%s) but is not in numericFlags: say which of %v it accepts", key, kind, numericClasses)
				continue
			}
			for _, class := range numericClasses {
				value := sampleValue(kind, class)
				refused, errs := tryFlag(t, path, f.Name, value)
				if want := !slices.Contains(strings.Fields(accepted), class); refused != want {
					t.Errorf("%s %s (%s): refused %v, want %v: %s", key, value, class, refused, want, errs)
				}
			}
		}
	}
	for key := range numericFlags {
		if !seen[key] {
			t.Errorf("numericFlags has %s, which no command has as a numeric flag", key)
		}
	}
}

// checkCommandPaths fails t if a command that a usage text lists, or a
// flag set made without newFlagSet, escapes the table test.
func checkCommandPaths(t *testing.T) {
	t.Helper()
	have := map[string]bool{}
	for _, p := range commandPaths {
		have[strings.Join(p, " ")] = true
	}
	for _, u := range []struct{ text, prefix string }{{usage, ""}, {sparseUsage, "sparse "}, {lfm2Usage, "lfm2 "}} {
		for _, m := range regexp.MustCompile(`(?m)^\s+lab `+u.prefix+`([a-z0-9-]+)`).FindAllStringSubmatch(u.text, -1) {
			if cmd := u.prefix + m[1]; !have[cmd] && !(u.prefix == "" && (m[1] == "sparse" || m[1] == "lfm2")) {
				t.Errorf("lab %s is not in commandPaths", cmd)
			}
		}
	}
	files, _ := filepath.Glob("*.go")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(file, "_test.go") && file != "flagvalues.go" && strings.Contains(string(data), "flag.NewFlagSet(") {
			t.Errorf("%s makes a flag set with flag.NewFlagSet: use newFlagSet, which the flag table test sees", file)
		}
	}
}

// TestBenchHonoursMinTime: every case of a suite runs until --min-time of
// device time is spent, however fast one run is (a copy of 64 KiB takes
// a few microseconds, so bench.Options' default of at most 200 runs would
// end it after a millisecond).
func TestBenchHonoursMinTime(t *testing.T) {
	js := filepath.Join(t.TempDir(), "copy.json")
	const minTime = 100 * time.Millisecond
	code, _, errs := lab("bench", "copy", "--device", "cpu", "--size", "64K", "--warmup", "1", "--reps", "1", "--min-time", minTime.String(), "--json", js)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	recs, err := bench.ReadJSON(js)
	if err != nil || len(recs) == 0 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	for _, r := range recs {
		if spent := time.Duration(r.TotalMS * float64(time.Millisecond)); spent < minTime {
			t.Errorf("%s: %d runs took %v of device time, less than --min-time %v", r.Variant, r.Reps, spent, minTime)
		}
	}
}
