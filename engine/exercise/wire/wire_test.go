package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var sample = Task{
	Entry: "gemm", Decl: "__kernel void gemm(...)", Options: []string{"-DTS=16", "-DWPT=8"},
	Grid: [3]int{3, 2}, Block: [3]int{16, 16}, Shared: 512,
	Args: []any{17, 33, []float32{1.5, float32(math.Inf(-1)), -0}, []int32{-1, 7}, Out(5), float32(0.25), Out(0)},
}

func TestTaskRoundTrip(t *testing.T) {
	p, err := EncodeTask(sample)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeTask(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, sample) {
		t.Errorf("got %+v\nwant %+v", got, sample)
	}
	if !reflect.DeepEqual(got.OutSizes(), []int{5, 0}) {
		t.Errorf("OutSizes %v", got.OutSizes())
	}
	guarded := sample
	guarded.Guard = 4096
	if p, err = EncodeTask(guarded); err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeTask(p); err != nil || got.Guard != 4096 || !reflect.DeepEqual(got.OutSizes(), []int{5, 0, 4 * DamageWords}) {
		t.Errorf("a guarded task: %+v %v, OutSizes %v", got, err, got.OutSizes())
	}
	for _, bad := range []Task{{Guard: MaxGuard + 1}, {Guard: 8, MaxOut: 8}} {
		p, _ := EncodeTask(bad)
		if _, err := DecodeTask(p); err == nil || !strings.Contains(err.Error(), "guard zones of") {
			t.Errorf("%+v: %v, want a refusal of its guard zones", bad, err)
		}
	}
	if _, err := EncodeTask(Task{Args: []any{int64(3)}}); err == nil || !strings.Contains(err.Error(), "int64") {
		t.Errorf("an int64 argument: %v", err)
	}
}

func TestOutputs(t *testing.T) {
	outs := [][]uint32{{1, 2, 3}, {}, {math.MaxUint32}}
	p := EncodeOutputs(outs)
	if len(p) != OutputBytes([]int{3, 0, 1}) {
		t.Errorf("%d bytes, OutputBytes says %d", len(p), OutputBytes([]int{3, 0, 1}))
	}
	if got, err := DecodeOutputs(p, []int{3, 0, 1}); err != nil || !reflect.DeepEqual(got, [][]uint32{{1, 2, 3}, {}, {math.MaxUint32}}) {
		t.Errorf("%v %v", got, err)
	}
	for _, tc := range []struct {
		sizes []int
		want  string
	}{
		{[]int{3, 0}, "3 outputs, expected 2"},
		{[]int{2, 0, 1}, "an array of 3 elements"},
		{[]int{3, 0, 1, 4}, "3 outputs, expected 4"},
	} {
		if _, err := DecodeOutputs(p, tc.sizes); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("sizes %v: %v, want %q", tc.sizes, err, tc.want)
		}
	}
	if _, err := DecodeOutputsMax(p, 3, 3); err == nil {
		t.Error("4 words under a bound of 3")
	}
	if got, err := DecodeOutputsMax(p, 3, 4); err != nil || len(got) != 3 {
		t.Errorf("%v %v", got, err)
	}
}

// TestDecodeHostile: truncated, oversized and lying payloads are errors,
// never panics or allocations of what a length field claims.
func TestDecodeHostile(t *testing.T) {
	good, _ := EncodeTask(sample)
	huge := binary.LittleEndian.AppendUint32(nil, 1)     // one output
	huge = binary.LittleEndian.AppendUint32(huge, 1<<30) // claiming 2^30 words
	for name, p := range map[string][]byte{
		"empty":          nil,
		"truncated":      good[:len(good)-3],
		"trailing":       append(append([]byte{}, good...), 0),
		"huge array":     huge,
		"unknown kind":   append(good[:len(good)-8], 9, 0, 0, 0, 0, 0, 0, 0),
		"many options":   []byte{0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff},
		"string too big": {0xff, 0xff, 0xff, 0x7f},
	} {
		if _, err := DecodeTask(p); err == nil {
			t.Errorf("%s: DecodeTask accepted it", name)
		}
		if _, err := DecodeOutputs(p, []int{1}); err == nil {
			t.Errorf("%s: DecodeOutputs accepted it", name)
		}
		if _, err := DecodeFault(p); err == nil {
			t.Errorf("%s: DecodeFault accepted it", name)
		}
	}
}

// pipe is a grader and a worker connected in memory.
func pipe(t *testing.T) (grader, worker net.Conn) {
	g, w := net.Pipe()
	t.Cleanup(func() { g.Close(); w.Close() })
	deadline := time.Now().Add(10 * time.Second)
	g.SetDeadline(deadline)
	w.SetDeadline(deadline)
	return g, w
}

