// Package wire is what travels between `lab grade` and the process that
// runs a student's code: framed messages on a socket of their own (file
// descriptor 3 in the worker), never on stdout, which student code and a
// kernel's printf write to.
//
// The grader (the trusted side) opens the conversation with a Hello frame
// that carries a fresh random nonce; every later frame, both ways, must
// carry the same nonce, and a frame that does not is a protocol violation.
// A run of a task is four frames:
//
//	grader → worker   Stage    the task: a kernel launch and its inputs, drawn at random by the grader
//	worker → grader   Staged   compiled, inputs on the device
//	grader → worker   Go       the clock starts; a random key
//	worker → grader   Done     the clock stops (for a Go exercise, a hash of the outputs under the key)
//	worker → grader   Outputs  what the code computed
//
// or a Failure frame (a compile or a run error) in place of Staged, Done
// or Outputs. The grader compares the outputs with its own reference: the
// worker never reports a verdict, only what it computed, so that a forged
// frame can at best carry wrong outputs.
//
// Every read by the grader is bounded by what it expects (a task's outputs
// have a known size), so that a hostile worker cannot make it allocate.
package wire

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Frame types.
const (
	Hello   byte = 1 + iota // grader → worker: Setup
	Ready                   // worker → grader: the device it opened, as text
	Stage                   // grader → worker: a Task
	Staged                  // worker → grader: empty
	Go                      // grader → worker: an 8-byte key
	Done                    // worker → grader: empty, or the outputs' hash under the key (Commit)
	Outputs                 // worker → grader: the outputs, in argument order
	Failure                 // worker → grader: a Fault
	Bye                     // grader → worker: empty; the worker exits 0
)

var frameNames = map[byte]string{Hello: "Hello", Ready: "Ready", Stage: "Stage", Staged: "Staged", Go: "Go",
	Done: "Done", Outputs: "Outputs", Failure: "Failure", Bye: "Bye"}

// FrameName is a frame type's name, for messages.
func FrameName(t byte) string {
	if n, ok := frameNames[t]; ok {
		return n
	}
	return fmt.Sprintf("frame type %d", t)
}

// magic starts every frame.
var magic = [4]byte{'G', 'L', 'W', '1'}

const headerLen = 4 + 16 + 1 + 4 // magic, nonce, type, payload length

// Limits on what either side accepts from the other.
const (
	MaxText   = 64 << 10  // a Ready or Failure message, a source file
	MaxSource = 1 << 20   // the source in a Hello
	MaxInputs = 512 << 20 // a Stage's payload: the grader's own inputs
)

// Conn is one side of a conversation: frames with the nonce of the run.
type Conn struct {
	rw    io.ReadWriter
	nonce [16]byte
}

// Dial starts a conversation as the grader: a fresh nonce, then the Hello
// frame with setup.
func Dial(rw io.ReadWriter, setup Setup) (*Conn, error) {
	c := &Conn{rw: rw}
	if _, err := rand.Read(c.nonce[:]); err != nil {
		return nil, err
	}
	return c, c.Send(Hello, setup.encode())
}

