//go:build race

package main

// raceEnabled: tests that move hundreds of MB scale down under -race.
const raceEnabled = true
