// Package sparse is the lab's sparse-matrix engine: the COO, CSR and CSC
// formats with conversions and validation, Matrix Market input and output,
// generators, and the SpMV and SpGEMM ladders: on the CPU, and on CUDA with
// the kernels of kernels/cuda/sparse, one row of spmvSteps (spmv_cuda.go) or
// spgemmSteps (spgemm_cuda_steps.go) per step.
//
// Indices are 0-based int32 (matrices up to 2^31-1 rows, columns and
// entries); values are float32, as in the rest of the lab.
package sparse

import "fmt"

// COO is a matrix in coordinate form: entry k is (Row[k], Col[k], Val[k]).
// Entries may be in any order and may repeat until Canonical sorts them and
// sums duplicates.
type COO struct {
	Rows, Cols int
	Row, Col   []int32
	Val        []float32
}

// CSR is compressed sparse rows: the entries of row i are at positions
// RowPtr[i]..RowPtr[i+1]-1 of ColIdx and Val, with increasing column indices.
type CSR struct {
	Rows, Cols int
	RowPtr     []int32 // len Rows+1
	ColIdx     []int32
	Val        []float32
}

// CSC is compressed sparse columns: the transpose layout of CSR.
type CSC struct {
	Rows, Cols int
	ColPtr     []int32 // len Cols+1
	RowIdx     []int32
	Val        []float32
}

// NNZ is the number of stored entries.
func (m *COO) NNZ() int { return len(m.Val) }

// NNZ is the number of stored entries.
func (m *CSR) NNZ() int { return len(m.Val) }

// NNZ is the number of stored entries.
func (m *CSC) NNZ() int { return len(m.Val) }

// Shape returns "rows×cols, nnz entries".
func (m *CSR) Shape() string { return fmt.Sprintf("%d×%d, %d entries", m.Rows, m.Cols, m.NNZ()) }
