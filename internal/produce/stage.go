package produce

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/engine"
	"github.com/sluice-go/sluice/internal/streams"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit"
	"github.com/sluice-go/sluice/stages"
)

// QueueFullWait is how long a receiver waits for deliveries before it
// sends again a message the client refused with a full queue.
const QueueFullWait = 5 * time.Millisecond

// MinReportBuffer and MaxReportBuffer bound the capacity of a Produce
// stage's report channel, which is the most messages the stage has
// outstanding (see reportBuffer).
const (
	MinReportBuffer = 1024
	MaxReportBuffer = 16384
)

// reportBuffer is the report channel capacity of a Produce stage that
// starts while stages Produce stages (itself included) run on a producer
// whose library buffers at most buffered messages (0: no known bound):
// the stage's share of that buffer, within MinReportBuffer and
// MaxReportBuffer. A stage keeps no more messages outstanding than its
// channel holds, so that the library's delivery goroutine never waits on
// it; with few partitions a stage needs a large share to keep the
// library's next request filled while one is in flight (a bound of 1,024
// per stage held franz-go's consume → produce on Apache Kafka to about
// 0.55x its raw loop, 8,192 or more to about 0.7x). With many partitions
// the producer's buffer is the bound that binds, and each stage's channel
// (16 bytes a slot, allocated when the stage starts) stays small.
func reportBuffer(buffered, stages int) int {
	if stages < 1 {
		stages = 1
	}
	return min(max(buffered/stages, MinReportBuffer), MaxReportBuffer)
}

// Stage adds the Produce stage of the producer p: name is the user's
// function ("sink.Produce"). A nil p, or one whose backend did not make
// its Core with NewCore (a zero Producer value), fails the build, as do
// an empty topic and a nil toMsg. See sink.Produce for the contract.
func Stage[T any](in pipeline.Stream[T], name string, p Backend, topic string, toMsg func(T) (sluice.Message, error), opts []stages.CallOption) pipeline.End {
	nilP := isNil(p)
	var c Client
	var tr *Tracker
	var core *Core
	if !nilP {
		core = p.produceCore() // nil for a zero Producer
	}
	if core != nil {
		c, tr = core.client, core.tr
	}
	sp := stages.Spec("Produce", opts...)
	switch {
	case nilP:
		sp.Problem = fmt.Errorf("%s: the producer is nil", name)
	case topic == "":
		sp.Problem = fmt.Errorf("%s: the topic is empty", name)
	case toMsg == nil:
		sp.Problem = fmt.Errorf("%s: toMsg is nil", name)
	case core == nil:
		sp.Problem = fmt.Errorf("%s: the producer (%T) was not made by its constructor", name, p)
	case tr != nil && engine.CreatedDuringBuild(streams.Engine(in), tr.made):
		sp.Problem = fmt.Errorf("%s: its producer was created inside the builder, which runs for every partition assigned: "+
			"each partition (and each reassignment) would get a Kafka client of its own, never closed; "+
			"create the producer once, before pipeline.Run, use it in every graph and Close it after Run returned", name)
	default:
		sp.Problem = checkOutput(c, name, topic)
	}
	return stagekit.AddEnd(in, sp, func(s *stagekit.Stage, inl *stagekit.Inlet[T]) error {
		stages := tr.stageStarted()
		defer tr.stageEnded()
		st := &producing{c: c, tr: tr, s: s, topic: topic, reports: make(chan Event, reportBuffer(c.MaxBuffered(), stages))}
		st.chunks, _ = c.(ChunkSender)
		defer st.waitAll()
		ctx := s.Context()
		// Sends blocked on a full buffer return when the partition's
		// context ends or Close starts.
		sendCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(tr.ClosingContext(), cancel)()
		pr := s.Probe()
		convert := func(_ context.Context, v T) (sluice.Message, error) { return toMsg(v) }
		return stagekit.RunLoop(s, inl, stagekit.Loop[T, Event]{
			OnChunk: func(chunk []stagekit.Item[T]) error { return produceChunk(ctx, sendCtx, st, pr, chunk, convert) },
			OnDrain: func() error { return st.settle(ctx) },
			Events:  st.reports,
			OnEvent: st.report,
			Wake:    tr.Gone,
			OnWake:  st.closed,
		})
	})
}

