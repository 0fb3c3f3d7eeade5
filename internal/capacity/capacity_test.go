package capacity

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func steps(pairs ...float64) []Step {
	var out []Step
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, Step{Capacity: time.Duration(pairs[i]) * time.Millisecond, Throughput: pairs[i+1]})
	}
	return out
}

func TestChoose(t *testing.T) {
	cases := []struct {
		name  string
		steps []Step
		want  time.Duration
	}{
		{"rises then falls", steps(10, 100, 20, 180, 40, 250, 80, 240, 160, 150), 40 * time.Millisecond},
		{"flat past the knee: the smallest on the plateau", steps(10, 100, 20, 200, 40, 205, 80, 206), 20 * time.Millisecond},
		{"noisy plateau", steps(40, 300, 10, 120, 20, 290, 80, 310), 20 * time.Millisecond},
		{"one step", steps(10, 5), 10 * time.Millisecond},
		// A calibrate run with 3 s steps: 14 ms was 10% above its neighbours by chance.
		{"one lucky step", steps(2, 282, 3, 320, 7, 348, 10, 327, 14, 408, 17, 348, 20, 345, 27, 317, 54, 348, 109, 389, 218, 370),
			109 * time.Millisecond},
	}
	for _, tc := range cases {
		i := Choose(tc.steps, 0.93)
		require.GreaterOrEqual(t, i, 0, tc.name)
		assert.Equal(t, tc.want, tc.steps[i].Capacity, tc.name)
	}
	assert.Equal(t, -1, Choose(nil, 0.95))
	assert.Equal(t, []float64{140, 180, 240, 240, 195}, Smoothed(steps(10, 100, 20, 180, 40, 250, 80, 240, 160, 150)))
	assert.Equal(t, []float64{5}, Smoothed(steps(10, 5)))
}

func TestCandidatesAndRefine(t *testing.T) {
	assert.Equal(t, []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond},
		Candidates(5*time.Millisecond, 8))
	s := steps(10, 100, 20, 180, 40, 250, 80, 240)
	assert.Equal(t, []time.Duration{30 * time.Millisecond, 60 * time.Millisecond}, Refine(s, 2, time.Millisecond))
	assert.Equal(t, []time.Duration{15 * time.Millisecond}, Refine(s, 0, time.Millisecond))
	assert.Empty(t, Refine(steps(10, 1, 11, 2), 1, time.Millisecond), "neighbours too close")
}

func TestPrintMarksTheChoice(t *testing.T) {
	var b bytes.Buffer
	s := steps(40, 250, 10, 100, 20, 180)
	Print(&b, s, 0, "statements")
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 4)
	assert.Contains(t, lines[1], "10ms")
	assert.Contains(t, lines[3], "40ms")
	assert.Contains(t, lines[3], "<- chosen")
}

func TestRoundKeepsSmallCapacitiesPositive(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{
		472 * time.Microsecond:   470 * time.Microsecond,
		4 * time.Microsecond:     time.Microsecond,
		3784 * time.Microsecond:  3780 * time.Microsecond,
		81600 * time.Microsecond: 82 * time.Millisecond,
	} {
		require.Equal(t, want, Round(in), in)
	}
}
