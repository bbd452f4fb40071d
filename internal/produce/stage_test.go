package produce_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit"
)

// A value's record commits only once its own delivery report succeeded,
// and in offset order: reports arriving out of order (messages of one
// stage go to several output partitions) move nothing until the first
// one came.
func TestValueCommitsOnlyAfterItsReport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newStage(true)
		f, r := c.started(t, 3, recordMessage)
		checkSent(t, c, valueNames(0, 3)...)

		c.release("v2", "v1")
		time.Sleep(5 * time.Second) // the bubble's clock: several commit intervals
		if got := f.Committed("in", 0); got != -1 {
			t.Fatalf("committed %d with v0's report outstanding, want nothing (-1)", got)
		}
		c.release("v0")
		f.WaitCommitted(t, "in", 0, 3)
		must(t, r.Stop(t))
		checkInCommitted(t, f, 3, "after Stop")
		checkNonePending(t, c.tr)
	})
}

// The stage never has more messages outstanding than its report channel
// holds, MinReportBuffer for a library with no buffer bound: with every
// report held back it produces exactly that many and waits; each report
// lets exactly one more through. So a report always finds room in the
// stage's channel (the library's delivery goroutine never blocks).
func TestOutstandingNeverExceedsTheReportBuffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const bound = produce.MinReportBuffer
		const n = bound + 6
		c := newStage(true)
		f, r := c.start(t, n, recordMessage)
		checkBoundedByReports(t, c, "messages", bound, 1)
		if held, maxInFlight, _ := c.counts(); held != bound || maxInFlight != bound {
			t.Fatalf("%d held, at most %d in flight; want %d and %d", held, maxInFlight, bound, bound)
		}

		c.deliverAll()
		f.WaitCommitted(t, "in", 0, n)
		must(t, r.Stop(t))
		checkSent(t, c, valueNames(0, n)...)
		if _, maxInFlight, overflow := c.counts(); maxInFlight != bound || overflow != 0 {
			t.Errorf("at most %d in flight, %d reports found their channel full; want %d and 0", maxInFlight, overflow, bound)
		}
	})
}

// A stage alone on a producer whose library buffers more than
// MinReportBuffer messages keeps that many outstanding, up to
// MaxReportBuffer, and never more: every report still finds room.
func TestOutstandingIsTheStagesShareOfTheLibrarysBuffer(t *testing.T) {
	for _, tc := range []struct{ buffered, bound int }{
		{5000, 5000},
		{100000, produce.MaxReportBuffer},
	} {
		t.Run(fmt.Sprint(tc.buffered), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newStage(true)
				c.maxBuffered = tc.buffered
				// A partition queue past the bound: only the stage holds
				// records back.
				f, r := c.start(t, tc.bound+2, recordMessage, pipeline.WithPartitionQueue(4*produce.MaxReportBuffer))
				checkBoundedByReports(t, c, "messages", tc.bound, 1)
				c.deliverAll()
				f.WaitCommitted(t, "in", 0, int64(tc.bound+2))
				must(t, r.Stop(t))
				if _, maxInFlight, overflow := c.counts(); maxInFlight != tc.bound || overflow != 0 {
					t.Errorf("at most %d in flight, %d reports found their channel full; want %d and 0", maxInFlight, overflow, tc.bound)
				}
			})
		})
	}
}

// A stage's report channel is its share of the library's buffer among
// the Produce stages running on the producer when it starts, within
// MinReportBuffer and MaxReportBuffer.
func TestReportBufferIsAShareOfTheLibrarysBuffer(t *testing.T) {
	for _, tc := range []struct{ buffered, stages, want int }{
		{0, 1, produce.MinReportBuffer},
		{50000, 1, produce.MaxReportBuffer},
		{50000, 8, 6250},
		{50000, 256, produce.MinReportBuffer},
		{100000, 0, produce.MaxReportBuffer},
	} {
		if got := produce.ReportBufferFor(tc.buffered, tc.stages); got != tc.want {
			t.Errorf("report buffer for %d buffered, %d stages = %d, want %d", tc.buffered, tc.stages, got, tc.want)
		}
	}
}

