//go:build !race

package rules

// raceEnabled tells that the race detector is on.
const raceEnabled = false
