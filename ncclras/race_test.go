//go:build race

package ncclras

// raceEnabled: under the race detector sync.Pool drops what it is given at
// random (so regexp allocates a machine per match) and allocation counts
// say nothing of the client's own bounds.
const raceEnabled = true
