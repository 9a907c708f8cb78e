package sqfd

import (
	"fmt"
	"strings"

	"gpulab/datasets"
	"gpulab/engine/cluster/kmedoids"
)

// What notebook 05 shows of signatures on pictures: a signature's
// centroids drawn over its image and listed in the features' own units, and
// families of transformed pictures that k-medoids should tell apart.

// MarkCentroids returns a copy of a w×h RGB image (values in [0, 1], as
// PixelFeatures reads it) with a square drawn at the (x, y) of each centroid
// of sig, a signature as Extract returns it: black, with a white centre,
// 2·(2 + 20·weight) + 1 pixels wide, so that the heavier centroids stand
// out. Squares are clipped to the image.
func MarkCentroids(rgb []float32, w, h int, sig []float32) ([]float32, error) {
	if w <= 0 || h <= 0 || len(rgb) != 3*w*h {
		return nil, fmt.Errorf("sqfd: %d values for a %d×%d RGB image", len(rgb), w, h)
	}
	if err := check(sig, Features, "signature"); err != nil {
		return nil, err
	}
	out := append([]float32(nil), rgb...)
	for c := range len(sig) / (Features + 1) {
		f := sig[c*(Features+1) : (c+1)*(Features+1)]
		px, py := int(f[0]/Scales[0]*float32(w)), int(f[1]/Scales[1]*float32(h))
		r := 2 + int(20*f[Features])
		for y := max(py-r, 0); y <= min(py+r, h-1); y++ {
			for x := max(px-r, 0); x <= min(px+r, w-1); x++ {
				v := float32(0)
				if max(x-px, px-x) < r && max(y-py, py-y) < r {
					v = 1
				}
				p := 3 * (y*w + x)
				out[p], out[p+1], out[p+2] = v, v, v
			}
		}
	}
	return out, nil
}

// SignatureTable is a Markdown table of a signature as Extract returns it:
// each centroid's features in their own units (Scales undone: x and y as
// fractions of the width and height, CIELAB, contrast, coarseness) and its
// weight.
func SignatureTable(sig []float32) (string, error) {
	if err := check(sig, Features, "signature"); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("| centroid | x | y | L | a | b | contrast | coarseness | weight |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for c := range len(sig) / (Features + 1) {
		f := sig[c*(Features+1) : (c+1)*(Features+1)]
		var v [Features]float32
		for i := range v {
			v[i] = f[i] / Scales[i]
		}
		fmt.Fprintf(&b, "| %d | %.2f | %.2f | %.1f | %.1f | %.1f | %.1f | %.2f | %.3f |\n",
			c, v[0], v[1], v[2], v[3], v[4], v[5], v[6], f[Features])
	}
	return b.String(), nil
}

// Families are the transformations of FamilyPictures, in order.
var Families = []string{"original", "mirrored", "tinted", "dark"}

// A Picture is one image of FamilyPictures.
type Picture struct {
	Family  string // one of Families
	Variant int
	W, H    int
	RGB     []float32
}

// Name is the picture's label, e.g. "tinted 3".
func (p Picture) Name() string { return fmt.Sprintf("%s %d", p.Family, p.Variant) }

// maxShift is how far FamilyPictures' crops move: PhotoRGB is drawn this
// many pixels wider and taller than the pictures.
const maxShift = 8

