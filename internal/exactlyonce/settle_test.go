package exactlyonce

import (
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
)

// fed is feed, returning once every goroutine of the bubble is blocked
// (the records delivered are processed as far as they can be).
func (d *driver) fed(batches ...[]sluice.Record) {
	d.feed(batches...)
	synctest.Wait()
}

// commitAndStop waits until every goroutine of the bubble is blocked (the
// records delivered are processed), has the group commit (Offsets) and
// stops Run, failing the test unless Run returned nil.
func commitAndStop(t *testing.T, d *driver, stop func() error) {
	t.Helper()
	synctest.Wait()
	d.do(func(g *Group) { g.Offsets() })
	if err := stop(); err != nil {
		t.Fatalf("Run returned %v, want nil", err)
	}
}