// A message the client refuses with a full queue is sent again, at once
// after a delivery report, else after QueueFullWait; never dropped, never
// sent twice, and the values after it wait for it.
func TestQueueFullIsRetriedNeverDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newStage(true)
		c.refuse["v1"] = 3
		f, r := c.started(t, 3, recordMessage)
		t0 := time.Now()
		checkSent(t, c, "v0") // v1 is refused

		c.release("v0") // a report: v1 is tried again at once
		time.Sleep(time.Second)
		want := []time.Time{t0, t0, t0.Add(produce.QueueFullWait), t0.Add(2 * produce.QueueFullWait)}
		if got := c.triesOf("v1"); !slices.Equal(got, want) {
			t.Errorf("v1 sent at %v, want at %v", offsets(got, t0), offsets(want, t0))
		}
		checkSent(t, c, valueNames(0, 3)...)
		c.deliverAll()
		f.WaitCommitted(t, "in", 0, 3)
		must(t, r.Stop(t))
		if got := len(c.triesOf("v2")); got != 1 {
			t.Errorf("v2 sent %d times, want 1", got)
		}
	})
}

// offsets returns each time as its distance from t0, for messages.
func offsets(ts []time.Time, t0 time.Time) []time.Duration {
	var ds []time.Duration
	for _, t := range ts {
		ds = append(ds, t.Sub(t0))
	}
	return ds
}

// A failed delivery report stops Run with a *StageError naming the
// record's topic, partition and offset and wrapping the library's error;
// what was delivered before it is committed, nothing from it on.
func TestFailedReportStopsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newStage(false)
		errBroker := errors.New("broker said no")
		c.fail["v3"] = errBroker
		f, r := c.start(t, 6, recordMessage)
		err := r.Wait(t)
		checkStageError(t, err, 3, "delivery to out failed: broker said no")
		if !errors.Is(err, errBroker) {
			t.Errorf("Run's error %v does not wrap the delivery error", err)
		}
		checkInCommitted(t, f, 3, "v0..v2 delivered, v3 failed")
		checkNonePending(t, c.tr)
	})
}

// Send failing with an error other than a full queue stops Run at the
// value's offset.
func TestSendErrorStopsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newStage(false)
		c.sendErr["v1"] = errFatal
		f, r := c.start(t, 3, recordMessage)
		checkStageError(t, r.Wait(t), 1, "producing to out: fatal")
		checkSent(t, c, "v0")
		checkInCommitted(t, f, 1, "v0 delivered")
		checkNonePending(t, c.tr)
	})
}

// When toMsg fails, Run stops but only once the stage read the reports of
// what it had produced (the library must never block on its channel);
// those values are committed.
func TestStageFailureWaitsForOutstandingReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newStage(true)
		f, r := c.started(t, 4, failingAt("v2", sluice.Permanent(errors.New("cannot encode"))))
		select {
		case <-r.Done():
			t.Fatal("Run returned with two reports outstanding")
		default:
		}
		checkSent(t, c, "v0", "v1")
		c.release("v0", "v1")
		checkStageError(t, r.Wait(t), 2, "cannot encode")
		checkInCommitted(t, f, 2, "v0, v1 delivered")
		checkNonePending(t, c.tr)
	})
}

// A value toMsg finds invalid goes to the dead-letter destination and is
// not produced; the others are, and everything commits.
func TestInvalidValueIsDeadLetteredNotProduced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newStage(false)
		dead := testkit.NewDeadLetters()
		f, r := c.start(t, 3, failingAt("v1", sluice.Invalid(errors.New("not an order"))), dead.Option())
		f.WaitCommitted(t, "in", 0, 3)
		must(t, r.Stop(t))
		checkSent(t, c, "v0", "v2")
		if got := dead.Offsets("in", 0); dead.Len() != 1 || !slices.Equal(got, []int64{1}) {
			t.Errorf("dead-lettered offsets %v (%d dead letters), want [1]", got, dead.Len())
		}
	})
}

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
	if stubsTakeChunks {
		t.Skip("the chunk's values are sent once toMsg returned for all of them: TestWaitingReportsOfAChunkCompleteTogether")
	}
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
	if stubsTakeChunks {
		t.Skip("the chunk's values are sent once toMsg returned for all of them: TestFailedReportAmongWaitingOnesOfAChunk")
	}
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