// FamilyPictures returns variants w×h pictures of each of Families, all cut
// from datasets.PhotoRGB(w+8, h+8): variant v is the crop shifted by
// (v mod 4, v div 4) pixels. The mirrored family is flipped left to right,
// the tinted one has its red channel raised (0.6·r + 0.4), and the dark one
// every channel multiplied by 0.45.
func FamilyPictures(w, h, variants int) ([]Picture, error) {
	if w <= 0 || h <= 0 {
		return nil, fmt.Errorf("sqfd: pictures of %d×%d pixels", w, h)
	}
	if variants < 1 || (variants-1)/4 > maxShift {
		return nil, fmt.Errorf("sqfd: %d variants per family: want 1 to %d", variants, 4*(maxShift+1))
	}
	base := datasets.PhotoRGB(w+maxShift, h+maxShift)
	var pics []Picture
	for _, family := range Families {
		for v := range variants {
			rgb := make([]float32, 3*w*h)
			for y := range h {
				for x := range w {
					sx, sy := x+v%4, y+v/4
					if family == "mirrored" {
						sx = w - 1 - x + v%4
					}
					for c := range 3 {
						p := base[3*(sy*(w+maxShift)+sx)+c]
						switch {
						case family == "tinted" && c == 0:
							p = min(1, 0.6*p+0.4)
						case family == "dark":
							p *= 0.45
						}
						rgb[3*(y*w+x)+c] = p
					}
				}
			}
			pics = append(pics, Picture{Family: family, Variant: v, W: w, H: h, RGB: rgb})
		}
	}
	return pics, nil
}

// PictureSignatures extracts the signature of every picture (Extract with
// k centroids from samples pixels, seeded by the variant + 1) into one set.
func PictureSignatures(pics []Picture, k, samples int) (*datasets.Signatures, error) {
	set := &datasets.Signatures{Dim: Features}
	for _, p := range pics {
		sig, err := Extract(p.RGB, p.W, p.H, k, samples, uint64(p.Variant+1))
		if err != nil {
			return nil, fmt.Errorf("sqfd: picture %s: %w", p.Name(), err)
		}
		set.Append(sig)
	}
	return set, set.Validate()
}

// GroupingMarkdown is a table of the clusters of a k-medoids run over
// pictures (each cluster's medoid and members), then what it shows: whether
// every cluster gathers exactly one whole family.
func GroupingMarkdown(r *kmedoids.Result, pics []Picture) (string, error) {
	if len(r.Labels) != len(pics) {
		return "", fmt.Errorf("sqfd: %d labels for %d pictures", len(r.Labels), len(pics))
	}
	var b strings.Builder
	b.WriteString("| cluster | medoid | members |\n|---:|---|---|\n")
	familiesOf := make([]map[string]int, len(r.Medoids)) // cluster -> family -> members
	for c, md := range r.Medoids {
		familiesOf[c] = map[string]int{}
		var members []string
		for i, l := range r.Labels {
			if int(l) == c {
				members = append(members, pics[i].Name())
				familiesOf[c][pics[i].Family]++
			}
		}
		fmt.Fprintf(&b, "| %d | %s | %s |\n", c, pics[md].Name(), strings.Join(members, ", "))
	}
	clustersOf := map[string]int{} // family -> clusters holding some of it
	var mixed []string
	for c, fams := range familiesOf {
		for f := range fams {
			clustersOf[f]++
		}
		if len(fams) > 1 {
			mixed = append(mixed, fmt.Sprint(c))
		}
	}
	var split []string
	for _, f := range Families {
		if clustersOf[f] > 1 {
			split = append(split, f)
		}
	}
	b.WriteString("\n")
	switch {
	case len(mixed) == 0 && len(split) == 0:
		fmt.Fprintf(&b, "Each of the %d clusters holds exactly one whole family: the medoids told the transformations apart.\n", len(r.Medoids))
	default:
		switch len(mixed) {
		case 0:
		case 1:
			fmt.Fprintf(&b, "Cluster %s mixes families. ", mixed[0])
		default:
			fmt.Fprintf(&b, "Clusters %s mix families. ", strings.Join(mixed, ", "))
		}
		switch len(split) {
		case 0:
		case 1:
			fmt.Fprintf(&b, "The %s family is split between clusters. ", split[0])
		default:
			fmt.Fprintf(&b, "The %s families are split between clusters. ", strings.Join(split, ", "))
		}
		b.WriteString("The signatures do not separate every transformation here.\n")
	}
	return b.String(), nil
}
