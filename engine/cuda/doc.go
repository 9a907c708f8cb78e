// Package cuda is gpulab's binding to the CUDA driver API, NVRTC and cuBLAS.
//
// It is written with purego: the libraries are opened with dlopen at run time, so
// the package builds with CGO_ENABLED=0 on machines that have no CUDA toolkit, and
// one static binary runs on a GPU machine. On a machine without a driver,
// [Devices] simply returns no devices; [Load] says why.
//
// The shape follows gorgonia.org/cu (Device, DevicePtr, Module, Function, Stream,
// Event, attributes read from a Device), which does not build against CUDA 13;
// docs/architecture.md gives the facts.
//
// # Contexts and threads
//
// A CUDA context is current per OS thread, while a goroutine may move between
// threads at any point. Every method that talks to the driver therefore runs
// inside [Context.Do], which locks the calling goroutine to its thread and makes
// the device's primary context current for the duration of the call. All
// methods are safe to call from any goroutine.
//
// # Typical use
//
//	ctx, err := cuda.NewContext(0)
//	mod, err := ctx.Compile(cuda.Source{Name: "vecadd.cu", Code: src})
//	fn, err := mod.Function("vec_add")
//	a, err := cuda.AllocSlice[float32](ctx, n)
//	err = fn.Launch(cuda.Grid1D(n, 256), nil, n, a, b, c)
package cuda
