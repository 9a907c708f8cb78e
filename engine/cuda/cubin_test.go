package cuda

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// kparam is an EIATTR_KPARAM_INFO attribute for the parameter of the
// given ordinal, laid out as the compiler writes it.
func kparam(ordinal, offset, size uint16) []byte {
	b := []byte{eifmtSVAL, eiattrKParamInfo, 12, 0}
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint16(b, ordinal)
	b = binary.LittleEndian.AppendUint16(b, offset)
	return binary.LittleEndian.AppendUint32(b, uint32(size)<<18)
}

func TestKParamCount(t *testing.T) {
	other := []byte{eifmtHVAL, 0x19, 24, 0, eifmtNVAL, 0x2f, 0, 0, eifmtBVAL, 0x10, 1, 0, eifmtSVAL, 0x1b, 2, 0, 0xff, 0xff}
	join := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, tc := range []struct {
		name string
		info []byte
		want int
		err  string
	}{
		{"none", nil, 0, ""},
		{"other attributes only", other, 0, ""},
		{"three, last first as the compiler writes them", join(kparam(2, 16, 8), other, kparam(1, 8, 8), kparam(0, 0, 4)), 3, ""},
		{"one", join(other, kparam(0, 0, 8)), 1, ""},
		{"truncated header", []byte{eifmtHVAL, 0x19}, 0, "2 bytes left"},
		{"value past the end", []byte{eifmtSVAL, 0x17, 12, 0, 1, 2}, 0, "runs past the section's end"},
		{"short parameter info", []byte{eifmtSVAL, 0x17, 2, 0, 1, 2}, 0, "want at least 6"},
		{"unknown format", []byte{0x09, 0x17, 0, 0}, 0, "unknown format 0x9"},
	} {
		got, err := kparamCount(tc.info)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
}

// elfWith builds a little-endian ELF64 file holding the named sections
// (and the section-name table), enough for debug/elf to read.
func elfWith(sections map[string][]byte, order []string) []byte {
	shstr := []byte{0}
	nameOff := map[string]int{}
	for _, n := range append(order, ".shstrtab") {
		nameOff[n] = len(shstr)
		shstr = append(append(shstr, n...), 0)
	}
	var body bytes.Buffer
	body.Write(make([]byte, 64)) // the ELF header, written last
	type sh struct{ name, typ, off, size int }
	var hdrs []sh
	for _, n := range order {
		hdrs = append(hdrs, sh{nameOff[n], 1, body.Len(), len(sections[n])}) // SHT_PROGBITS
		body.Write(sections[n])
	}
	hdrs = append(hdrs, sh{nameOff[".shstrtab"], 3, body.Len(), len(shstr)}) // SHT_STRTAB
	body.Write(shstr)
	shoff := body.Len()
	body.Write(make([]byte, 64)) // section 0: SHT_NULL
	for _, h := range hdrs {
		var b []byte
		b = binary.LittleEndian.AppendUint32(b, uint32(h.name))
		b = binary.LittleEndian.AppendUint32(b, uint32(h.typ))
		b = binary.LittleEndian.AppendUint64(b, 0) // flags
		b = binary.LittleEndian.AppendUint64(b, 0) // addr
		b = binary.LittleEndian.AppendUint64(b, uint64(h.off))
		b = binary.LittleEndian.AppendUint64(b, uint64(h.size))
		b = binary.LittleEndian.AppendUint32(b, 0) // link
		b = binary.LittleEndian.AppendUint32(b, 0) // info
		b = binary.LittleEndian.AppendUint64(b, 1) // addralign
		b = binary.LittleEndian.AppendUint64(b, 0) // entsize
		body.Write(b)
	}
	out := body.Bytes()
	hdr := []byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0x33, 7, 0, 0, 0, 0, 0, 0, 0}
	hdr = binary.LittleEndian.AppendUint16(hdr, 2)   // ET_EXEC
	hdr = binary.LittleEndian.AppendUint16(hdr, 190) // EM_CUDA
	hdr = binary.LittleEndian.AppendUint32(hdr, 1)
	hdr = binary.LittleEndian.AppendUint64(hdr, 0) // entry
	hdr = binary.LittleEndian.AppendUint64(hdr, 0) // phoff
	hdr = binary.LittleEndian.AppendUint64(hdr, uint64(shoff))
	hdr = binary.LittleEndian.AppendUint32(hdr, 0) // flags
	hdr = binary.LittleEndian.AppendUint16(hdr, 64)
	hdr = binary.LittleEndian.AppendUint16(hdr, 0)
	hdr = binary.LittleEndian.AppendUint16(hdr, 0)
	hdr = binary.LittleEndian.AppendUint16(hdr, 64)
	hdr = binary.LittleEndian.AppendUint16(hdr, uint16(len(hdrs)+1))
	hdr = binary.LittleEndian.AppendUint16(hdr, uint16(len(hdrs))) // shstrndx
	copy(out, hdr)
	return out
}

// TestCubinParamCounts reads the counts of a CUBIN-like ELF file; the GPU
// tests (TestLaunchBadArguments) check them on NVRTC's real CUBINs.
func TestCubinParamCounts(t *testing.T) {
	cubin := elfWith(map[string][]byte{
		".text.vec_add":    {0, 0, 0, 0},
		".nv.info":         {eifmtHVAL, 0x2f, 1, 0},
		".nv.info.vec_add": bytes.Join([][]byte{kparam(3, 24, 8), kparam(2, 16, 8), kparam(1, 8, 8), kparam(0, 0, 4)}, nil),
		".nv.info.no_args": {eifmtHVAL, 0x19, 0, 0},
	}, []string{".text.vec_add", ".nv.info", ".nv.info.vec_add", ".nv.info.no_args"})
	got, err := cubinParamCounts(cubin)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["vec_add"] != 4 {
		t.Errorf("counts = %v, want map[vec_add:4]", got)
	}
	if _, err := cubinParamCounts([]byte("not an ELF file")); err == nil || !strings.Contains(err.Error(), "cubin") {
		t.Errorf("a non-ELF image: err = %v", err)
	}
	bad := elfWith(map[string][]byte{".nv.info.k": {eifmtSVAL, 0x17, 40, 0}}, []string{".nv.info.k"})
	if _, err := cubinParamCounts(bad); err == nil || !strings.Contains(err.Error(), ".nv.info.k") {
		t.Errorf("a broken section: err = %v", err)
	}
}
