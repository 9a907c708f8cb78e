package wire

import (
	"fmt"
	"math"
)

// A Task is one launch of an exercise's kernel, everything but the source:
// the grader draws the inputs, the worker compiles the student's source
// with Options and launches Entry over Grid work-groups (CUDA blocks) of
// Block work-items (threads). A Go exercise's task carries only Args.
type Task struct {
	Entry   string   // the kernel's name
	Decl    string   // its declaration, quoted when the source lacks the kernel
	Options []string // compiler options, such as -DTS=16
	Grid    [3]int   // work-groups per dimension (0 counts as 1)
	Block   [3]int   // work-items per group and dimension (0 counts as 1)
	Shared  int      // CUDA dynamic shared memory, bytes
	// Args, in the kernel's order: []float32 and []int32 are inputs, Out
	// an output, int and float32 scalars.
	Args []any
	// MaxOut bounds the total 4-byte words of outputs whose sizes the
	// grader cannot know before the run (a Go exercise's result); 0 when
	// every output is an Out argument.
	MaxOut int
	// Guard asks for guard zones: at least that many 4-byte words before
	// and after every array argument, filled with GuardBits, the kernel
	// given a pointer to the array itself. After the run the worker
	// reports, as one more output after the Out arrays, DamageWords words
	// per array argument (in argument order) saying what changed outside
	// the outputs: in each zone, and inside each input. 0: no zones, no
	// report (a Go task, a rerun under compute-sanitizer, which must see
	// a stray access as out of bounds).
	Guard int
}

// GuardBits fill the guard zones: a quiet NaN whose payload no arithmetic
// produces, so that a write leaves a mark and a read past an input's end
// poisons what it feeds.
const GuardBits uint32 = 0x7fd5a5a5

// MaxGuard bounds Task.Guard.
const MaxGuard = 1 << 20

// DamageWords is the size of one array's damage report: for the zone
// before the array, the inputs' own elements and the zone after it, three
// words each: how many words changed, and the first and last of them, as
// a distance before the start (1: the word just before), an element index,
// and an index past the end (0: the word just after). An output's own
// elements are its result and count as unchanged.
const DamageWords = 9

// Arrays counts the task's array arguments: inputs and Out.
func (t Task) Arrays() int {
	n := 0
	for _, a := range t.Args {
		switch a.(type) {
		case []float32, []int32, Out:
			n++
		}
	}
	return n
}

// Out is an output argument of that many 4-byte elements; the worker fills
// it with all-ones bits before the launch (-1 as an int, NaN as a float),
// so that an element the kernel skips cannot pass.
type Out int

// OutSizes are the sizes of the task's outputs, in order: its Out
// arguments, then the damage report if it asks for guard zones.
func (t Task) OutSizes() []int {
	var n []int
	for _, a := range t.Args {
		if o, ok := a.(Out); ok {
			n = append(n, int(o))
		}
	}
	if t.Guard > 0 {
		n = append(n, DamageWords*t.Arrays())
	}
	return n
}

// Dims returns a 3-D size with zeros as ones.
func Dims(d [3]int) [3]int {
	for i := range d {
		d[i] = max(d[i], 1)
	}
	return d
}

const (
	argF32s byte = 1 + iota
	argI32s
	argOut
	argInt
	argF32
)