// producing is one Produce stage's state.
type producing struct {
	c           Client
	tr          *Tracker
	s           *stagekit.Stage
	topic       string
	reports     chan Event
	outstanding int
	// out is the Outgoing handed to Client.Send, reused for every
	// message (Send keeps nothing of it).
	out Outgoing
	// chunks is c as a ChunkSender, or nil: then each message goes to
	// Send. batch holds the messages of the chunk at hand until they are
	// handed to chunks (flush), reused from chunk to chunk.
	chunks ChunkSender
	batch  []Outgoing
	// done are the tickets of delivered values not marked done yet
	// (report).
	done []stagekit.Ticket
}

// produceChunk converts and produces the values of chunk in order: one
// by one with Send, or, when the client is a ChunkSender, the converted
// values together (flush), before a value whose conversion failed is
// failed and at the chunk's end. It stops at once when ctx ends (the
// partition was lost or its drain timed out): nothing more of the chunk
// is produced.
func produceChunk[T any](ctx, sendCtx context.Context, st *producing, pr *stagekit.Probe, chunk []stagekit.Item[T], convert func(context.Context, T) (sluice.Message, error)) error {
	defer st.forget()
	for _, it := range chunk {
		m, err := stagekit.Call(ctx, st.s, pr, it, convert)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			// The values before it go out first; flush may wait, and
			// once ctx ended nothing more is produced or dead-lettered.
			if err := st.flush(ctx, sendCtx); err != nil || ctx.Err() != nil {
				return err
			}
			if err := st.s.Fail(it.Ticket, err); err != nil {
				return err
			}
			continue
		}
		if st.chunks != nil {
			st.batch = append(st.batch, Outgoing{Topic: st.topic, Message: m, Ticket: it.Ticket})
			continue
		}
		if err := st.produce(ctx, sendCtx, m, it.Ticket); err != nil {
			return err
		}
	}
	return st.flush(ctx, sendCtx)
}

// flush hands the messages of st.batch to st.chunks, at most as many at
// a time as the report channel has room for (waiting for reports while
// it has none), and waits for a report or QueueFullWait when the
// library's buffer is full. It stops, producing nothing more, when ctx
// ends; a message the client refuses fails its value (a Fail that
// dead-letters it lets the rest go on).
func (st *producing) flush(ctx, sendCtx context.Context) error {
	b := st.batch
	defer st.forget()
	for len(b) > 0 {
		if ctx.Err() != nil {
			return nil
		}
		room := cap(st.reports) - st.outstanding
		if room <= 0 {
			if ok, err := st.await(ctx, nil); !ok {
				return err
			}
			continue
		}
		part := b[:min(room, len(b))]
		n, err := st.chunks.SendChunk(sendCtx, part, st.reports)
		st.outstanding += n
		b = b[n:]
		// A send that blocked until sendCtx ended (Close started) took
		// its message and handed over nothing more, saying why: that
		// concerns none of b, whose next call answers for b[0] (a closed
		// producer refuses it, as the next Send). So does any error
		// with all of part handed over.
		if err == nil || n == len(part) || ctx.Err() != nil || n > 0 && errors.Is(err, sendCtx.Err()) {
			continue
		}
		if !st.c.QueueFull(err) {
			if err := st.s.Fail(b[0].Ticket, fmt.Errorf("producing to %s: %w", st.topic, err)); err != nil {
				return err
			}
			b = b[1:]
			continue
		}
		// Backpressure: handle a delivery report (or wait a little) and
		// send the rest again.
		if ok, err := st.await(ctx, time.After(QueueFullWait)); !ok {
			return err
		}
	}
	return nil
}

// forget empties st.batch, dropping its messages' bytes.
func (st *producing) forget() {
	clear(st.batch)
	st.batch = st.batch[:0]
}

func (st *producing) produce(ctx, sendCtx context.Context, m sluice.Message, t stagekit.Ticket) error {
	o := &st.out
	*o = Outgoing{Topic: st.topic, Message: m, Ticket: t}
	// A library may deliver every report of the producer from one
	// goroutine (librdkafka's poller, kgo's promise worker), which must
	// never wait on a full report channel: that would stall every report
	// of the producer (dead letters and other partitions included).
	// Keeping at most cap(reports) messages outstanding means a report
	// always finds room, even while this stage waits elsewhere (for the
	// dead-letter queue in Fail, or for room in the client's buffer).
	for st.outstanding >= cap(st.reports) {
		if ok, err := st.await(ctx, nil); !ok {
			return err
		}
	}
	for {
		err := st.c.Send(sendCtx, o, st.reports)
		if err == nil {
			st.outstanding++
			return nil
		}
		if !st.c.QueueFull(err) {
			return st.s.Fail(t, fmt.Errorf("producing to %s: %w", st.topic, err))
		}
		// Backpressure: handle a delivery report (or wait a little) and
		// try again.
		if ok, err := st.await(ctx, time.After(QueueFullWait)); !ok {
			return err
		}
	}
}