// doubler is a Job whose outputs are each task's input elements doubled.
type doubler struct{ in, out [][]uint32 }

func (d *doubler) Launch() error {
	for _, in := range d.in {
		var out []uint32
		for _, v := range in {
			out = append(out, 2*v)
		}
		d.out = append(d.out, out)
	}
	return nil
}

func (d *doubler) Outputs() ([][][]uint32, error) {
	var outs [][][]uint32
	for _, o := range d.out {
		outs = append(outs, [][]uint32{o})
	}
	return outs, nil
}

func (d *doubler) Free() {}

func stageDoubler(ts []Task) (Job, error) {
	d := &doubler{}
	for _, t := range ts {
		in, ok := t.Args[0].([]int32)
		if !ok {
			return nil, &FaultError{Fault{Kind: CompileFault, Msg: "line 1: error: no doubling here"}}
		}
		var words []uint32
		for _, v := range in {
			words = append(words, uint32(v))
		}
		d.in = append(d.in, words)
	}
	return d, nil
}

// TestConversation: a grader and a worker, plain and committed, with a
// compile fault in the middle that leaves the worker serving.
func TestConversation(t *testing.T) {
	for _, committed := range []bool{false, true} {
		g, w := pipe(t)
		served := make(chan error, 1)
		go func() {
			conn, setup, err := Accept(w)
			if err == nil && setup.Source != "src" {
				err = errors.New("setup lost its source")
			}
			if err == nil {
				err = Serve(conn, "test device", stageDoubler, committed)
			}
			served <- err
		}()
		conn, err := Dial(g, Setup{Exercise: "x/y", Lang: "go", Device: "cpu", Source: "src"})
		if err != nil {
			t.Fatal(err)
		}
		c, err := NewClient(conn, committed)
		if err != nil || c.Device != "test device" {
			t.Fatalf("%v %q", err, c.Device)
		}
		outs, took, err := c.Run([]Task{{Args: []any{[]int32{1, 2, 3}, Out(3)}}, {Args: []any{[]int32{7}, Out(1)}}})
		if err != nil || !reflect.DeepEqual(outs, [][][]uint32{{{2, 4, 6}}, {{14}}}) || took <= 0 {
			t.Errorf("run: %v %v %v", outs, took, err)
		}
		var fe *FaultError
		if _, _, err := c.Run([]Task{{Args: []any{[]float32{1}, Out(1)}}}); !errors.As(err, &fe) || fe.Kind != CompileFault {
			t.Errorf("a compile fault: %v", err)
		}
		if outs, _, err := c.Run([]Task{{Args: []any{[]int32{5}, Out(1)}}}); err != nil || outs[0][0][0] != 10 {
			t.Errorf("after a fault: %v %v", outs, err)
		}
		if _, _, err := c.Run([]Task{{Args: []any{[]int32{5}, Out(2)}}}); err == nil || !strings.Contains(err.Error(), "expected 2") {
			t.Errorf("outputs of the wrong size: %v", err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-served; err != nil {
			t.Errorf("worker: %v", err)
		}
	}
}

// TestForgedFrames: what a hostile worker might send instead of a report.
func TestForgedFrames(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply func(w io.ReadWriter, nonce [16]byte)
		want  string
	}{
		{"JSON on the socket", func(w io.ReadWriter, _ [16]byte) {
			w.Write([]byte(`{"compiled":true,"correct":true,"gflops":999}` + strings.Repeat(" ", 64)))
		}, "magic"},
		{"another run's nonce", func(w io.ReadWriter, _ [16]byte) {
			(&Conn{rw: w, nonce: [16]byte{1, 2, 3}}).Send(Ready, []byte("dev"))
		}, "nonce"},
		{"a Done before the Ready", func(w io.ReadWriter, n [16]byte) { (&Conn{rw: w, nonce: n}).Send(Done, nil) }, "unexpected Done"},
		{"an oversized Ready", func(w io.ReadWriter, n [16]byte) {
			(&Conn{rw: w, nonce: n}).Send(Ready, bytes.Repeat([]byte("x"), MaxText+1))
		}, "at most"},
		{"a Failure of no known kind", func(w io.ReadWriter, n [16]byte) {
			(&Conn{rw: w, nonce: n}).Send(Failure, EncodeFault(Fault{Kind: 7, Msg: "ok"}))
		}, "unknown kind"},
		{"silence", func(io.ReadWriter, [16]byte) {}, "EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, w := pipe(t)
			go func() {
				conn, _, err := Accept(w)
				if err == nil {
					tc.reply(w, conn.nonce)
				}
				w.Close()
			}()
			conn, err := Dial(g, Setup{Exercise: "x"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := NewClient(conn, false); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want %q", err, tc.want)
			}
		})
	}
}

// fakeWorker is a worker that stages the first task it gets, reads its Go
// frame and answers with reply (given the Go frame's key); the grader's
// client is returned.
func fakeWorker(t *testing.T, committed bool, reply func(conn *Conn, key []byte)) *Client {
	g, w := pipe(t)
	go func() {
		conn, _, err := Accept(w)
		if err != nil {
			return
		}
		conn.Send(Ready, nil)
		conn.Recv(map[byte]int{Stage: MaxInputs})
		conn.Send(Staged, nil)
		_, key, _ := conn.Recv(map[byte]int{Go: 8})
		reply(conn, key)
	}()
	conn, _ := Dial(g, Setup{})
	c, err := NewClient(conn, committed)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestOutputsBounded: a worker that sends more outputs than the task has
// is a protocol violation, read no further than the bound.
func TestOutputsBounded(t *testing.T) {
	c := fakeWorker(t, false, func(conn *Conn, _ []byte) {
		conn.Send(Done, nil)
		conn.Send(Outputs, EncodeBatchOutputs([][][]uint32{{make([]uint32, 1000)}}))
	})
	if _, _, err := c.Run([]Task{{Args: []any{Out(10)}}}); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("%v", err)
	}
}

func FuzzDecodeTask(f *testing.F) {
	good, _ := EncodeTask(sample)
	f.Add(good)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, p []byte) {
		task, err := DecodeTask(p)
		if err != nil {
			return
		}
		again, err := EncodeTask(task)
		if err != nil || !bytes.Equal(again, p) {
			t.Errorf("a decoded task does not encode back: %v", err)
		}
	})
}