// Accept starts a conversation as the worker: it reads the Hello frame and
// takes its nonce for every frame that follows.
func Accept(rw io.ReadWriter) (*Conn, Setup, error) {
	c := &Conn{rw: rw}
	var h [headerLen]byte
	if _, err := io.ReadFull(rw, h[:]); err != nil {
		return nil, Setup{}, fmt.Errorf("wire: reading the Hello frame: %w", err)
	}
	if !bytes.Equal(h[:4], magic[:]) || h[20] != Hello {
		return nil, Setup{}, errors.New("wire: the first frame is not a Hello")
	}
	copy(c.nonce[:], h[4:20])
	n := binary.LittleEndian.Uint32(h[21:])
	if n > MaxSource+MaxText {
		return nil, Setup{}, fmt.Errorf("wire: a Hello of %d bytes", n)
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(rw, payload); err != nil {
		return nil, Setup{}, fmt.Errorf("wire: reading the Hello frame: %w", err)
	}
	s, err := decodeSetup(payload)
	return c, s, err
}

// Send writes one frame.
func (c *Conn) Send(typ byte, payload []byte) error {
	if uint64(len(payload)) > math.MaxUint32 {
		return fmt.Errorf("wire: a %s of %d bytes", FrameName(typ), len(payload))
	}
	frame := make([]byte, headerLen, headerLen+len(payload))
	copy(frame, magic[:])
	copy(frame[4:], c.nonce[:])
	frame[20] = typ
	binary.LittleEndian.PutUint32(frame[21:], uint32(len(payload)))
	_, err := c.rw.Write(append(frame, payload...))
	return err
}

// A ProtocolError is a frame that breaks the protocol: a wrong magic or
// nonce, an unexpected type, a payload over its limit or malformed.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return "protocol violation: " + e.Msg }

func violation(format string, args ...any) error {
	return &ProtocolError{Msg: fmt.Sprintf(format, args...)}
}

// Recv reads one frame whose payload is at most limits[type] bytes; a type
// not in limits, or a larger payload, is a ProtocolError, and nothing
// larger than the limit is allocated.
func (c *Conn) Recv(limits map[byte]int) (byte, []byte, error) {
	var h [headerLen]byte
	if _, err := io.ReadFull(c.rw, h[:]); err != nil {
		return 0, nil, err
	}
	if !bytes.Equal(h[:4], magic[:]) {
		return 0, nil, violation("a frame does not start with the protocol's magic")
	}
	if !bytes.Equal(h[4:20], c.nonce[:]) {
		return 0, nil, violation("a frame carries another run's nonce")
	}
	typ, n := h[20], binary.LittleEndian.Uint32(h[21:])
	limit, ok := limits[typ]
	if !ok {
		return 0, nil, violation("unexpected %s", FrameName(typ))
	}
	if uint64(n) > uint64(limit) {
		return 0, nil, violation("a %s of %d bytes, at most %d expected", FrameName(typ), n, limit)
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(c.rw, payload); err != nil {
		return 0, nil, fmt.Errorf("reading a %s: %w", FrameName(typ), err)
	}
	return typ, payload, nil
}

// Setup is the Hello's payload: what the worker runs, and where.
type Setup struct {
	Exercise string // e.g. gemm/tiled
	Lang     string // cuda, opencl or go
	Device   string // the device id to open, e.g. opencl:0:0
	Source   string // the student's kernel (empty for a Go exercise, built into the worker)
}

func (s Setup) encode() []byte {
	var e encoder
	e.str(s.Exercise)
	e.str(s.Lang)
	e.str(s.Device)
	e.str(s.Source)
	return e.buf
}

func decodeSetup(p []byte) (Setup, error) {
	d := decoder{buf: p}
	s := Setup{Exercise: d.str(MaxText), Lang: d.str(MaxText), Device: d.str(MaxText), Source: d.str(MaxSource)}
	return s, d.end("Hello")
}

// Fault kinds.
const (
	CompileFault byte = 1 // the source does not compile (or lacks the kernel)
	RunFault     byte = 2 // it compiled; running it failed
)

// A Fault is a Failure frame's payload.
type Fault struct {
	Kind byte
	Msg  string
}

// EncodeFault is a Failure payload; long messages are cut to MaxText.
func EncodeFault(f Fault) []byte {
	if len(f.Msg) > MaxText-16 {
		f.Msg = f.Msg[:MaxText-16]
	}
	var e encoder
	e.u32(uint32(f.Kind))
	e.str(f.Msg)
	return e.buf
}

// DecodeFault reads a Failure payload.
func DecodeFault(p []byte) (Fault, error) {
	d := decoder{buf: p}
	kind := d.u32()
	f := Fault{Kind: byte(kind), Msg: d.str(MaxText)}
	if err := d.end("Failure"); err != nil {
		return f, err
	}
	if kind != uint32(CompileFault) && kind != uint32(RunFault) {
		return f, violation("a Failure of unknown kind %d", kind)
	}
	return f, nil
}

// encoder appends little-endian fields.
type encoder struct{ buf []byte }

func (e *encoder) u32(v uint32) { e.buf = binary.LittleEndian.AppendUint32(e.buf, v) }

func (e *encoder) str(s string) {
	e.u32(uint32(len(s)))
	e.buf = append(e.buf, s...)
}

func (e *encoder) words(n int, word func(i int) uint32) {
	e.u32(uint32(n))
	for i := range n {
		e.u32(word(i))
	}
}

// decoder reads what encoder wrote; the first error sticks, and no length
// read from the buffer allocates more than the buffer holds.
type decoder struct {
	buf []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = violation(format, args...)
	}
}

func (d *decoder) u32() uint32 {
	if d.err != nil || len(d.buf) < 4 {
		d.fail("a payload ends early")
		return 0
	}
	v := binary.LittleEndian.Uint32(d.buf)
	d.buf = d.buf[4:]
	return v
}

func (d *decoder) str(limit int) string {
	n := d.u32()
	if d.err == nil && (uint64(n) > uint64(len(d.buf)) || int(n) > limit) {
		d.fail("a string of %d bytes", n)
	}
	if d.err != nil {
		return ""
	}
	s := string(d.buf[:n])
	d.buf = d.buf[n:]
	return s
}

// count reads a count of at most limit things, 0 after an error (once an
// error sticks, every later read returns a zero value).
func (d *decoder) count(limit uint32, what string) uint32 {
	n := d.u32()
	if d.err == nil && n > limit {
		d.fail("%d %s", n, what)
	}
	if d.err != nil {
		return 0
	}
	return n
}

// words reads a counted array of 4-byte words of at most limit elements.
func (d *decoder) words(limit int) []uint32 {
	n := d.u32()
	if d.err == nil && (uint64(n)*4 > uint64(len(d.buf)) || uint64(n) > uint64(limit)) {
		d.fail("an array of %d elements", n)
	}
	if d.err != nil {
		return nil
	}
	out := make([]uint32, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(d.buf[4*i:])
	}
	d.buf = d.buf[4*n:]
	return out
}

// end is the decoder's error, or one for bytes left over.
func (d *decoder) end(what string) error {
	if d.err == nil && len(d.buf) > 0 {
		d.fail("%d bytes left over after a %s", len(d.buf), what)
	}
	return d.err
}
