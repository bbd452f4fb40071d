package produce_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/internal/producertest"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit"
)

// boundedQueue is the stub as a library with a buffer of capacity
// messages, shared by every receiver: Send refuses a message as full
// while capacity are held, and deliver writes the oldest held report
// every millisecond (the library's delivery rate), as librdkafka's queue
// (queue.buffering.max.messages) frees room.
type boundedQueue struct {
	*stub
	capacity int
	gate     sync.Mutex // one Send at a time: the count it checks holds
}

func (q *boundedQueue) Send(ctx context.Context, o *produce.Outgoing, reports chan produce.Event) error {
	q.gate.Lock()
	defer q.gate.Unlock()
	if held, _, _ := q.counts(); held >= q.capacity {
		q.mu.Lock()
		q.tries = append(q.tries, try{string(o.Message.Value), time.Now()})
		q.mu.Unlock()
		return errQueueFull
	}
	return q.stub.Send(ctx, o, reports)
}

// deliver writes the oldest held report every millisecond until stop is
// closed.
func (q *boundedQueue) deliver(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(time.Millisecond):
		}
		if held, _, _ := q.counts(); held > 0 {
			q.releaseFirst(1)
		}
	}
}

// committedAt returns a channel that gets the time at which f committed
// in/part at least to n.
func committedAt(f *testkit.Fake, part int32, n int64) <-chan time.Time {
	at := make(chan time.Time, 1)
	go func() {
		for {
			changed := f.Changed()
			if f.Committed("in", part) >= n {
				at <- time.Now()
				return
			}
			select {
			case <-changed:
			case <-f.Stopped():
				return
			}
		}
	}()
	return at
}

// A backlog of invalid records on one partition keeps the library's
// buffer full of its dead letters for as long as it lasts; another
// partition's Produce stage must still get a share of the room the
// deliveries free, not wait for the whole backlog to be dead-lettered:
// in/0's 20 records commit before in/1's 400 dead letters all went in.
func TestStagesGetRoomWhileAnotherPartitionsDeadLettersKeepTheQueueFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := &boundedQueue{stub: newStage(true), capacity: 4}
		stop := make(chan struct{})
		go q.deliver(stop)
		defer close(stop)
		p := newProducer(q, q.tr)
		build := func(part *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			if part.Partition == 0 {
				return produce.Stage(in, "stub.Produce", p, "out", recordMessage, nil)
			}
			return producertest.AllInvalid(part, in)
		}
		f := testkit.NewFake()
		r := testkit.Start(t, f, build, quiet, pipeline.WithDeadLetter(produce.DeadLetter(q, q.tr, dlqName, "dlq")))
		must(t, f.Assign("in", 0, 1))
		t0 := time.Now()
		must(t, f.Send("in", 1, values(1000, 400)...))
		time.Sleep(500 * time.Microsecond) // in/1's dead letters fill the buffer first
		must(t, f.Send("in", 0, values(0, 20)...))
		done0, done1 := committedAt(f, 0, 20), committedAt(f, 1, 400)
		var at1 time.Time
		select {
		case at1 = <-done1:
		case <-time.After(time.Minute):
			t.Fatalf("a minute later in/0 committed at %d, in/1 at %d; tries of v1000: %d, of v0: %d; sent %d", f.Committed("in", 0), f.Committed("in", 1), len(q.triesOf("v1000")), len(q.triesOf("v0")), len(q.sentValues()))
		}
		synctest.Wait()
		select {
		case at0 := <-done0:
			if at0.After(at1) {
				t.Errorf("in/0's 20 records committed at %v, after in/1's 400 dead letters (committed at %v)", at0.Sub(t0), at1.Sub(t0))
			}
		default:
			c0 := f.Committed("in", 0)
			f.WaitCommitted(t, "in", 0, 20)
			t.Errorf("in/0 committed at %d once in/1's 400 dead letters were all in (at %v); its 20 records committed at %v (v0 first tried at %v)",
				c0, at1.Sub(t0), time.Since(t0), offsets(q.triesOf("v0"), t0))
		}
		must(t, r.Stop(t))
	})
}
