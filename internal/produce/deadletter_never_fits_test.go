package produce_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/internal/producertest"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit"
)

// bigValue is the value of a record that every partition but in/0 finds
// invalid; its dead letter is one the library refuses as full however
// empty its buffer is: librdkafka refuses a message larger than
// queue.buffering.max.kbytes with the queue-full error even with nothing
// queued (a message.max.bytes above it lets such a record be consumed).
const bigValue = "too big for the buffer"

// producedOrDeadLettered is a builder whose graph of in/0 produces every
// record to "out" through the stage under test, and whose graphs of the
// other partitions find every record invalid (dead letters through
// WithDeadLetter).
func producedOrDeadLettered(c *stub) pipeline.Builder {
	produced := produceTo(c, c.tr, recordMessage)
	return func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		if p.Partition == 0 {
			return produced(p, in)
		}
		return producertest.AllInvalid(p, in)
	}
}

// startWithDeadLetters runs producedOrDeadLettered over a new Fake with
// in/0 and in/1 assigned, dead letters going to "dlq" through c.
func startWithDeadLetters(t *testing.T, c *stub, opts ...pipeline.Option) (*testkit.Fake, *testkit.Running) {
	t.Helper()
	dl := produce.DeadLetter(c, c.tr, dlqName, "dlq")
	f := testkit.NewFake()
	opts = append([]pipeline.Option{quiet, pipeline.WithDeadLetter(dl)}, opts...)
	r := testkit.Start(t, f, producedOrDeadLettered(c), opts...)
	must(t, f.Assign("in", 0, 1))
	return f, r
}

// A dead letter that never fits waits for room until its partition's
// context ends. Nothing the Produce stages of the producer leave free can
// let it in, and the other partitions go on: in/0's values are produced
// and committed while in/1's dead letter waits.
func TestStagesGoOnWhileADeadLetterNeverFits(t *testing.T) {
	for _, chunks := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunks=%v", chunks), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newStage(false)
				c.chunks = chunks
				c.refuse[bigValue] = 1 << 30
				f, r := startWithDeadLetters(t, c)
				must(t, f.Send("in", 1, []byte(bigValue)))
				synctest.Wait() // in/1's dead letter waits for room
				must(t, f.Send("in", 0, values(0, 3)...))
				time.Sleep(time.Minute)
				synctest.Wait()
				if got, tries := c.sentValues(), len(c.triesOf(bigValue)); len(got) != 3 {
					t.Errorf("a minute later, in/0 produced %v while in/1's dead letter was refused %d times, want v0, v1, v2", got, tries)
				}
				checkInCommitted(t, f, 3, "v0, v1 and v2 could be produced all along")
				_ = r.Stop(t) // in/1's dead letter ends with the drain
			})
		})
	}
}

// The same dead letter does not hold a graceful revoke of in/0: its stage
// hands its values over and drains at once, and the revoke commits them.
func TestRevokeIsNotHeldByADeadLetterThatNeverFits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newStage(false)
		c.refuse[bigValue] = 1 << 30
		f, r := startWithDeadLetters(t, c, pipeline.WithDrainTimeout(10*time.Second))
		must(t, f.Send("in", 1, []byte(bigValue)))
		synctest.Wait()
		must(t, f.Send("in", 0, values(0, 3)...))
		synctest.Wait()
		t0 := time.Now()
		must(t, f.Revoke("in", 0))
		if took := time.Since(t0); took > time.Second {
			t.Errorf("the revoke of in/0 took %v (the drain timeout: its stage never sent), want it done at once", took)
		}
		checkInCommitted(t, f, 3, "in/0 drained on revoke")
		_ = r.Stop(t)
	})
}
