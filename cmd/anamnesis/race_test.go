//go:build race

package main

// raceEnabled: built with -race (see parallel).
const raceEnabled = true
