// Package plot writes the benchmark charts: PNG line charts of a few named series of (x, y)
// points, drawn with gonum.org/v1/plot. The simulator and the scenario runner use it for
// throughput and response time against load.
package plot

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Chart is one line chart.
type Chart struct {
	// Title is printed above the chart.
	Title string
	// X and Y label the axes.
	X, Y string
	// LogY draws the y axis in log scale. Points with y <= 0 cannot be drawn there and
	// are left out.
	LogY bool
	// FromZero starts a linear y axis at zero, so that lines read as proportions of one
	// another; false fits the axis to the points.
	FromZero bool
	// Series are the lines, each in its own color and marker, named in the legend at the
	// right of the chart.
	Series []Series
}

// Series is one named line: its points are joined in the order given.
type Series struct {
	Name   string
	Points [][2]float64
	// Dashed draws the line dashed, to set a group of series apart from another.
	Dashed bool
	// Style picks the color and marker: series with the same Style look alike (but for
	// Dashed). 0 gives each series its own, by its place in the chart.
	Style int
}

// Size of the written image, the legend in a column at its right.
const (
	width  = 24 * vg.Centimeter
	height = 12 * vg.Centimeter
	gap    = 3 * vg.Millimeter
)

// Lines writes c as a PNG image to path, which must end in ".png". Points that are not
// finite are left out; a series left with no point is left out of the legend too. It is an
// error if no point at all remains.
func Lines(path string, c Chart) error {
	if !strings.EqualFold(filepath.Ext(path), ".png") {
		return fmt.Errorf("plot %q: the file name must end in .png", path)
	}
	p := gplot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = c.X
	p.Y.Label.Text = c.Y
	p.X.Tick.Marker = plainTicks{}
	p.Y.Tick.Marker = plainTicks{}
	p.Add(plotter.NewGrid())
	if c.LogY {
		p.Y.Scale = gplot.LogScale{}
		p.Y.Tick.Marker = gplot.LogTicks{Prec: -1}
	}
	legend := gplot.NewLegend()
	legend.Top, legend.Left = true, true
	legendWidth := vg.Length(0)
	for i, s := range c.Series {
		xys := points(s.Points, c.LogY)
		if len(xys) == 0 {
			continue
		}
		line, marks, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("plot %q: series %q: %w", path, s.Name, err)
		}
		style := i
		if s.Style > 0 {
			style = s.Style - 1
		}
		line.Color = plotutil.DarkColors[style%len(plotutil.DarkColors)]
		line.Width = vg.Points(1.5)
		if s.Dashed {
			line.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		}
		marks.Color = line.Color
		marks.Shape = plotutil.Shape(style)
		p.Add(line, marks)
		legend.Add(s.Name, line, marks)
		legendWidth = max(legendWidth, legend.ThumbnailWidth+legend.TextStyle.Rectangle(" "+s.Name).Max.X)
	}
	if legendWidth == 0 {
		return fmt.Errorf("plot %q: %w", path, errNoPoints)
	}
	if c.FromZero && !c.LogY {
		p.Y.Min = min(p.Y.Min, 0)
	}
	img := vgimg.New(width, height)
	dc := draw.New(img)
	legendWidth = min(legendWidth+2*gap, width/2)
	p.Draw(draw.Crop(dc, 0, -legendWidth, 0, 0))
	legend.Draw(draw.Crop(dc, width-legendWidth+gap, 0, 0, -2*gap))
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("plot %q: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("plot %q: %w", path, err)
	}
	return nil
}

// plainTicks are gonum's default ticks, labelled without trailing zeros.
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []gplot.Tick {
	ticks := gplot.DefaultTicks{}.Ticks(lo, hi)
	for i, t := range ticks {
		if t.Label != "" {
			ticks[i].Label = strconv.FormatFloat(t.Value, 'g', 6, 64)
		}
	}
	return ticks
}

var errNoPoints = errors.New("no point to draw")

// points keeps the drawable points of pts.
func points(pts [][2]float64, logY bool) plotter.XYs {
	xys := make(plotter.XYs, 0, len(pts))
	for _, pt := range pts {
		x, y := pt[0], pt[1]
		if math.IsNaN(x) || math.IsInf(x, 0) || math.IsNaN(y) || math.IsInf(y, 0) || (logY && y <= 0) {
			continue
		}
		xys = append(xys, plotter.XY{X: x, Y: y})
	}
	return xys
}
