package sparse

import (
	"fmt"
	"os"
	"strings"
)

// LoadMatrix returns the matrix that spec names, in the forms that
// `lab bench --matrix` and the notebooks accept:
//
//	gen:rmat:scale=16,ef=8      a generator spec (see Generate); "gen:" may be left out
//	path/to/file.mtx[.gz]       a Matrix Market file
//	HB/bcsstk01                 a SuiteSparse matrix, downloaded once into the cache (see Fetch)
func LoadMatrix(spec string) (*CSR, error) {
	spec = strings.TrimSpace(spec)
	if gen, ok := strings.CutPrefix(spec, "gen:"); ok {
		return Generate(gen)
	}
	if kind, _, ok := strings.Cut(spec, ":"); ok && !strings.ContainsAny(kind, `/\.`) {
		return Generate(spec)
	}
	path := spec
	if _, err := os.Stat(spec); err != nil {
		if strings.HasSuffix(spec, ".mtx") || strings.HasSuffix(spec, ".gz") {
			return nil, fmt.Errorf("sparse: matrix %q: %w", spec, err)
		}
		if strings.Count(spec, "/") != 1 {
			return nil, fmt.Errorf("sparse: matrix %q is not gen:SPEC, an existing .mtx file, or a SuiteSparse Group/Name", spec)
		}
		if path, err = Fetch(spec, FetchOptions{}); err != nil {
			return nil, err
		}
	}
	coo, _, err := ReadMatrixMarketFile(path)
	if err != nil {
		return nil, err
	}
	m, err := coo.ToCSR()
	if err != nil {
		return nil, fmt.Errorf("sparse: matrix %s: %w", path, err)
	}
	return m, nil
}
