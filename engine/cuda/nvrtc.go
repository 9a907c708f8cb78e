package cuda

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// NVRTC entry points, bound by loadNVRTC.
var (
	nvrtcVersion           func(major, minor *int32) int32
	nvrtcCreateProgram     func(p *uintptr, src, name string, numHeaders int32, headers, includeNames unsafe.Pointer) int32
	nvrtcCompileProgram    func(p uintptr, numOptions int32, options unsafe.Pointer) int32
	nvrtcGetProgramLogSize func(p uintptr, size *uint64) int32
	nvrtcGetProgramLog     func(p uintptr, log *byte) int32
	nvrtcGetCUBINSize      func(p uintptr, size *uint64) int32
	nvrtcGetCUBIN          func(p uintptr, cubin *byte) int32
	nvrtcDestroyProgram    func(p *uintptr) int32
)

var (
	nvrtcOnce sync.Once
	nvrtcErr  error
	nvrtcLib  *library
)

// loadNVRTC opens libnvrtc from CUDA_HOME, /usr/local/cuda or the loader path.
func loadNVRTC() error {
	nvrtcOnce.Do(func() {
		lib, err := openLibrary("libnvrtc", libDirs(), []string{"libnvrtc.so.*[0-9]", "libnvrtc.so"},
			[]string{"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"})
		if err != nil {
			nvrtcErr = fmt.Errorf("nvrtc: %v", err)
			return
		}
		nvrtcErr = lib.bind(map[string]any{
			"nvrtcVersion": &nvrtcVersion, "nvrtcCreateProgram": &nvrtcCreateProgram,
			"nvrtcCompileProgram": &nvrtcCompileProgram, "nvrtcGetProgramLogSize": &nvrtcGetProgramLogSize,
			"nvrtcGetProgramLog": &nvrtcGetProgramLog, "nvrtcGetCUBINSize": &nvrtcGetCUBINSize,
			"nvrtcGetCUBIN": &nvrtcGetCUBIN, "nvrtcDestroyProgram": &nvrtcDestroyProgram,
		})
		nvrtcLib = lib
	})
	return nvrtcErr
}

// NVRTCVersion returns NVRTC's version as "major.minor".
func NVRTCVersion() (string, error) {
	if err := loadNVRTC(); err != nil {
		return "", err
	}
	var major, minor int32
	if code := nvrtcVersion(&major, &minor); code != 0 {
		return "", fmt.Errorf("nvrtcVersion: %s", nvrtcResult(code))
	}
	return fmt.Sprintf("%d.%d", major, minor), nil
}

var nvrtcResultNames = []string{
	"NVRTC_SUCCESS", "NVRTC_ERROR_OUT_OF_MEMORY", "NVRTC_ERROR_PROGRAM_CREATION_FAILURE",
	"NVRTC_ERROR_INVALID_INPUT", "NVRTC_ERROR_INVALID_PROGRAM", "NVRTC_ERROR_INVALID_OPTION",
	"NVRTC_ERROR_COMPILATION", "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE",
	"NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION", "NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION",
	"NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID", "NVRTC_ERROR_INTERNAL_ERROR", "NVRTC_ERROR_TIME_FILE_WRITE_FAILED",
	"NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED", "NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED", "NVRTC_ERROR_PCH_CREATE",
	"NVRTC_ERROR_CANCELLED", "NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED",
}

// nvrtcResult names an nvrtcResult code.
func nvrtcResult(code int32) string {
	if code >= 0 && int(code) < len(nvrtcResultNames) {
		return nvrtcResultNames[code]
	}
	return fmt.Sprintf("nvrtcResult(%d)", code)
}

// Diagnostic is one message of a compiler log, with its position.
type Diagnostic struct {
	File     string
	Line     int
	Severity string // "error", "warning" or "remark"
	Message  string
}

func (d Diagnostic) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", d.File, d.Line, d.Severity, d.Message)
}

// CompileError is a kernel that NVRTC rejected. Its message carries the
// compiler log rewritten as file:line: severity: message.
type CompileError struct {
	Name        string // the source's file name
	Code        string // the nvrtcResult
	Log         string // NVRTC's raw log
	Diagnostics []Diagnostic
}

