package cuda

import (
	"fmt"
	"runtime"
	"sync"
)

// Context is a device's primary context. There is one per device and process:
// NewContext returns the same *Context for the same ordinal, so its compiled
// modules are shared by every user.
type Context struct {
	dev   Device
	h     uintptr // CUcontext
	props Properties

	mu      sync.Mutex
	modules map[string]*Module // by cache key, see Compile
}

var (
	contextsMu sync.Mutex
	contexts   = map[int]*Context{}
)

// NewContext retains the primary context of device ordinal and returns it.
func NewContext(ordinal int) (*Context, error) {
	contextsMu.Lock()
	defer contextsMu.Unlock()
	if c, ok := contexts[ordinal]; ok {
		return c, nil
	}
	d, err := GetDevice(ordinal)
	if err != nil {
		return nil, err
	}
	c := &Context{dev: d, modules: map[string]*Module{}}
	if err := check("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&c.h, int32(d))); err != nil {
		return nil, fmt.Errorf("cuda:%d: %w", ordinal, err)
	}
	if c.props, err = d.Properties(); err != nil {
		return nil, err
	}
	contexts[ordinal] = c
	return c, nil
}

// Device returns the context's device.
func (c *Context) Device() Device { return c.dev }

// Properties returns the device's attributes, read once when the context was made.
func (c *Context) Properties() Properties { return c.props }

// ID is the lab's device id, "cuda:N".
func (c *Context) ID() string { return fmt.Sprintf("cuda:%d", c.dev) }

// Do runs fn with the context current on a locked OS thread. Every method of
// this package that calls the driver goes through Do; use it directly to group
// several raw calls.
func (c *Context) Do(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check("cuCtxSetCurrent", cuCtxSetCurrent(c.h)); err != nil {
		return fmt.Errorf("%s: %w", c.ID(), err)
	}
	return fn()
}

// Synchronize waits for all work on the device to finish.
func (c *Context) Synchronize() error {
	return c.Do(func() error { return check("cuCtxSynchronize", cuCtxSynchronize()) })
}

// MemInfo returns the free and total device memory in bytes.
func (c *Context) MemInfo() (free, total uint64, err error) {
	err = c.Do(func() error { return check("cuMemGetInfo_v2", cuMemGetInfo(&free, &total)) })
	return free, total, err
}

// EnablePeerAccess lets kernels and copies in c reach memory allocated in peer.
// Enabling it twice is not an error.
func (c *Context) EnablePeerAccess(peer *Context) error {
	ok, err := c.dev.CanAccessPeer(peer.dev)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("cuda: %s cannot access %s directly (no P2P path)", c.ID(), peer.ID())
	}
	return c.Do(func() error {
		err := check("cuCtxEnablePeerAccess", cuCtxEnablePeerAccess(peer.h, 0))
		if IsResult(err, 704) { // CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
			return nil
		}
		if err != nil {
			return fmt.Errorf("enable peer access %s -> %s: %w", c.ID(), peer.ID(), err)
		}
		return nil
	})
}
