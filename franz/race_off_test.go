//go:build !race

package franz

// raceEnabled: the race detector is on (sync.Pool then drops some of
// what is put back, so allocation counts are not exact).
const raceEnabled = false