// await handles the next delivery report, or waits for timeout (nil: no
// timeout). It returns false when the stage must stop: with nil when ctx
// ended, with the stage's error when a delivery failed or the producer
// closed.
func (st *producing) await(ctx context.Context, timeout <-chan time.Time) (bool, error) {
	select {
	case ev := <-st.reports:
		if err := st.report(ev); err != nil {
			return false, err
		}
		return true, nil
	case <-timeout:
		return true, nil
	case <-st.tr.Gone():
		return false, st.closed()
	case <-ctx.Done():
		return false, nil
	}
}

// maxReportBatch caps the delivery reports a stage handles in one go.
const maxReportBatch = 256

// report completes (or fails) the value behind the delivery report ev,
// and so the values behind the reports already waiting on the channel,
// up to maxReportBatch in all: the delivered ones with one Stage.Done
// (one lock of the partition's tracker, one budget release), and without
// a select per report. It stops at the first failed delivery, after
// completing the values delivered before it.
func (st *producing) report(ev Event) error {
	err := st.take(ev)
	for err == nil && len(st.done) < maxReportBatch {
		select {
		case ev := <-st.reports:
			err = st.take(ev)
			continue
		default:
		}
		break
	}
	st.complete()
	return err
}

// take handles one event of the report channel: a delivered value's
// ticket joins st.done, a failed delivery fails the stage (after the
// values of st.done completed).
func (st *producing) take(ev Event) error {
	t, err, ok := st.c.Report(ev)
	if !ok {
		return nil
	}
	st.outstanding--
	if err != nil {
		st.complete()
		return st.failed(t, err)
	}
	st.done = append(st.done, t)
	return nil
}

// complete records the reports of st.done as received and marks their
// values done.
func (st *producing) complete() {
	if len(st.done) > 0 {
		st.tr.ReceivedN(len(st.done))
		st.s.Done(st.done...)
		st.done = st.done[:0]
	}
}

// failed handles the failed delivery of the value holding t and returns
// the stage's error.
func (st *producing) failed(t stagekit.Ticket, err error) error {
	serr := st.s.Fail(t, fmt.Errorf("delivery to %s failed: %w", st.topic, err))
	part := st.s.Partition()
	u := sluice.UndeliveredMessage{Topic: st.topic, Source: sluice.TopicPartition{Topic: part.Topic, Partition: part.Partition}, Offset: -1}
	var se *sluice.StageError
	if errors.As(serr, &se) {
		u.Offset = se.Offset
	}
	if st.tr.Failed(st.c.GaveUp(err), u) {
		serr = st.s.Fail(t, fmt.Errorf("delivery to %s failed: %w before the message was delivered (%w)", st.topic, st.tr.names.ErrClosed, err))
	}
	return serr
}

// closed handles the reports the client delivered before it closed and
// returns the stage's error: the other reports never come, and their
// values stay uncommitted.
func (st *producing) closed() error {
	for {
		select {
		case ev := <-st.reports:
			if err := st.report(ev); err != nil {
				return err
			}
		default:
			if st.outstanding == 0 {
				return st.s.Fail(stagekit.Ticket{}, fmt.Errorf("producing to %s: %w", st.topic, st.tr.names.ErrClosed))
			}
			return st.s.Fail(stagekit.Ticket{}, fmt.Errorf("producing to %s: %w before %d deliveries were reported", st.topic, st.tr.names.ErrClosed, st.outstanding))
		}
	}
}

// settle waits for every outstanding delivery report after the input
// closed (graceful drain).
func (st *producing) settle(ctx context.Context) error {
	for st.outstanding > 0 {
		if ok, err := st.await(ctx, nil); !ok {
			return err
		}
	}
	return nil
}

// waitAll drains the remaining reports so the library never blocks on
// this stage's channel after it stopped, until the producer closed; their
// values are completed only if the partition is still owned (the tracker
// ignores the rest).
func (st *producing) waitAll() {
	for st.outstanding > 0 {
		ev, ok := nextReport(st.tr, st.reports)
		if !ok {
			return // never reported
		}
		t, err, ok := st.c.Report(ev)
		if !ok {
			continue
		}
		st.outstanding--
		if err != nil {
			_ = st.failed(t, err) // the stage already stopped: only Close wants to know
			continue
		}
		st.tr.Received()
		st.s.Done(t)
	}
}
