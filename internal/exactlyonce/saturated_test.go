package exactlyonce

import (
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
)

// The Group reports the runtime's saturation: true while the record it
// delivered fills the in-flight budget (WithMaxInFlight(1)), false before
// and once the record finished. A wrapped group that does not tell is
// never saturated.
func TestSaturatedIsTheRuntimes(t *testing.T) {
	for _, c := range []struct {
		name   string
		hidden bool
	}{{"runtime", false}, {"wrapped group that does not tell", true}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				txn := &stubTxn{}
				gs := newGates("0-0-a")
				d := newDriver(txn, Config{})
				if c.hidden {
					d.wrap = func(g sluice.Group) sluice.Group { return struct{ sluice.Group }{g} }
				}
				_, stop := run(t, d, fanOut(txn, gs), pipeline.WithMaxInFlight(1))
				d.do(func(g *Group) {
					checkSaturated(t, g, false, "before any record")
					must(t, g.Assign([]sluice.TopicPartition{tp(0)}))
					g.Deliver(tp(0), recs(0, 0, 1))
				})
				synctest.Wait() // the record waits at its gate
				d.do(func(g *Group) { checkSaturated(t, g, !c.hidden, "with the record in flight") })
				gs.open("0-0-a")
				synctest.Wait()
				d.do(func(g *Group) { checkSaturated(t, g, false, "once the record finished") })
				must(t, stop())
				checkCommits(t, txn, offs(0, 1))
			})
		})
	}
}

// checkSaturated checks what g reports as a source asks it: by a type
// assertion, a group without the method being never saturated.
func checkSaturated(t *testing.T, g sluice.Group, want bool, when string) {
	t.Helper()
	s, ok := g.(interface{ Saturated() bool })
	if got := ok && s.Saturated(); got != want {
		t.Errorf("%s: saturated = %v (has Saturated: %v), want %v", when, got, ok, want)
	}
}
