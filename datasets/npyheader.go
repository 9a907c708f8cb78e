package datasets

import "slices"

// NPYShape reads the header of the .npy file at path, and none of its
// data: the shape of an array of any rank from 1 up, validated as
// ReadNPYTensor validates it (the magic and version, a dtype it reads, C
// order, and a file that holds exactly the shape's bytes). A caller can so
// compare the shape with the one it expects before anything is allocated
// for the data a header claims.
func NPYShape(path string) ([]int, error) {
	f, err := openNPY(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return slices.Clone(f.shape), nil
}
