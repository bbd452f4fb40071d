package produce_test

import (
	"errors"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit"
)

// checkStagesRunning checks how many Produce stages c's tracker counts.
func checkStagesRunning(t *testing.T, c *stub, want int64, when string) {
	t.Helper()
	if got := produce.StagesRunning(c.tr); got != want {
		t.Errorf("%s: %d Produce stages counted as running, want %d", when, got, want)
	}
}

// A Produce stage counts itself out however it ends: drained by a revoke,
// stopped by a failed delivery, by a toMsg that panics, by a lost
// partition whose reports come late, by the producer closing. A stage
// lost while its reports are outstanding stays counted until it read
// them (it still holds its channel's room). Afterwards a new stage alone
// on the producer gets the whole share again.
func TestStageCountReturnsToZeroOnEveryEnd(t *testing.T) {
	const buffered = 4 * produce.MinReportBuffer
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, c *stub)
	}{
		{"revoke drains", func(t *testing.T, c *stub) {
			endWithReportsHeld(t, c, "revoke", (*testkit.Fake).Revoke)
		}},
		{"failed delivery", func(t *testing.T, c *stub) {
			c.fail["v1"] = errFatal
			_, r := c.started(t, 3, recordMessage)
			c.release("v0", "v1", "v2")
			if err := r.Wait(t); err == nil {
				t.Fatal("Run returned nil after a failed delivery")
			}
		}},
		{"failed delivery with later reports held", func(t *testing.T, c *stub) {
			c.fail["v0"] = errFatal
			_, r := c.started(t, 3, recordMessage)
			c.release("v0")
			synctest.Wait()
			checkStagesRunning(t, c, 1, "stopped with 2 reports outstanding")
			c.release("v1", "v2")
			if err := r.Wait(t); err == nil {
				t.Fatal("Run returned nil after a failed delivery")
			}
		}},
		{"toMsg panics", func(t *testing.T, c *stub) {
			toMsg := func(rec sluice.Record) (sluice.Message, error) {
				if string(rec.Value) == "v1" {
					panic("toMsg blew up")
				}
				return recordMessage(rec)
			}
			_, r := c.started(t, 3, toMsg)
			c.deliverAll()
			if err := r.Wait(t); err == nil {
				t.Fatal("Run returned nil after toMsg panicked")
			}
		}},
		{"lost with reports outstanding", func(t *testing.T, c *stub) {
			endWithReportsHeld(t, c, "loss", (*testkit.Fake).Lose)
		}},
		{"producer closed", func(t *testing.T, c *stub) {
			_, r := c.started(t, 3, recordMessage)
			if err := c.tr.Close(c.closeSteps()); err == nil {
				t.Fatal("Close gave up on 3 messages and returned nil")
			}
			if err := r.Wait(t); !errors.Is(err, errClosed) {
				t.Fatalf("Run returned %v, want ErrClosed", err)
			}
		}},
		{"many rebalances", func(t *testing.T, c *stub) {
			c.hold = false
			f, r := c.started(t, 0, recordMessage)
			for i := range 50 {
				must(t, f.Send("in", 0, values(i, 1)...))
				if i%2 == 0 {
					must(t, f.Revoke("in", 0))
				} else {
					must(t, f.Lose("in", 0))
				}
				must(t, f.Assign("in", 0))
			}
			synctest.Wait()
			checkStagesRunning(t, c, 1, "after 50 reassignments")
			must(t, r.Stop(t))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newStage(true)
				c.maxBuffered = buffered
				tc.run(t, c)
				synctest.Wait()
				checkStagesRunning(t, c, 0, "after Run returned")
			})
		})
	}
}

// Stages of many partitions started together each get their share as
// counted when they start; once they all ended, a stage alone on the
// producer gets the whole buffer (within MaxReportBuffer) again.
func TestShareAfterManyPartitionsEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const buffered = 4 * produce.MinReportBuffer
		c := newStage(false)
		c.maxBuffered = buffered
		f, r := c.started(t, 0, recordMessage)
		parts := []int32{1, 2, 3, 4, 5, 6, 7}
		must(t, f.Assign("in", parts...))
		synctest.Wait()
		checkStagesRunning(t, c, 8, "8 partitions")
		must(t, f.Revoke("in", append(parts, 0)...))
		synctest.Wait()
		checkStagesRunning(t, c, 0, "all revoked")
		must(t, r.Stop(t))

		c2 := newStub(c.tr, true)
		c2.maxBuffered = buffered
		f2, r2 := run(t, produceTo(c2, c2.tr, recordMessage), pipeline.WithPartitionQueue(4*produce.MaxReportBuffer))
		must(t, f2.Send("in", 0, values(0, buffered+2)...))
		checkBoundedByReports(t, c2, "messages", buffered, 1)
		c2.deliverAll()
		f2.WaitCommitted(t, "in", 0, int64(buffered+2))
		must(t, r2.Stop(t))
		if _, maxInFlight, overflow := c2.counts(); maxInFlight != buffered || overflow != 0 {
			t.Errorf("at most %d in flight, %d reports found their channel full; want %d and 0", maxInFlight, overflow, buffered)
		}
	})
}

// endWithReportsHeld ends in/0 with end (what: a revoke or a loss) while
// the reports of its three messages are held: the stage still counts
// while it waits for them, and counts itself out once it read them.
func endWithReportsHeld(t *testing.T, c *stub, what string, end func(f *testkit.Fake, topic string, partitions ...int32) error) {
	t.Helper()
	f, r := c.started(t, 3, recordMessage)
	ended := inBackground(func() error { return end(f, "in", 0) })
	synctest.Wait()
	checkStagesRunning(t, c, 1, what+" with reports outstanding")
	c.release("v0", "v1", "v2")
	must(t, <-ended)
	synctest.Wait()
	checkStagesRunning(t, c, 0, "after the "+what)
	must(t, r.Stop(t))
}
