package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
)

// Every number and every choice that a lab command takes is a typed flag
// value that checks what it is given as fs.Parse reads it: NaN, an
// infinity, a negative count, a zero time or an unknown variant is a usage
// error (exit 2) that names the flag, the value and what is allowed
// (`invalid value "NaN" for flag -tol: want a finite number of at least 0`),
// before the command does anything. A command gets the check by declaring
// its flag with one of the functions below; flags_test.go tries NaN, ±Inf,
// a negative number, zero and a huge number on every numeric flag of every
// command.

// Bounds that the commands' flags share.
const (
	// maxCount bounds sizes: points, dimensions, clusters, rows, tokens,
	// sequences (what a 32-bit index reaches).
	maxCount = math.MaxInt32
	// maxRuns bounds repetitions: timed and warm-up runs, iterations.
	maxRuns = 1_000_000
	// maxWait bounds time limits and minimum times.
	maxWait = 24 * time.Hour
)

// flagSetMade, when set, is called with every flag set newFlagSet makes:
// the flag table test collects them.
var flagSetMade func(*flag.FlagSet)

// newFlagSet is a command's flag set: its errors are returned (and
// printed to stderr with the usage), never exits.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if flagSetMade != nil {
		flagSetMade(fs)
	}
	return fs
}

// numeric is the types of the numeric flags.
type numeric interface {
	int | uint64 | float64 | time.Duration | byteSize
}

// numberValue is a numeric flag that parse reads and checks: its error
// says what is allowed (the flag package puts the flag and the value
// before it). A default outside what parse takes means "not given".
type numberValue[T numeric] struct {
	p     *T
	parse func(string) (T, error)
}

// numberFlag defines a numeric flag with a default value that parse reads
// and checks.
func numberFlag[T numeric](fs *flag.FlagSet, name string, value T, parse func(string) (T, error), usage string) *T {
	numberVar(fs, &value, name, parse, usage)
	return &value
}

// numberVar defines a numeric flag stored in *p (its default) that parse
// reads and checks.
func numberVar[T numeric](fs *flag.FlagSet, p *T, name string, parse func(string) (T, error), usage string) {
	fs.Var(&numberValue[T]{p, parse}, name, usage)
}

func (v *numberValue[T]) Set(s string) error {
	x, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.p = x
	return nil
}

func (v *numberValue[T]) String() string {
	if v.p == nil { // the zero value PrintDefaults compares defaults with
		var zero T
		return fmt.Sprint(zero)
	}
	return fmt.Sprint(*v.p)
}

// Get is the flag's value (flag.Getter).
func (v *numberValue[T]) Get() any { return *v.p }

// ints reads whole numbers from min to max.
func ints(min, max int) func(string) (int, error) {
	return func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil || n < min || n > max {
			return 0, fmt.Errorf("want a whole number from %d to %d", min, max)
		}
		return n, nil
	}
}

// seeds reads every whole number from 0 to 2^64-1, in decimal or 0x
// hexadecimal.
func seeds(s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("want a whole number from 0 to %d", uint64(math.MaxUint64))
	}
	return n, nil
}

// floatRange is what a float flag takes: finite numbers from min (above
// min where open) to max.
type floatRange struct {
	min, max float64
	open     bool
}

// The ranges of the commands' float flags.
var (
	nonNegative = floatRange{min: 0, max: math.MaxFloat64}
	positive    = floatRange{min: 0, max: math.MaxFloat64, open: true}
	fraction    = floatRange{min: 0, max: 1}
)

func (r floatRange) String() string {
	switch {
	case r.max < math.MaxFloat64 && r.open:
		return fmt.Sprintf("a number above %g and at most %g", r.min, r.max)
	case r.max < math.MaxFloat64:
		return fmt.Sprintf("a number from %g to %g", r.min, r.max)
	case r.open:
		return fmt.Sprintf("a finite number above %g", r.min)
	}
	return fmt.Sprintf("a finite number of at least %g", r.min)
}

// floats reads the numbers of r: never NaN or an infinity.
func floats(r floatRange) func(string) (float64, error) {
	return func(s string) (float64, error) {
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < r.min || r.open && x == r.min || x > r.max {
			return 0, fmt.Errorf("want %v", r)
		}
		return x, nil
	}
}

// durations reads durations above 0 and at most maxWait.
func durations(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > maxWait {
		return 0, fmt.Errorf("want a duration above 0 and at most %s, such as 90s or 15m", shortDuration(maxWait))
	}
	return d, nil
}

