package produce_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit"
)

// chunkSender is the stub as a produce.ChunkSender: SendChunk sends each
// message with Send, in order, and stops at the first one Send does not
// accept, as a backend that takes chunks does.
type chunkSender struct{ *stub }

func (c chunkSender) SendChunk(ctx context.Context, os []produce.Outgoing, reports chan produce.Event) (int, error) {
	c.mu.Lock()
	c.chunkLens = append(c.chunkLens, len(os))
	c.mu.Unlock()
	for i := range os {
		if err := c.Send(ctx, &os[i], reports); err != nil {
			return i, err
		}
		if err := ctx.Err(); err != nil {
			return i + 1, err // a Send that blocked accepted its message when ctx ended
		}
	}
	return len(os), nil
}

// stubsTakeChunks makes the stubs newStub returns chunkSenders
// (TestStageTestsWithAChunkSender sets it while it runs).
var stubsTakeChunks bool

// The Produce stage's tests again, with a client that takes chunks: the
// stage then converts a chunk's values and hands them over together, and
// every contract its tests check holds as with Send.
func TestStageTestsWithAChunkSender(t *testing.T) {
	stubsTakeChunks = true
	defer func() { stubsTakeChunks = false }()
	for _, test := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"CloseFailsAnIdleStage", TestCloseFailsAnIdleStage},
		{"ValueAfterCloseStartedFailsWithErrClosed", TestValueAfterCloseStartedFailsWithErrClosed},
		{"CloseGivesUpOnOutstandingMessages", TestCloseGivesUpOnOutstandingMessages},
		{"CloseWithReportsNeverDelivered", TestCloseWithReportsNeverDelivered},
		{"CloseEndsAQueueFullWait", TestCloseEndsAQueueFullWait},
		{"LossEndsABlockedSend", TestLossEndsABlockedSend},
		{"CloseEndsABlockedSend", TestCloseEndsABlockedSend},
		{"StageCountReturnsToZeroOnEveryEnd", TestStageCountReturnsToZeroOnEveryEnd},
		{"ShareAfterManyPartitionsEnded", TestShareAfterManyPartitionsEnded},
		{"RevokeWaitsForOutstandingReports", TestRevokeWaitsForOutstandingReports},
		{"LossStopsProducingAndDrainsReports", TestLossStopsProducingAndDrainsReports},
		{"LossAtTheBoundStopsProducing", TestLossAtTheBoundStopsProducing},
		{"ValueCommitsOnlyAfterItsReport", TestValueCommitsOnlyAfterItsReport},
		{"OutstandingNeverExceedsTheReportBuffer", TestOutstandingNeverExceedsTheReportBuffer},
		{"OutstandingIsTheStagesShareOfTheLibrarysBuffer", TestOutstandingIsTheStagesShareOfTheLibrarysBuffer},
		{"QueueFullIsRetriedNeverDropped", TestQueueFullIsRetriedNeverDropped},
		{"FailedReportStopsRun", TestFailedReportStopsRun},
		{"SendErrorStopsRun", TestSendErrorStopsRun},
		{"StageFailureWaitsForOutstandingReports", TestStageFailureWaitsForOutstandingReports},
		{"InvalidValueIsDeadLetteredNotProduced", TestInvalidValueIsDeadLetteredNotProduced},
		{"WaitingReportsCompleteTogether", TestWaitingReportsCompleteTogether},
		{"FailedReportAmongWaitingOnesCommitsThoseBefore", TestFailedReportAmongWaitingOnesCommitsThoseBefore},
	} {
		t.Run(test.name, test.run)
	}
}

// A client that takes chunks gets a chunk's values in one call, in
// order, and the reports that waited on the channel complete together:
// five released at once complete with one Done, the sixth with another.
func TestWaitingReportsOfAChunkCompleteTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newStage(true)
		c.chunks = true
		var done completions
		f, r := c.started(t, 6, recordMessage, pipeline.WithHooks(&done))
		checkSent(t, c, valueNames(0, 6)...)
		if !slices.Equal(c.chunkLens, []int{6}) {
			t.Errorf("SendChunk called with %v values, want [6]", c.chunkLens)
		}
		c.release(valueNames(0, 5)...)
		synctest.Wait()
		c.release("v5")
		f.WaitCommitted(t, "in", 0, 6)
		must(t, r.Stop(t))
		if got := done.seen(); !slices.Equal(got, []int{5, 1}) {
			t.Errorf("completions %v, want [5 1]", got)
		}
	})
}

// A failed delivery among the waiting reports of a chunk stops the stage
// after the values delivered before it completed: those commit, the ones
// after it do not.
func TestFailedReportAmongWaitingOnesOfAChunk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newStage(true)
		c.chunks = true
		c.fail["v2"] = errors.New("broker said no")
		f, r := c.started(t, 6, recordMessage)
		c.release(valueNames(0, 5)...)
		synctest.Wait()
		c.release("v5") // the stopped stage still waits for its outstanding report
		checkStageError(t, r.Wait(t), 2, "delivery to out failed: broker said no")
		checkInCommitted(t, f, 2, "v0, v1 delivered before v2 failed")
	})
}