// EncodeTask is a Stage payload.
func EncodeTask(t Task) ([]byte, error) {
	var e encoder
	e.str(t.Entry)
	e.str(t.Decl)
	e.u32(uint32(len(t.Options)))
	for _, o := range t.Options {
		e.str(o)
	}
	for _, d := range [][3]int{t.Grid, t.Block} {
		for _, v := range d {
			e.u32(uint32(v))
		}
	}
	e.u32(uint32(t.Shared))
	e.u32(uint32(t.MaxOut))
	e.u32(uint32(t.Guard))
	e.u32(uint32(len(t.Args)))
	for i, a := range t.Args {
		switch v := a.(type) {
		case []float32:
			e.u32(uint32(argF32s))
			e.words(len(v), func(i int) uint32 { return math.Float32bits(v[i]) })
		case []int32:
			e.u32(uint32(argI32s))
			e.words(len(v), func(i int) uint32 { return uint32(v[i]) })
		case Out:
			e.u32(uint32(argOut))
			e.u32(uint32(v))
		case int:
			e.u32(uint32(argInt))
			e.u32(uint32(int32(v)))
		case float32:
			e.u32(uint32(argF32))
			e.u32(math.Float32bits(v))
		default:
			return nil, fmt.Errorf("wire: argument %d of %s is a %T", i, t.Entry, a)
		}
	}
	if len(e.buf) > MaxInputs {
		return nil, fmt.Errorf("wire: the task %s has %d bytes of inputs, more than %d", t.Entry, len(e.buf), MaxInputs)
	}
	return e.buf, nil
}

// DecodeTask reads a Stage payload.
func DecodeTask(p []byte) (Task, error) {
	d := decoder{buf: p}
	t := Task{Entry: d.str(MaxText), Decl: d.str(MaxText)}
	for range d.count(256, "compiler options") {
		t.Options = append(t.Options, d.str(MaxText))
	}
	for _, dim := range []*[3]int{&t.Grid, &t.Block} {
		for i := range dim {
			dim[i] = int(d.u32())
		}
	}
	t.Shared, t.MaxOut, t.Guard = int(d.u32()), int(d.u32()), int(d.u32())
	if d.err == nil && (t.Guard > MaxGuard || t.Guard > 0 && t.MaxOut > 0) {
		d.fail("guard zones of %d words", t.Guard)
	}
	for range d.count(64, "arguments") {
		switch kind := d.u32(); kind {
		case uint32(argF32s):
			t.Args = append(t.Args, convert(d.words(MaxInputs/4), math.Float32frombits))
		case uint32(argI32s):
			t.Args = append(t.Args, convert(d.words(MaxInputs/4), func(w uint32) int32 { return int32(w) }))
		case uint32(argOut):
			t.Args = append(t.Args, Out(d.u32()))
		case uint32(argInt):
			t.Args = append(t.Args, int(int32(d.u32())))
		case uint32(argF32):
			t.Args = append(t.Args, math.Float32frombits(d.u32()))
		default:
			d.fail("an argument of unknown kind %d", kind)
		}
	}
	return t, d.end("Stage")
}

// A batch is the tasks of one Stage frame: instances of one launch on
// different inputs, run back to back on one Go frame, so that a fast
// kernel is timed over more than one launch's worth of work, and none can
// reuse another's results.

// EncodeBatch is a Stage payload: the tasks, in order.
func EncodeBatch(ts []Task) ([]byte, error) {
	var e encoder
	e.u32(uint32(len(ts)))
	for _, t := range ts {
		p, err := EncodeTask(t)
		if err != nil {
			return nil, err
		}
		e.u32(uint32(len(p)))
		e.buf = append(e.buf, p...)
		if len(e.buf) > MaxInputs {
			return nil, fmt.Errorf("wire: a batch of %d tasks has more than %d bytes of inputs", len(ts), MaxInputs)
		}
	}
	return e.buf, nil
}

// MaxBatch is the most tasks a Stage frame may carry.
const MaxBatch = 64

// DecodeBatch reads a Stage payload.
func DecodeBatch(p []byte) ([]Task, error) {
	d := decoder{buf: p}
	n := d.u32()
	if d.err == nil && (n == 0 || n > MaxBatch) {
		d.fail("a batch of %d tasks", n)
	}
	var ts []Task
	for range n {
		if d.err != nil {
			break
		}
		size := d.u32()
		if d.err == nil && uint64(size) > uint64(len(d.buf)) {
			d.fail("a task of %d bytes", size)
			break
		}
		t, err := DecodeTask(d.buf[:size])
		if err != nil {
			return nil, err
		}
		d.buf = d.buf[size:]
		ts = append(ts, t)
	}
	return ts, d.end("Stage")
}

