package produce_test

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
)

// completions records the n of every OnRecordsCompleted.
type completions struct {
	mu sync.Mutex
	ns []int
}

func (c *completions) OnRecordsCompleted(_ sluice.TopicPartition, n int, _ int64) {
	c.mu.Lock()
	c.ns = append(c.ns, n)
	c.mu.Unlock()
}

func (c *completions) seen() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.ns)
}

// gatedAt returns a toMsg that waits for gate before converting the record
// of value v (and converts the others at once).
func gatedAt(v string, gate <-chan struct{}) func(sluice.Record) (sluice.Message, error) {
	return func(rec sluice.Record) (sluice.Message, error) {
		if string(rec.Value) == v {
			<-gate
		}
		return recordMessage(rec)
	}
}

// The reports waiting on the stage's channel are handled together: the
// values of five reports that arrived while the stage was busy complete
// with one Done (one OnRecordsCompleted of 5), not five.
func TestWaitingReportsCompleteTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newStage(true)
		gate := make(chan struct{})
		var done completions
		f, r := c.started(t, 6, gatedAt("v5", gate), pipeline.WithHooks(&done)) // v0..v4 produced, the stage waits in toMsg of v5
		c.release(valueNames(0, 5)...)
		close(gate)
		synctest.Wait()
		c.release("v5")
		f.WaitCommitted(t, "in", 0, 6)
		must(t, r.Stop(t))
		if got := done.seen(); !slices.Equal(got, []int{5, 1}) {
			t.Errorf("completions %v, want [5 1]", got)
		}
	})
}

// A failed delivery among waiting reports stops the stage after the
// values delivered before it completed: those commit, the ones after it
// do not.
func TestFailedReportAmongWaitingOnesCommitsThoseBefore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newStage(true)
		errBroker := errors.New("broker said no")
		c.fail["v2"] = errBroker
		gate := make(chan struct{})
		f, r := c.started(t, 6, gatedAt("v5", gate))
		c.release(valueNames(0, 5)...)
		close(gate)
		synctest.Wait()
		c.release("v5") // the stopped stage still waits for its outstanding report
		checkStageError(t, r.Wait(t), 2, "delivery to out failed: broker said no")
		checkInCommitted(t, f, 2, "v0, v1 delivered before v2 failed")
	})
}
