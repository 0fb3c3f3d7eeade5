//go:build race

package rules

// raceEnabled tells that the race detector is on: sync.Pool then drops a share of what is
// put in it, so regexp's matchers are allocated again now and then.
const raceEnabled = true
