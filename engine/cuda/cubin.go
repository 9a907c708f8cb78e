package cuda

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"strings"
)

// The parameter count of a kernel, read from its CUBIN rather than asked
// of the driver: cuFuncGetParamCount is recent (the 580 drivers of CUDA 13.0
// lack it), and finding the end of the parameters by calling
// cuFuncGetParamInfo until it fails is an API error that compute-sanitizer
// reports at every launch, burying the real ones.
//
// A CUBIN is an ELF file. For each kernel NAME the compiler writes a
// section .nv.info.NAME, a list of attributes, each a format byte, an
// attribute byte, then by format: nothing (EIFMT_NVAL), a byte
// (EIFMT_BVAL) or two (EIFMT_HVAL) in the next two bytes, or a two-byte
// length and that many bytes (EIFMT_SVAL). Each parameter has one
// EIATTR_KPARAM_INFO attribute (SVAL), whose value holds its ordinal at
// bytes 4–5.
const (
	eifmtNVAL = 0x01
	eifmtBVAL = 0x02
	eifmtHVAL = 0x03
	eifmtSVAL = 0x04

	eiattrKParamInfo = 0x17
)

// cubinParamCounts reads the number of parameters of every kernel in a
// CUBIN that records its parameters. A kernel without EIATTR_KPARAM_INFO
// attributes (one with no parameters, or a layout this reader does not
// know) is left out: its count is unknown, and launches are not checked.
func cubinParamCounts(cubin []byte) (map[string]int, error) {
	f, err := elf.NewFile(bytes.NewReader(cubin))
	if err != nil {
		return nil, fmt.Errorf("cubin: %w", err)
	}
	counts := map[string]int{}
	for _, s := range f.Sections {
		kernel, ok := strings.CutPrefix(s.Name, ".nv.info.")
		if !ok || kernel == "" {
			continue
		}
		data, err := s.Data()
		if err != nil {
			return nil, fmt.Errorf("cubin section %s: %w", s.Name, err)
		}
		n, err := kparamCount(data)
		if err != nil {
			return nil, fmt.Errorf("cubin section %s: %w", s.Name, err)
		}
		if n > 0 {
			counts[kernel] = n
		}
	}
	return counts, nil
}

// kparamCount walks one .nv.info.NAME section and returns one more than
// the highest parameter ordinal it records (0 when it records none).
func kparamCount(info []byte) (int, error) {
	n := 0
	for off := 0; off < len(info); {
		if len(info)-off < 4 {
			return 0, fmt.Errorf("attribute at byte %d: %d bytes left, an attribute takes at least 4", off, len(info)-off)
		}
		format, attr := info[off], info[off+1]
		switch format {
		case eifmtNVAL, eifmtBVAL, eifmtHVAL:
			off += 4
		case eifmtSVAL:
			size := int(binary.LittleEndian.Uint16(info[off+2:]))
			value := info[off+4:]
			if size > len(value) {
				return 0, fmt.Errorf("attribute %#x at byte %d: its value of %d bytes runs past the section's end", attr, off, size)
			}
			if attr == eiattrKParamInfo {
				if size < 6 {
					return 0, fmt.Errorf("parameter info at byte %d: %d bytes, want at least 6", off, size)
				}
				n = max(n, int(binary.LittleEndian.Uint16(value[4:]))+1)
			}
			off += 4 + size
		default:
			return 0, fmt.Errorf("attribute at byte %d: unknown format %#x", off, format)
		}
	}
	return n, nil
}