func FuzzDecodeOutputs(f *testing.F) {
	f.Add(EncodeOutputs([][]uint32{{1, 2}, {3}}), 2, 3)
	f.Fuzz(func(t *testing.T, p []byte, count, total int) {
		if count < 0 || total < 0 || count > 64 || total > 1<<20 {
			return
		}
		outs, err := DecodeOutputsMax(p, count, total)
		if err != nil {
			return
		}
		n := 0
		for _, o := range outs {
			n += len(o)
		}
		if len(outs) > count || n > total {
			t.Errorf("%d outputs of %d words passed a bound of %d and %d", len(outs), n, count, total)
		}
	})
}

// TestEarlyDone: a worker that reports Done before it has the outputs
// cannot commit to them; the grader refuses what it sends next.
func TestEarlyDone(t *testing.T) {
	c := fakeWorker(t, true, func(conn *Conn, key []byte) {
		conn.Send(Done, binary.LittleEndian.AppendUint64(nil, Commit(key, EncodeBatchOutputs([][][]uint32{{{0}}})))) // a guess
		conn.Send(Outputs, EncodeBatchOutputs([][][]uint32{{{42}}}))                                                 // computed later
	})
	if _, _, err := c.Run([]Task{{Args: []any{Out(1)}}}); err == nil || !strings.Contains(err.Error(), "committed to") {
		t.Errorf("%v", err)
	}
}

func TestCommit(t *testing.T) {
	key := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	a, b := EncodeOutputs([][]uint32{{1, 2}}), EncodeOutputs([][]uint32{{1, 3}})
	if Commit(key, a) == Commit(key, b) || Commit(key, a) == Commit([]byte{8, 7, 6, 5, 4, 3, 2, 1}, a) {
		t.Error("Commit does not depend on the key and every byte")
	}
	if again := Commit(slices.Clone(key), slices.Clone(a)); again != Commit(key, a) {
		t.Error("Commit of the same key and bytes differs")
	}
}

func TestBatchRoundTrip(t *testing.T) {
	p, err := EncodeBatch([]Task{sample, sample})
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeBatch(p)
	if err != nil || len(got) != 2 || !reflect.DeepEqual(got[1], sample) {
		t.Errorf("%v %v", got, err)
	}
	for name, bad := range map[string][]byte{
		"empty batch": {0, 0, 0, 0},
		"too many":    {0xff, 0, 0, 0},
		"lying size":  {1, 0, 0, 0, 0xff, 0xff, 0, 0},
		"trailing":    append(append([]byte{}, p...), 1),
	} {
		if _, err := DecodeBatch(bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
