package plot

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLinesWritesPNG(t *testing.T) {
	for _, logY := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "chart.png")
		err := Lines(path, Chart{
			Title: "throughput", X: "clients", Y: "interactions/s", LogY: logY, FromZero: true,
			Series: []Series{
				{Name: "direct", Points: [][2]float64{{10, 1}, {20, 2}, {40, 1.5}}},
				{Name: "fifo", Points: [][2]float64{{10, 1}, {20, 2}, {40, 0}}, Dashed: true},
				{Name: "fifo again", Points: [][2]float64{{10, 1.5}, {20, 2.5}}, Style: 2},
			},
		})
		require.NoError(t, err)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		img, err := png.Decode(bytes.NewReader(b))
		require.NoError(t, err)
		require.Greater(t, img.Bounds().Dx(), 100)
	}
}

func TestLinesRefuses(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, file string
		chart      Chart
	}{
		{"not png", "chart.svg", Chart{Series: []Series{{Name: "a", Points: [][2]float64{{1, 1}}}}}},
		{"no series", "chart.png", Chart{}},
		{"nothing drawable in log scale", "chart.png", Chart{LogY: true, Series: []Series{{Name: "a", Points: [][2]float64{{1, 0}, {2, -1}}}}}},
		{"not finite", "chart.png", Chart{Series: []Series{{Name: "a", Points: [][2]float64{{1, math.NaN()}, {math.Inf(1), 2}}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Error(t, Lines(filepath.Join(dir, tt.file), tt.chart))
		})
	}
}

func TestPoints(t *testing.T) {
	got := points([][2]float64{{1, 2}, {2, 0}, {3, math.NaN()}, {4, 5}}, true)
	require.Len(t, got, 2)
	require.Equal(t, 4.0, got[1].X)
	require.Len(t, points([][2]float64{{1, 2}, {2, 0}}, false), 2)
}

func TestPlainTicks(t *testing.T) {
	var labels []string
	for _, tk := range (plainTicks{}).Ticks(0, 25) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	require.Equal(t, []string{"0", "10", "20"}, labels)
}
