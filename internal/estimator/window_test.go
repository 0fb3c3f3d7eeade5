package estimator

import (
	"sync/atomic"
	"testing"
)

func TestAddTagged(t *testing.T) {
	tests := []struct {
		name    string
		adds    [][2]uint64 // tick, delta
		readAt  uint64
		want    uint64
		wantOld uint64 // value read at readAt-1
	}{
		{"same tick adds", [][2]uint64{{5, 1}, {5, 2}}, 5, 3, 0},
		{"newer tick restarts", [][2]uint64{{5, 1}, {17, 4}}, 17, 4, 0},
		{"older tick restarts too", [][2]uint64{{17, 4}, {5, 1}}, 5, 1, 0},
		{"saturates", [][2]uint64{{3, valMax - 1}, {3, 5}}, 3, valMax, 0},
		{"delta above the field saturates", [][2]uint64{{3, 1 << 63}}, 3, valMax, 0},
		{"tick wraps the tag", [][2]uint64{{tagMask, 7}, {tagMask + 1, 2}}, tagMask + 1, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w atomic.Uint64
			for _, a := range tt.adds {
				addTagged(&w, a[0], a[1])
			}
			if got := valueAt(&w, tt.readAt); got != tt.want {
				t.Errorf("valueAt(%d) = %d, want %d", tt.readAt, got, tt.want)
			}
			if got := valueAt(&w, tt.readAt-1); got != tt.wantOld {
				t.Errorf("valueAt(%d) = %d, want %d", tt.readAt-1, got, tt.wantOld)
			}
		})
	}
}

func TestUseDecays(t *testing.T) {
	var ring [numBuckets]bucket
	addTagged(&ring[100%numBuckets].n, 100, 8)
	tests := []struct {
		tick uint64
		want float64
	}{
		{100, 8},
		{100 + decayTicks, 4},
		{100 + 2*decayTicks, 2},
		{100 + numBuckets, 0},
	}
	for _, tt := range tests {
		if got, ok := useBelow(&ring, tt.tick, 100); !ok || got != tt.want {
			t.Errorf("use at tick %d = %v, %v; want %v, true", tt.tick, got, ok, tt.want)
		}
	}
	if _, ok := useBelow(&ring, 100, 7); ok {
		t.Errorf("use 8 reported below a bound of 7")
	}
}