func (e *CompileError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "nvrtc: compile %s: %s", e.Name, e.Code)
	if len(e.Diagnostics) == 0 && e.Log != "" {
		b.WriteString("\n" + strings.TrimSpace(e.Log))
	}
	for _, d := range e.Diagnostics {
		b.WriteString("\n" + d.String())
	}
	return b.String()
}

// nvrtcLogLine matches NVRTC's "file(line): error: message" lines.
var nvrtcLogLine = regexp.MustCompile(`^(.+?)\((\d+)\): (error|warning|remark|catastrophic error)[^:]*: (.*)$`)

// ParseLog extracts the positioned diagnostics of an NVRTC log.
func ParseLog(log string) []Diagnostic {
	var out []Diagnostic
	for _, line := range strings.Split(log, "\n") {
		m := nvrtcLogLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		out = append(out, Diagnostic{File: m[1], Line: n, Severity: m[3], Message: m[4]})
	}
	return out
}

// compileCUBIN runs NVRTC over src and returns the CUBIN image and the log.
func compileCUBIN(src Source, options []string) ([]byte, string, error) {
	return compileWith(src, options, nil)
}

// compileWith runs NVRTC over src and returns the CUBIN image and the log;
// more, if not nil, reads other products of the compiled program (its PTX)
// before the program is destroyed.
func compileWith(src Source, options []string, more func(prog uintptr) error) ([]byte, string, error) {
	if err := loadNVRTC(); err != nil {
		return nil, "", err
	}
	names := make([]string, 0, len(src.Headers))
	for n := range src.Headers {
		names = append(names, n)
	}
	slices.Sort(names)
	var hdrPtrs, namePtrs []*byte
	for _, n := range names {
		hdrPtrs = append(hdrPtrs, cString(src.Headers[n]))
		namePtrs = append(namePtrs, cString(n))
	}
	var prog uintptr
	code := nvrtcCreateProgram(&prog, src.Code, src.Name, int32(len(names)), slicePtr(hdrPtrs), slicePtr(namePtrs))
	if code != 0 {
		return nil, "", fmt.Errorf("nvrtc: create program %s: %s", src.Name, nvrtcResult(code))
	}
	defer nvrtcDestroyProgram(&prog)

	optPtrs := make([]*byte, len(options))
	for i, o := range options {
		optPtrs[i] = cString(o)
	}
	code = nvrtcCompileProgram(prog, int32(len(optPtrs)), slicePtr(optPtrs))
	log := programLog(prog)
	if code != 0 {
		return nil, log, &CompileError{Name: src.Name, Code: nvrtcResult(code), Log: log, Diagnostics: ParseLog(log)}
	}
	var size uint64
	if code := nvrtcGetCUBINSize(prog, &size); code != 0 {
		return nil, log, fmt.Errorf("nvrtc: cubin size of %s: %s", src.Name, nvrtcResult(code))
	}
	if size == 0 { // a virtual --gpu-architecture (compute_XX) gives PTX only
		return nil, log, fmt.Errorf("nvrtc: %s compiled to no CUBIN: --gpu-architecture must name a real GPU (sm_XX), options %q", src.Name, options)
	}
	cubin := make([]byte, size)
	if code := nvrtcGetCUBIN(prog, &cubin[0]); code != 0 {
		return nil, log, fmt.Errorf("nvrtc: cubin of %s: %s", src.Name, nvrtcResult(code))
	}
	if more != nil {
		if err := more(prog); err != nil {
			return nil, log, err
		}
	}
	return cubin, log, nil
}

func programLog(prog uintptr) string {
	var size uint64
	if nvrtcGetProgramLogSize(prog, &size) != 0 || size <= 1 {
		return ""
	}
	buf := make([]byte, size)
	if nvrtcGetProgramLog(prog, &buf[0]) != 0 {
		return ""
	}
	return strings.TrimRight(string(buf), "\x00")
}

// cString returns a NUL-terminated copy of s.
func cString(s string) *byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return &b[0]
}

// slicePtr returns a pointer to the first element, or nil for an empty slice.
func slicePtr(s []*byte) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(&s[0])
}
