//go:build !race

package ncclras

const raceEnabled = false
