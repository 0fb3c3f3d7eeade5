package sim

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// quickSetup is the quick setup cut down to the points the shape test looks at.
func quickSetup() Setup {
	s := DefaultSetup(true)
	s.Clients = []int{175, 200, 400}
	s.Agings = []float64{1}
	s.Capacities = []time.Duration{8 * time.Second}
	s.Bursts = []time.Duration{30 * time.Second}
	s.BlockingQueues = []int{0, 128}
	s.Sessions = 2000
	s.AdaptEvery = 2000
	s.LawClients = []int{200}
	return s
}

// TestHeadlineShapes asserts what the experiments are about, on a quick run.
func TestHeadlineShapes(t *testing.T) {
	r, err := RunAll(quickSetup(), 1, 0)
	require.NoError(t, err)
	h := r.Headlines()

	// Admission holds throughput past saturation; without it, it falls.
	require.GreaterOrEqual(t, h.FIFOAtMost, 0.9*h.FIFOPeak, "fifo past saturation")
	require.Less(t, h.DirectAtMost, 0.8*h.DirectPeak, "direct past saturation")
	require.Greater(t, h.FIFOAtMost, 1.25*h.DirectAtMost)

	// Open loop near saturation: SJF far below FIFO, aging between.
	require.Less(t, r.OfferedLoad(h.OpenAt), 1.0)
	require.Greater(t, r.OfferedLoad(h.OpenAt), 0.8)
	require.Less(t, 2*h.OpenSJF, h.OpenFIFO, "sjf well under fifo")
	for i, x := range r.Setup.Agings {
		require.GreaterOrEqual(t, h.OpenAging[i], h.OpenSJF, "aging %g at least sjf", x)
		require.Less(t, h.OpenAging[i], h.OpenFIFO, "aging %g under fifo", x)
	}
	require.Greater(t, h.OpenAging[0], h.OpenSJF, "aging 1 binds")

	// Closed loop past saturation: short interactions gain, heavy ones pay. With the queue
	// timeout an hour away no heavy unit's deadline is at risk, so short units pass overdue
	// ones under aging too and gain as much as under sjf.
	require.Less(t, 10*h.ShortSJF, h.ShortFIFO)
	require.Greater(t, h.HeavySJF, 2*h.HeavyFIFO)
	for i := range r.Setup.Agings {
		require.Less(t, 10*h.ShortAging[i], h.ShortFIFO)
	}

	// AWAIT: a blocking queue cuts the aborted sessions.
	require.Greater(t, h.AbortedSmallB[0], 0.01)
	require.Less(t, h.AbortedLargeB[0], h.AbortedSmallB[0]/5)
}

func TestReport(t *testing.T) {
	s := quickSetup()
	s.Clients = []int{100}
	s.Warmup, s.Duration = 10*time.Second, 30*time.Second
	s.CapacityClients = 100
	s.Sessions = 50
	s.BlockingQueues = []int{0}
	s.Bursts = []time.Duration{5 * time.Second, 30 * time.Second, 120 * time.Second}
	r, err := RunAll(s, 7, 2)
	require.NoError(t, err)
	again, err := RunAll(s, 7, 1)
	require.NoError(t, err)
	require.Equal(t, r, again, "the same seed gives the same results, however many workers")

	var md bytes.Buffer
	require.NoError(t, r.WriteMarkdown(&md, Meta{Command: "go run ./bench/cmd/sim", Machine: "test", GoVersion: "go", Elapsed: time.Second}))
	for _, want := range []string{"## 1. Throughput", "## 2. Response time", "## 3. AWAIT", "![throughput](throughput.png)", "| high | 2m0s |", "go run ./bench/cmd/sim"} {
		require.Contains(t, md.String(), want)
	}

	dir := t.TempDir()
	require.NoError(t, r.WriteCharts(dir))
	for _, c := range r.Charts() {
		require.True(t, strings.HasSuffix(c.File, ".png"))
		info, err := os.Stat(filepath.Join(dir, c.File))
		require.NoError(t, err)
		require.Positive(t, info.Size())
	}
}