// shortDuration is d without its zero minutes and seconds: 24h, not 24h0m0s.
func shortDuration(d time.Duration) string {
	return strings.Replace(strings.Replace(d.String(), "m0s", "m", 1), "h0m", "h", 1)
}

// byteSize is a number of bytes, written as bench.ParseBytes reads it:
// 64M, 1G, 4100.
type byteSize int64

func (n byteSize) String() string {
	for _, u := range []struct {
		suffix string
		size   byteSize
	}{{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(int64(n/u.size), 10) + u.suffix
		}
	}
	return strconv.FormatInt(int64(n), 10)
}

// sizes reads sizes ("64K", "256M", "4G"; bench.ParseBytes) of at least
// min bytes.
func sizes(min byteSize) func(string) (byteSize, error) {
	return func(s string) (byteSize, error) {
		n, err := bench.ParseBytes(s)
		if err != nil {
			return 0, err
		}
		if byteSize(n) < min {
			return 0, fmt.Errorf("want a size of at least %v, such as 4G", min)
		}
		return byteSize(n), nil
	}
}

// choiceValue is a string flag that takes one of a fixed list of words. Its
// default may lie outside them, meaning "not given".
type choiceValue struct {
	p       *string
	choices []string
}

// choiceFlag defines a string flag that takes one of choices.
func choiceFlag(fs *flag.FlagSet, name, value string, choices []string, usage string) *string {
	p := &value
	fs.Var(&choiceValue{p, choices}, name, usage)
	return p
}

func (v *choiceValue) Set(s string) error {
	if !slices.Contains(v.choices, s) {
		return fmt.Errorf("want %s", orList(v.choices))
	}
	*v.p = s
	return nil
}

func (v *choiceValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

// listValue is a flag that takes a comma-separated list of words, each one
// of choices (bench.SplitList's form); nil when not given.
type listValue struct {
	p       *[]string
	choices []string
}

// listFlag defines a flag that takes a comma-separated list of choices.
func listFlag(fs *flag.FlagSet, name string, choices []string, usage string) *[]string {
	p := new([]string)
	fs.Var(&listValue{p, choices}, name, usage)
	return p
}

func (v *listValue) Set(s string) error {
	words := bench.SplitList(s)
	if len(words) == 0 {
		return fmt.Errorf("want a comma-separated list of %s", orList(v.choices))
	}
	for _, w := range words {
		if !slices.Contains(v.choices, w) {
			return fmt.Errorf("%q is not one of them: want a comma-separated list of %s", w, orList(v.choices))
		}
	}
	*v.p = words
	return nil
}

func (v *listValue) String() string {
	if v.p == nil {
		return ""
	}
	return strings.Join(*v.p, ",")
}

// The forms of a device id that a --device flag may take.
const (
	devCPU    = "cpu"
	devCUDA   = "cuda:N"
	devOpenCL = "opencl:P:D"
	devAll    = engine.AllGPUs
)

// deviceValue is a --device flag that takes ids of some forms only
// (choices: devCPU, devCUDA, ...): the id's form is checked as it is
// parsed, whether such a device is here when it is opened.
type deviceValue struct{ choiceValue }

// deviceFlag defines the --device flag, which takes ids of the given forms.
func deviceFlag(fs *flag.FlagSet, value string, forms []string, usage string) *string {
	p := &value
	fs.Var(&deviceValue{choiceValue{p, forms}}, "device", usage)
	return p
}

func (v *deviceValue) Set(s string) error {
	if !slices.Contains(v.choices, deviceForm(s)) {
		return fmt.Errorf("want %s (lab devices lists the ids)", orList(v.choices))
	}
	*v.p = s
	return nil
}

// deviceForm is the form of a device id (devCPU, devCUDA, devOpenCL,
// devAll), or "" if it has none of them.
func deviceForm(id string) string {
	index := func(s string) bool { // a device or platform index: 0, 1, ...
		n, err := strconv.Atoi(s)
		return err == nil && n >= 0 && strconv.Itoa(n) == s
	}
	if id == devCPU || id == devAll {
		return id
	}
	if n, ok := strings.CutPrefix(id, "cuda:"); ok && index(n) {
		return devCUDA
	}
	if pd, ok := strings.CutPrefix(id, "opencl:"); ok {
		if p, d, ok := strings.Cut(pd, ":"); ok && index(p) && index(d) {
			return devOpenCL
		}
	}
	return ""
}

// orList is "a", "a or b", "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
