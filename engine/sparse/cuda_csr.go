package sparse

import "gpulab/engine/cuda"

// Moving CSR matrices between the host and a CUDA device.

// UploadCSR copies m to the device.
func UploadCSR(ctx *cuda.Context, m *CSR) (d cuda.CSR, err error) {
	d = cuda.CSR{Rows: m.Rows, Cols: m.Cols, NNZ: m.NNZ()}
	defer func() {
		if err != nil {
			d.Free()
		}
	}()
	if d.RowPtr, err = cuda.Upload(ctx, m.RowPtr); err != nil {
		return d, err
	}
	if d.ColIdx, err = cuda.Upload(ctx, m.ColIdx); err != nil {
		return d, err
	}
	d.Val, err = cuda.Upload(ctx, m.Val)
	return d, err
}

// DownloadCSR copies a device matrix back to the host.
func DownloadCSR(d cuda.CSR) (*CSR, error) {
	m := &CSR{Rows: d.Rows, Cols: d.Cols, RowPtr: make([]int32, d.Rows+1), ColIdx: make([]int32, d.NNZ), Val: make([]float32, d.NNZ)}
	if err := cuda.CopyDtoH(m.RowPtr, d.RowPtr); err != nil {
		return nil, err
	}
	if err := cuda.CopyDtoH(m.ColIdx, d.ColIdx); err != nil {
		return nil, err
	}
	if err := cuda.CopyDtoH(m.Val, d.Val); err != nil {
		return nil, err
	}
	return m, nil
}

// pool keeps freed device buffers for reuse, by size, as the caching
