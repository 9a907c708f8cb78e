package exercise

import (
	"fmt"
	"io"

	"gpulab/engine"
	"gpulab/engine/exercise/wire"
)

// Serve is a grading worker for a kernel exercise: lab grade starts it in
// a sandbox and speaks package wire to it on rw (file descriptor 3). It
// opens the device the grader names, compiles the source the grader sends
// and runs the tasks the grader stages, reporting what the kernel wrote,
// never a verdict. It returns when the grader says Bye (nil) or the
// conversation breaks.
func Serve(rw io.ReadWriter) error {
	conn, setup, err := wire.Accept(rw)
	if err != nil {
		return err
	}
	refuse := func(err error) error {
		conn.Send(wire.Failure, wire.EncodeFault(wire.Fault{Kind: wire.RunFault, Msg: err.Error()}))
		return err
	}
	e, err := Lookup(setup.Exercise)
	if err != nil {
		return refuse(err)
	}
	if _, err := e.Flavor(setup.Lang); err != nil || e.IsGo() {
		return refuse(fmt.Errorf("exercise: %s has no %s kernel to run here", e.Name, setup.Lang))
	}
	dev, err := engine.Open(setup.Device)
	if err != nil {
		return refuse(err)
	}
	defer dev.Close()
	k := newKernelRunner(dev, "", setup.Source)
	return wire.Serve(conn, dev.ID+" ("+dev.Name+")", func(ts []wire.Task) (wire.Job, error) { return k.stage(ts) }, false)
}
