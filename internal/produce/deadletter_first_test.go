package produce_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice/internal/produce"
)

// While a dead letter waits for room in a full queue, the Produce stages
// of the same producer send nothing: the dead letter goes in at its next
// try, before any message of theirs, and then they go on.
func TestStagesHoldBackWhileADeadLetterWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newStage(false)
		c.refuse["not json"] = 1
		dl := produce.DeadLetter(c, c.tr, dlqName, "dlq")
		t0 := time.Now()
		done := inBackground(func() error { return dl(t.Context(), invalidRecord()) })
		synctest.Wait() // refused once: it waits QueueFullWait
		f, r := c.started(t, 3, recordMessage)
		if got := c.triesOf("v0"); len(got) > 0 {
			t.Fatalf("the stage sent v0 at %v while a dead letter waited for room", offsets(got, t0))
		}
		must(t, <-done)
		f.WaitCommitted(t, "in", 0, 3)
		must(t, r.Stop(t))
		dlTries, v0 := c.triesOf("not json"), c.triesOf("v0")
		if want := []time.Time{t0, t0.Add(produce.QueueFullWait)}; len(dlTries) != 2 || dlTries[1] != want[1] {
			t.Errorf("the dead letter was tried at %v, want at %v", offsets(dlTries, t0), offsets(want, t0))
		}
		if len(v0) == 0 || v0[0].Before(dlTries[len(dlTries)-1]) {
			t.Errorf("v0 first tried at %v, before the dead letter went in at %v", offsets(v0, t0), offsets(dlTries, t0))
		}
		checkSent(t, c, "not json", "v0", "v1", "v2")
	})
}
