package wire

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// A FaultError is a task that failed in the worker: its source does not
// compile (CompileFault) or running it failed (RunFault).
type FaultError struct{ Fault }

func (e *FaultError) Error() string { return e.Msg }

// Client is the grader's side of a worker.
type Client struct {
	conn *Conn
	// Committed says that the worker's Done frame must commit to the
	// outputs: it carries a hash of them keyed by a random key that the
	// Go frame brings, and the Outputs frame must match it. A Go exercise
	// needs this, since its host code shares a process with the student's
	// code, which could send Done before it has computed anything; nobody
	// can know the hash of outputs not yet computed. A kernel worker's host
	// code is the lab's own, and its Done frame comes when the kernel has
	// ended.
	Committed bool
	Device    string // the worker's device, as it reported it
}

// NewClient waits for the worker's Ready frame.
func NewClient(conn *Conn, committed bool) (*Client, error) {
	c := &Client{conn: conn, Committed: committed}
	typ, p, err := conn.Recv(map[byte]int{Ready: MaxText, Failure: MaxText})
	if err != nil {
		return nil, err
	}
	if typ == Failure {
		return nil, faultOf(p)
	}
	c.Device = string(p)
	return c, nil
}

// faultOf is the error a Failure payload stands for.
func faultOf(p []byte) error {
	f, err := DecodeFault(p)
	if err != nil {
		return err
	}
	return &FaultError{f}
}

// Run stages the batch ts, starts it and returns each task's outputs and
// the time from the Go frame to the Done frame, as the grader measured it.
func (c *Client) Run(ts []Task) ([][][]uint32, time.Duration, error) {
	payload, err := EncodeBatch(ts)
	if err != nil {
		return nil, 0, err
	}
	if err := c.conn.Send(Stage, payload); err != nil {
		return nil, 0, fmt.Errorf("sending the task: %w", err)
	}
	if _, _, err := c.recv(Staged, 0); err != nil {
		return nil, 0, err
	}
	var key [8]byte
	if _, err := rand.Read(key[:]); err != nil {
		return nil, 0, err
	}
	doneBytes := 0
	if c.Committed {
		doneBytes = 8
	}
	// The clock starts before Go is sent: once it is, the worker may run
	// the whole batch while this process waits for the CPU, and a clock
	// read after the send would miss that time.
	start := time.Now()
	if err := c.conn.Send(Go, key[:]); err != nil {
		return nil, 0, fmt.Errorf("starting the task: %w", err)
	}
	_, commitment, err := c.recv(Done, doneBytes)
	took := time.Since(start)
	if err != nil {
		return nil, 0, err
	}
	_, p, err := c.recv(Outputs, batchOutputBytes(ts))
	if err != nil {
		return nil, 0, err
	}
	if c.Committed && (len(commitment) != 8 || binary.LittleEndian.Uint64(commitment) != Commit(key[:], p)) {
		return nil, 0, violation("the outputs are not the ones its Done frame committed to")
	}
	outs, err := DecodeBatchOutputs(p, ts)
	return outs, took, err
}

// recv reads a frame of type want (or a Failure, returned as its error).
func (c *Client) recv(want byte, limit int) (byte, []byte, error) {
	typ, p, err := c.conn.Recv(map[byte]int{want: limit, Failure: MaxText})
	if err != nil {
		return 0, nil, err
	}
	if typ == Failure {
		return 0, nil, faultOf(p)
	}
	return typ, p, nil
}

// Close ends the conversation: the worker exits.
func (c *Client) Close() error { return c.conn.Send(Bye, nil) }

// A Job is a staged batch of tasks in the worker.
type Job interface {
	Launch() error                  // runs the tasks and waits for their end
	Outputs() ([][][]uint32, error) // what each wrote
	Free()
}

// Commit is the hash that a committed Done frame carries: FNV-1a over the
// Outputs payload's 8-byte words (then its last bytes), started from the
// Go frame's key. It needs every byte of the outputs, so it cannot be
// known before they are.
func Commit(key, payload []byte) uint64 {
	h := binary.LittleEndian.Uint64(key) ^ 0xcbf29ce484222325
	for len(payload) >= 8 {
		h = (h ^ binary.LittleEndian.Uint64(payload)) * 0x100000001b3
		payload = payload[8:]
	}
	for _, b := range payload {
		h = (h ^ uint64(b)) * 0x100000001b3
	}
	return h
}

// Serve is the worker's side: after Ready (device), it stages each task
// with stage, runs it on Go and reports, until Bye. An error from stage or
// a Job is sent as a Failure (a FaultError keeps its kind; any other error
// is a RunFault) and the worker waits for the next task. committed makes
// Done commit to the outputs (see Client).
func Serve(conn *Conn, device string, stage func([]Task) (Job, error), committed bool) error {
	if err := conn.Send(Ready, []byte(device)); err != nil {
		return err
	}
	fail := func(err error) error {
		f := Fault{Kind: RunFault, Msg: err.Error()}
		var fe *FaultError
		if errors.As(err, &fe) {
			f = fe.Fault
		}
		return conn.Send(Failure, EncodeFault(f))
	}
	for {
		typ, p, err := conn.Recv(map[byte]int{Stage: MaxInputs, Bye: 0})
		if err != nil {
			return err
		}
		if typ == Bye {
			return nil
		}
		ts, err := DecodeBatch(p)
		if err != nil {
			return err
		}
		if err := serveOne(conn, ts, stage, committed, fail); err != nil {
			return err
		}
	}
}

// serveOne stages, launches and reports one batch.
func serveOne(conn *Conn, ts []Task, stage func([]Task) (Job, error), committed bool, fail func(error) error) error {
	job, err := stage(ts)
	if err != nil {
		return fail(err)
	}
	defer job.Free()
	if err := conn.Send(Staged, nil); err != nil {
		return err
	}
	_, key, err := conn.Recv(map[byte]int{Go: 8})
	if err != nil {
		return err
	}
	if err := job.Launch(); err != nil {
		return fail(err)
	}
	if !committed {
		if err := conn.Send(Done, nil); err != nil {
			return err
		}
	}
	outs, err := job.Outputs()
	if err != nil {
		return fail(err)
	}
	payload := EncodeBatchOutputs(outs)
	if committed {
		if len(key) != 8 {
			return violation("a Go frame without a key")
		}
		if err := conn.Send(Done, binary.LittleEndian.AppendUint64(nil, Commit(key, payload))); err != nil {
			return err
		}
	}
	return conn.Send(Outputs, payload)
}