// A chunk larger than the stage may have outstanding goes out in pieces
// that fit: the stage waits for reports between them, and a message the
// library refuses as full is sent again, never dropped or duplicated.
func TestChunkGoesOutInPiecesThatFitTheBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newStage(true)
		c.chunks = true
		c.refuse["v1500"] = 2
		n := produce.MinReportBuffer + 1000
		f, r := c.start(t, n, recordMessage, pipeline.WithPartitionQueue(2*n))
		waitOutPacing() // only the bound holds the rest back
		if held, maxIn, _ := c.counts(); held != produce.MinReportBuffer || maxIn != produce.MinReportBuffer {
			t.Fatalf("%d held, at most %d in flight, want the bound %d", held, maxIn, produce.MinReportBuffer)
		}
		c.deliverAll()
		f.WaitCommitted(t, "in", 0, int64(n))
		must(t, r.Stop(t))
		checkSent(t, c, valueNames(0, n)...)
		if got := len(c.triesOf("v1500")); got != 3 {
			t.Errorf("v1500 sent %d times, want 3 (refused twice as full)", got)
		}
		if _, maxIn, overflow := c.counts(); maxIn > produce.MinReportBuffer || overflow != 0 {
			t.Errorf("at most %d in flight (%d reports found no room), want at most %d (0)", maxIn, overflow, produce.MinReportBuffer)
		}
		checkNonePending(t, c.tr)
	})
}

// A client that takes chunks may block on the last message of a chunk
// until Close starts, take it and say why it returned (the send
// context's end): everything was handed over, so the stage has no
// message to fail for that error and goes on as with Send, reading the
// message's report (here the failure the blocked send ended with).
func TestChunkWhoseLastSendEndedWithCloseIsAllHandedOver(t *testing.T) {
	for _, chunks := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunks=%v", chunks), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newStage(false)
				c.chunks = chunks
				c.block["v0"] = true
				f, r := c.started(t, 1, recordMessage)
				must(t, c.tr.Close(c.closeSteps()))
				checkStageError(t, r.Wait(t), 0, "delivery to out failed: context canceled")
				checkSent(t, c, "v0")
				checkInCommitted(t, f, -1, "v0 not delivered")
				checkNonePending(t, c.tr)
			})
		})
	}
}

// The same when the send that ended with Close took the last message the
// stage's bound let it hand over, the rest of the chunk waiting for
// room: the error concerns no message of the rest, which goes on as with
// Send (at the bound, then refused: the producer closed).
func TestChunkCutAtTheBoundWhoseLastSendEndedWithClose(t *testing.T) {
	errs := map[bool]string{}
	for _, chunks := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunks=%v", chunks), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newStage(true)
				c.chunks = chunks
				bound := produce.MinReportBuffer
				last := fmt.Sprintf("v%d", bound)
				c.block[last] = true
				n := bound + 256
				f, r := c.start(t, n, recordMessage, pipeline.WithPartitionQueue(2*n))
				waitOutPacing()
				checkSent(t, c, valueNames(0, bound)...)
				c.release("v0") // room for one more: the next chunk's first, which blocks
				synctest.Wait()
				if got := len(c.triesOf(last)); got != 1 {
					t.Fatalf("%s sent %d times, want once (blocked)", last, got)
				}
				if chunks && c.chunkLens[len(c.chunkLens)-1] != 1 {
					t.Fatalf("SendChunk called with %v values, want the last with %s alone (the bound)", c.chunkLens, last)
				}
				closed := inBackground(func() error { return c.tr.Close(c.closeSteps()) })
				err := r.Wait(t)
				<-closed
				errs[chunks] = fmt.Sprint(err)
				checkSent(t, c, valueNames(0, bound+1)...)
				checkInCommitted(t, f, 1, "v0 delivered, the others given up on")
				checkNonePending(t, c.tr)
			})
		})
	}
	if errs[true] != errs[false] {
		t.Errorf("Run returned, with a client that takes chunks:\n\t%s\nwith Send:\n\t%s", errs[true], errs[false])
	}
}

// A send that blocked inside a chunk until Close started takes its
// message and hands over nothing more, saying why (the send context's
// end): the rest of the chunk is refused by the closed producer, as the
// next Send is, and Run stops with an error wrapping ErrClosed at the
// first value not handed over.
func TestChunkWhoseSendEndedWithCloseFailsTheRestWithErrClosed(t *testing.T) {
	for _, chunks := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunks=%v", chunks), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newStage(false)
				c.chunks = chunks
				c.block["v1"] = true
				f, r := c.start(t, 3, recordMessage)
				synctest.Wait()
				if chunks && !slices.Equal(c.chunkLens, []int{3}) {
					t.Fatalf("SendChunk called with %v values, want [3]", c.chunkLens)
				}
				must(t, c.tr.Close(c.closeSteps()))
				checkClosedError(t, r.Wait(t), 2)
				checkSent(t, c, "v0", "v1")
				checkInCommitted(t, f, 1, "v0 delivered")
				checkNonePending(t, c.tr)
			})
		})
	}
}

// A value whose toMsg fails in the middle of a chunk waits for the values
// before it to be handed over; if the partition is lost meanwhile, it is
// neither dead-lettered nor failed: nothing more of the chunk is produced.
func TestLossWhileAChunkWaitsDeadLettersNothingAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newStage(false)
		c.chunks = true
		c.refuse["v1"] = 1 << 30 // full for good: the flush before v2 waits
		dead := testkit.NewDeadLetters()
		f, r := c.started(t, 3, failingAt("v2", sluice.Invalid(errors.New("not an order"))), dead.Option())
		checkSent(t, c, "v0")
		must(t, f.Lose("in", 0))
		must(t, r.Stop(t))
		checkSent(t, c, "v0")
		if dead.Len() != 0 {
			t.Errorf("%d dead letters after the loss (offsets %v), want none", dead.Len(), dead.Offsets("in", 0))
		}
		checkInCommitted(t, f, 1, "v0, delivered before the loss, and nothing after it")
	})
}