// convert applies f to every word.
func convert[T any](words []uint32, f func(uint32) T) []T {
	out := make([]T, len(words))
	for i, w := range words {
		out[i] = f(w)
	}
	return out
}

// EncodeOutputs is an Outputs payload for one task.
func EncodeOutputs(outs [][]uint32) []byte {
	var e encoder
	e.u32(uint32(len(outs)))
	for _, o := range outs {
		e.words(len(o), func(i int) uint32 { return o[i] })
	}
	return e.buf
}

// DecodeOutputs reads an Outputs payload that must hold exactly arrays of
// the given sizes.
func DecodeOutputs(p []byte, sizes []int) ([][]uint32, error) {
	d := decoder{buf: p}
	if n := d.u32(); d.err == nil && int(n) != len(sizes) {
		d.fail("%d outputs, expected %d", n, len(sizes))
	}
	outs := make([][]uint32, 0, len(sizes))
	for _, size := range sizes {
		w := d.words(size)
		if d.err == nil && len(w) != size {
			d.fail("an output of %d elements, expected %d", len(w), size)
		}
		outs = append(outs, w)
	}
	return outs, d.end("Outputs")
}

// DecodeOutputsMax reads a payload of at most count arrays and total words
// in all, their sizes as the worker says.
func DecodeOutputsMax(p []byte, count, total int) ([][]uint32, error) {
	d := decoder{buf: p}
	n := d.u32()
	if d.err == nil && int(n) > count {
		d.fail("%d outputs, at most %d expected", n, count)
	}
	var outs [][]uint32
	for i := 0; d.err == nil && i < int(n); i++ {
		w := d.words(total)
		total -= len(w)
		outs = append(outs, w)
	}
	return outs, d.end("Outputs")
}

// EncodeBatchOutputs is an Outputs payload: each task's outputs, in order.
func EncodeBatchOutputs(outs [][][]uint32) []byte {
	var e encoder
	e.u32(uint32(len(outs)))
	for _, o := range outs {
		p := EncodeOutputs(o)
		e.u32(uint32(len(p)))
		e.buf = append(e.buf, p...)
	}
	return e.buf
}

// DecodeBatchOutputs reads the outputs of the batch ts: each task's of
// exactly its Out sizes, or, for a task with MaxOut, at most 8 arrays of
// MaxOut words in all.
func DecodeBatchOutputs(p []byte, ts []Task) ([][][]uint32, error) {
	d := decoder{buf: p}
	if n := d.u32(); d.err == nil && int(n) != len(ts) {
		d.fail("the outputs of %d tasks, expected %d", n, len(ts))
	}
	outs := make([][][]uint32, 0, len(ts))
	for _, t := range ts {
		size := d.u32()
		if d.err != nil || uint64(size) > uint64(len(d.buf)) {
			d.fail("outputs of %d bytes", size)
			return nil, d.err
		}
		var o [][]uint32
		var err error
		if t.MaxOut > 0 {
			o, err = DecodeOutputsMax(d.buf[:size], 8, t.MaxOut)
		} else {
			o, err = DecodeOutputs(d.buf[:size], t.OutSizes())
		}
		if err != nil {
			return nil, err
		}
		d.buf = d.buf[size:]
		outs = append(outs, o)
	}
	return outs, d.end("Outputs")
}

// batchOutputBytes bounds the Outputs payload of the batch ts.
func batchOutputBytes(ts []Task) int {
	n := 4
	for _, t := range ts {
		if t.MaxOut > 0 {
			n += 4 + 4 + 4*(t.MaxOut+8)
		} else {
			n += 4 + OutputBytes(t.OutSizes())
		}
	}
	return n
}

// OutputBytes is the size of an Outputs payload of arrays of these sizes.
func OutputBytes(sizes []int) int {
	n := 4
	for _, s := range sizes {
		n += 4 + 4*s
	}
	return n
}
