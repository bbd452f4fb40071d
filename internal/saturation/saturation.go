// Package saturation asks a sluice.Group whether the runtime's in-flight
// budget is full, for the sources that take nothing from their client
// meanwhile and the groups that wrap the runtime's and pass its answer on.
package saturation

import "github.com/sluice-go/sluice"

// teller is the part of a Group that tells whether the runtime's
// in-flight budget is full: the runtime's group (internal/engine), and the
// groups wrapping it that pass its answer through (exactly-once, follow).
type teller interface{ Saturated() bool }

// Of reports whether g says the runtime's in-flight budget is full; false
// for a Group that does not tell. It takes no lock of g's.
func Of(g sluice.Group) bool {
	t, ok := g.(teller)
	return ok && t.Saturated()
}
