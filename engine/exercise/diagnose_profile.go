package exercise

import (
	"errors"
	"fmt"
	"time"

	"gpulab/engine"
	"gpulab/engine/exercise/wire"
)

// ProfileRun runs the check of a CUDA source in this process up to its
// timing problem, launches that problem's kernel once more to warm it,
// then once inside profiled, which brackets it with the profiler's range
// (cuProfilerStart and Stop): the process that lab profile --exercise
// runs under Nsight Compute with --profile-from-start off, so that the
// report holds that one launch. A source that fails the check's small
// problems is an error that says so.
func ProfileRun(name, src string, profiled func(dev *engine.Device, launch func() error) error) error {
	e, err := Lookup(name)
	if err != nil {
		return err
	}
	f, err := e.Inspect(src)
	if err != nil {
		return err
	}
	if f.Lang != LangCUDA {
		return fmt.Errorf("%s: Nsight Compute profiles CUDA kernels, and this source is %s", name, f.Lang)
	}
	infos, err := f.devices()
	if err != nil || len(infos) == 0 {
		return fmt.Errorf("no device here runs CUDA kernels: %v", err)
	}
	dev, err := engine.Open(infos[0].ID)
	if err != nil {
		return err
	}
	defer dev.Close()
	k := newKernelRunner(dev, "", src)
	var ran bool
	var profileErr error
	student := runnerFunc(func(ts []wire.Task) ([][][]uint32, time.Duration, error) {
		if len(ts) == 1 {
			return k.Run(ts) // the small problems
		}
		one := ts[:1] // the first timing problem: warm, then profiled
		if _, _, err := k.Run(one); err != nil {
			return nil, 0, err
		}
		ran, profileErr = true, profiled(dev, func() error { _, _, err := k.Run(one); return err })
		return nil, 0, errRerunDone
	})
	r := f.check(&session{info: infos[0], student: student, rng: newRand(), src: src})
	switch {
	case ran:
		return profileErr
	case r.Error != "":
		return fmt.Errorf("%s fails before its timing problem: %s %s", name, r.Error, r.Detail)
	}
	return errors.New("the check never reached its timing problem")
}
