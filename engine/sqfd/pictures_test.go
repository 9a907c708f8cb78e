package sqfd

import (
	"slices"
	"strings"
	"testing"

	"gpulab/engine/cluster/kmedoids"
)

// centroid is one record of a signature as Extract returns it: the
// features in their own units, scaled, then the weight.
func centroid(weight float32, f ...float32) []float32 {
	out := make([]float32, 0, Features+1)
	for i, v := range f {
		out = append(out, v*Scales[i])
	}
	return append(out, weight)
}

func TestMarkCentroids(t *testing.T) {
	const w, h = 20, 10
	img := make([]float32, 3*w*h)
	for i := range img {
		img[i] = 0.5
	}
	// At (0.5, 0.5): pixel (10, 5); weight 0.1: half-width 2 + 2 = 4.
	sig := centroid(0.1, 0.5, 0.5, 50, 0, 0, 1, 1)
	got, err := MarkCentroids(img, w, h, sig)
	if err != nil {
		t.Fatal(err)
	}
	at := func(x, y int) float32 { return got[3*(y*w+x)] }
	for _, tc := range []struct {
		x, y int
		want float32
	}{
		{10, 5, 1},   // the centre: white
		{13, 8, 1},   // inside the frame
		{14, 5, 0},   // the frame's right edge: black
		{6, 1, 0},    // its top-left corner
		{10, 9, 0},   // its bottom edge, at the image's edge
		{15, 5, 0.5}, // outside: unchanged
		{10, 0, 0.5}, // above the frame
	} {
		if v := at(tc.x, tc.y); v != tc.want {
			t.Errorf("pixel (%d, %d) = %g, want %g", tc.x, tc.y, v, tc.want)
		}
	}
	if p := 3 * (5*w + 10); got[p+1] != 1 || got[p+2] != 1 {
		t.Errorf("the centre is not white in every channel: %v", got[p:p+3])
	}
	if img[3*(5*w+10)] != 0.5 {
		t.Error("MarkCentroids changed its input")
	}
	for _, tc := range []struct {
		name string
		rgb  []float32
		sig  []float32
		want string
	}{
		{"short image", img[:10], sig, "10 values for a 20×10 RGB image"},
		{"broken signature", img, sig[:5], "not a whole number of centroids"},
	} {
		if _, err := MarkCentroids(tc.rgb, w, h, tc.sig); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestSignatureTable(t *testing.T) {
	sig := append(centroid(0.25, 0.5, 0.75, 60, -10, 20, 3, 2), centroid(0.75, 0.1, 0.2, 30, 5, -5, 12, 0)...)
	md, err := SignatureTable(sig)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| 0 | 0.50 | 0.75 | 60.0 | -10.0 | 20.0 | 3.0 | 2.00 | 0.250 |",
		"| 1 | 0.10 | 0.20 | 30.0 | 5.0 | -5.0 | 12.0 | 0.00 | 0.750 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
	if _, err := SignatureTable(nil); err == nil {
		t.Error("an empty signature gave a table")
	}
}

func TestFamilyPictures(t *testing.T) {
	const w, h = 12, 8
	pics, err := FamilyPictures(w, h, 2)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pics {
		names = append(names, p.Name())
	}
	want := []string{"original 0", "original 1", "mirrored 0", "mirrored 1", "tinted 0", "tinted 1", "dark 0", "dark 1"}
	if !slices.Equal(names, want) {
		t.Fatalf("pictures %v, want %v", names, want)
	}
	orig, shifted, mirrored, tinted, dark := pics[0].RGB, pics[1].RGB, pics[2].RGB, pics[4].RGB, pics[6].RGB
	px := func(x, y, c int) int { return 3*(y*w+x) + c }
	for y := range h {
		for x := range w {
			for c := range 3 {
				v := orig[px(x, y, c)]
				if x+1 < w && shifted[px(x, y, c)] != orig[px(x+1, y, c)] {
					t.Fatalf("variant 1 is not the crop shifted by one pixel at (%d, %d)", x, y)
				}
				if mirrored[px(x, y, c)] != orig[px(w-1-x, y, c)] {
					t.Fatalf("mirrored (%d, %d) is not original (%d, %d)", x, y, w-1-x, y)
				}
				wantTint := v
				if c == 0 {
					wantTint = min(1, 0.6*v+0.4)
				}
				if tinted[px(x, y, c)] != wantTint || dark[px(x, y, c)] != v*0.45 {
					t.Fatalf("tint or darkening wrong at (%d, %d), channel %d", x, y, c)
				}
			}
		}
	}
	for _, tc := range []struct{ w, h, variants int }{{0, 8, 1}, {12, 8, 0}, {12, 8, 37}} {
		if _, err := FamilyPictures(tc.w, tc.h, tc.variants); err == nil {
			t.Errorf("FamilyPictures(%d, %d, %d) did not fail", tc.w, tc.h, tc.variants)
		}
	}
}

// TestPictureGrouping is the notebook's claim: k-medoids with SQFD over the
// signatures of the four families puts each family in a cluster of its own.
func TestPictureGrouping(t *testing.T) {
	pics, err := FamilyPictures(96, 64, 6)
	if err != nil {
		t.Fatal(err)
	}
	set, err := PictureSignatures(pics, 10, 2000)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMetric(set, Kernel{Gaussian, 1e-3})
	if err != nil {
		t.Fatal(err)
	}
	r, err := kmedoids.Fit(m, kmedoids.Config{K: 4, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	md, err := GroupingMarkdown(r, pics)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md, "Each of the 4 clusters holds exactly one whole family") {
		t.Errorf("the families are not separated:\n%s", md)
	}
}

func TestGroupingMarkdown(t *testing.T) {
	pics := []Picture{{Family: "original"}, {Family: "original", Variant: 1}, {Family: "dark"}, {Family: "dark", Variant: 1}}
	for _, tc := range []struct {
		name   string
		labels []int32
		want   []string
	}{
		{"separated", []int32{0, 0, 1, 1}, []string{"| 0 | original 0 | original 0, original 1 |", "| 1 | dark 0 | dark 0, dark 1 |",
			"Each of the 2 clusters holds exactly one whole family"}},
		{"mixed", []int32{0, 1, 1, 1}, []string{"Cluster 1 mixes families.", "The original family is split between clusters.",
			"do not separate every transformation"}},
		{"both split", []int32{0, 1, 0, 1}, []string{"Clusters 0, 1 mix families.", "The original, dark families are split"}},
	} {
		r := &kmedoids.Result{Medoids: []int{0, 2}, Labels: tc.labels}
		md, err := GroupingMarkdown(r, pics)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(md, w) {
				t.Errorf("%s: %q lacks %q", tc.name, md, w)
			}
		}
	}
	if _, err := GroupingMarkdown(&kmedoids.Result{Labels: []int32{0}}, pics); err == nil {
		t.Error("labels that do not match the pictures gave a table")
	}
}
