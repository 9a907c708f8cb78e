package sparse

import (
	"fmt"

	"gpulab/engine/cpu"
)

func checkSpMV(m *CSR, x, y []float32) error {
	if m == nil {
		return fmt.Errorf("sparse: SpMV: nil matrix")
	}
	if len(x) != m.Cols {
		return fmt.Errorf("sparse: SpMV: len(x) = %d, want Cols = %d", len(x), m.Cols)
	}
	if len(y) != m.Rows {
		return fmt.Errorf("sparse: SpMV: len(y) = %d, want Rows = %d", len(y), m.Rows)
	}
	if len(m.RowPtr) != m.Rows+1 {
		return fmt.Errorf("sparse: SpMV: len(RowPtr) = %d, want Rows+1 = %d", len(m.RowPtr), m.Rows+1)
	}
	return nil
}

func spmvRows(m *CSR, x, y []float32, lo, hi int) {
	for i := lo; i < hi; i++ {
		var s float32
		for k := m.RowPtr[i]; k < m.RowPtr[i+1]; k++ {
			s += m.Val[k] * x[m.ColIdx[k]]
		}
		y[i] = s
	}
}

// SpMV sets y = A·x serially, one row at a time (the CPU baseline of the
// SpMV ladder). len(x) must be A.Cols and len(y) A.Rows.
func SpMV(m *CSR, x, y []float32) error {
	if err := checkSpMV(m, x, y); err != nil {
		return err
	}
	spmvRows(m, x, y, 0, m.Rows)
	return nil
}

// SpMVParallel sets y = A·x with rows split over cpu.Parallel workers. Each
// row is summed in the same order as SpMV, so the results are identical.
func SpMVParallel(m *CSR, x, y []float32) error {
	if err := checkSpMV(m, x, y); err != nil {
		return err
	}
	cpu.Parallel(m.Rows, 64, func(lo, hi int) { spmvRows(m, x, y, lo, hi) })
	return nil
}
