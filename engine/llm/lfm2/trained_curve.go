package lfm2

// The trained model's loss curve: loss_curve.csv, which train_lfm2.py
// writes, and its chart.

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"gpulab/engine/plot"
)

// LossPoint is one row of loss_curve.csv.
type LossPoint struct {
	Step    int
	Tokens  int64   // training tokens seen
	Seconds float64 // since training started
	LR      float64
	// Train is the mean training loss (nats per token) over the steps
	// since the previous row, Val the loss on validation windows; NaN where
	// the row has none.
	Train, Val float64
}

// lossColumns is loss_curve.csv's header.
var lossColumns = []string{"step", "tokens", "seconds", "lr", "train_loss", "val_loss"}

// LossCurve reads the trained model's loss_curve.csv.
func (t *Trained) LossCurve() ([]LossPoint, error) {
	return ReadLossCurve(filepath.Join(t.Dir, "loss_curve.csv"))
}

// ReadLossCurve reads a loss_curve.csv. Errors name the line and the
// column.
func ReadLossCurve(path string) ([]LossPoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("lfm2: %w", err)
	}
	defer f.Close()
	points, err := parseLossCurve(f)
	if err != nil {
		return nil, fmt.Errorf("lfm2: %s: %w", path, err)
	}
	return points, nil
}

// parseLossCurve reads the CSV of ReadLossCurve.
func parseLossCurve(r io.Reader) ([]LossPoint, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(lossColumns)
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if !slices.Equal(header, lossColumns) {
		return nil, fmt.Errorf("header %v, want %v", header, lossColumns)
	}
	var out []LossPoint
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		var p LossPoint
		nums := make([]float64, len(rec))
		for i, s := range rec {
			if s == "" && i >= 4 { // a loss not measured at this step
				nums[i] = math.NaN()
				continue
			}
			if nums[i], err = strconv.ParseFloat(s, 64); err != nil || math.IsInf(nums[i], 0) || math.IsNaN(nums[i]) {
				return nil, fmt.Errorf("line %d: %s = %q is not a finite number", line, lossColumns[i], s)
			}
		}
		p.Step, p.Tokens, p.Seconds, p.LR, p.Train, p.Val = int(nums[0]), int64(nums[1]), nums[2], nums[3], nums[4], nums[5]
		if len(out) > 0 && p.Step <= out[len(out)-1].Step {
			return nil, fmt.Errorf("line %d: step %d does not follow step %d", line, p.Step, out[len(out)-1].Step)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no rows")
	}
	return out, nil
}

// maxCurvePoints is the most points of each series LossCurveFigure draws:
// consecutive rows are averaged down to it.
const maxCurvePoints = 200

// LossCurveFigure charts the training and the validation loss against the
// training tokens seen, in millions.
func LossCurveFigure(points []LossPoint) (*plot.Figure, error) {
	train := lossSeries("training", points, func(p LossPoint) float64 { return p.Train })
	val := lossSeries("validation", points, func(p LossPoint) float64 { return p.Val })
	var series []plot.Series
	for _, s := range []plot.Series{train, val} {
		if len(s.X) > 0 {
			series = append(series, s)
		}
	}
	if len(series) == 0 {
		return nil, fmt.Errorf("lfm2: the loss curve has no losses in its %d rows", len(points))
	}
	return plot.Lines("loss while training", "training tokens seen (millions)", "loss (nats per token)", series...), nil
}

// lossSeries is the rows where loss is measured, as (millions of tokens,
// loss), averaged over runs of consecutive rows down to maxCurvePoints.
func lossSeries(name string, points []LossPoint, loss func(LossPoint) float64) plot.Series {
	var xs, ys []float64
	for _, p := range points {
		if v := loss(p); !math.IsNaN(v) {
			xs, ys = append(xs, float64(p.Tokens)/1e6), append(ys, v)
		}
	}
	s := plot.Series{Name: name}
	group := (len(xs) + maxCurvePoints - 1) / maxCurvePoints
	for lo := 0; lo < len(xs); lo += group {
		hi := min(lo+group, len(xs))
		var x, y float64
		for i := lo; i < hi; i++ {
			x, y = x+xs[i], y+ys[i]
		}
		s.X, s.Y = append(s.X, x/float64(hi-lo)), append(s.Y, y/float64(hi-lo))
	}
	return s
}
