package produce

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/engine"
)

// DeadLetterMessage is the dead letter of dl: the record's key and value
// untouched, its headers followed by the sluice.dlq.* headers naming its
// topic, partition, offset, the error text and the stage. The values of
// the sluice.dlq.* headers share one array (each capped at its own end,
// so that appending to one cannot overwrite the next): two allocations
// per dead letter instead of one per header.
func DeadLetterMessage(dl sluice.DeadLetter) sluice.Message {
	r := dl.Record
	errText := ErrText(dl.Err)
	buf := make([]byte, 0, len(r.Topic)+len(errText)+len(dl.Stage)+11+20) // int32 and int64 in decimal
	var ends [5]int
	buf = append(buf, r.Topic...)
	ends[0] = len(buf)
	buf = strconv.AppendInt(buf, int64(r.Partition), 10)
	ends[1] = len(buf)
	buf = strconv.AppendInt(buf, r.Offset, 10)
	ends[2] = len(buf)
	buf = append(buf, errText...)
	ends[3] = len(buf)
	buf = append(buf, dl.Stage...)
	ends[4] = len(buf)
	value := func(i int) []byte {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		return buf[start:ends[i]:ends[i]]
	}
	hs := make([]sluice.Header, 0, len(r.Headers)+5)
	hs = append(hs, r.Headers...)
	hs = append(hs,
		sluice.Header{Key: sluice.DeadLetterHeaderTopic, Value: value(0)},
		sluice.Header{Key: sluice.DeadLetterHeaderPartition, Value: value(1)},
		sluice.Header{Key: sluice.DeadLetterHeaderOffset, Value: value(2)},
		sluice.Header{Key: sluice.DeadLetterHeaderError, Value: value(3)},
		sluice.Header{Key: sluice.DeadLetterHeaderStage, Value: value(4)},
	)
	return sluice.Message{Key: r.Key, Value: r.Value, Headers: hs}
}

// invalidPrefix is what sluice.Invalid's mark adds before its cause.
const invalidPrefix = "invalid input: "

// ErrText is the error's text without the "invalid input: " that
// sluice.Invalid adds, wherever the mark sits in err's tree: what the
// user wrapped around it (fmt.Errorf("order %s: %w", id,
// sluice.Invalid(err))) stays.
func ErrText(err error) string {
	if cause, ok := engine.InvalidCause(err); ok && !sluice.IsInvalid(cause) {
		// The stage returned sluice.Invalid(cause) as it is.
		return cause.Error()
	}
	text := err.Error()
	if !sluice.IsInvalid(err) {
		return text
	}
	for _, cause := range invalidCauses(err, nil) {
		text = strings.Replace(text, invalidPrefix+cause, cause, 1)
	}
	return text
}

// invalidCauses appends to causes the text of the cause of every
// innermost sluice.Invalid mark in err's tree. A mark is told by what
// it does, as its type is the engine's: it is marked, reads "invalid
// input: " followed by the text of the one error it wraps, which is not
// marked.
func invalidCauses(err error, causes []string) []string {
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if e != nil && sluice.IsInvalid(e) {
				causes = invalidCauses(e, causes)
			}
		}
	case interface{ Unwrap() error }:
		inner := u.Unwrap()
		if inner == nil {
			break
		}
		if sluice.IsInvalid(inner) {
			return invalidCauses(inner, causes)
		}
		if cause := inner.Error(); err.Error() == invalidPrefix+cause {
			causes = append(causes, cause)
		}
	}
	return causes
}

// DeadLetter returns a backend's dead-letter destination for
// pipeline.WithDeadLetter (see sink's Producer.DeadLetter for the
// contract, which the backends document): each call produces the dead
// letter to topic with the record's timestamp. Called by Run's
// dead-letter goroutine, it returns once the client took the message and
// leaves the wait for its delivery report to Run (engine.DeferDeadLetter),
// so that a partition's dead letters go out without waiting for each
// other's reports, in the order of the calls; called otherwise (or when
// Run retries a failed dead letter), it returns once the delivery report
// arrived, or Close gave up on the message, or the client closed. name is
// the user's method ("sink: Producer.DeadLetter").
func DeadLetter(c Client, tr *Tracker, name, topic string) func(context.Context, sluice.DeadLetter) error {
	if topic == "" {
		return func(context.Context, sluice.DeadLetter) error {
			return sluice.Permanent(fmt.Errorf("%s: the topic is empty", name))
		}
	}
	pool := &sync.Pool{New: func() any { return &deadLetterReport{c: c, tr: tr, report: make(chan Event, 1)} }}
	return func(ctx context.Context, dl sluice.DeadLetter) error {
		r := dl.Record
		d := pool.Get().(*deadLetterReport)
		d.ctx, d.pool = ctx, pool
		d.u = sluice.UndeliveredMessage{Topic: topic, Source: sluice.TopicPartition{Topic: r.Topic, Partition: r.Partition}, Offset: r.Offset}
		d.o = Outgoing{Topic: topic, Message: DeadLetterMessage(dl), Timestamp: r.Timestamp}
		err := sendDeadLetter(ctx, c, tr, &d.o, d.report)
		d.o = Outgoing{} // Send copied what it keeps
		if err != nil {
			d.recycle()
			return err
		}
		if engine.DeferDeadLetter(ctx, d) {
			return nil
		}
		return d.Wait()
	}
}

// deadLetterReport is the outcome of the dead letter u, handed to the
// client with report as its report channel. Its Wait is called once;
// once Wait read the report, it goes back to the destination's pool
// with its channel (empty again) for a later dead letter, so a dead
// letter allocates neither.
type deadLetterReport struct {
	ctx    context.Context
	c      Client
	tr     *Tracker
	u      sluice.UndeliveredMessage
	o      Outgoing // the message, during Send only
	report chan Event
	pool   *sync.Pool
}

// recycle clears what d refers to and puts it back in its pool. Only
// for a d whose channel is empty and will not be written to again.
func (d *deadLetterReport) recycle() {
	pool := d.pool
	d.ctx, d.u, d.pool = nil, sluice.UndeliveredMessage{}, nil
	pool.Put(d)
}

// Ready reports whether the delivery report arrived (or the client
// closed).
func (d *deadLetterReport) Ready() bool {
	if len(d.report) > 0 {
		return true
	}
	select {
	case <-d.tr.Gone():
		return true
	default:
		return false
	}
}

// Wait waits for the delivery report and returns the outcome. It waits
// even if ctx ends: the library reports every message within its
// delivery timeout (or when Close gives up on it), and leaving would
// drop it.
func (d *deadLetterReport) Wait() error {
	ev, ok := nextReport(d.tr, d.report)
	if !ok {
		// The report may still come: d is not recycled.
		return sluice.Permanent(fmt.Errorf("dead letter to %s: %w before its delivery was reported", d.u.Topic, d.tr.names.ErrClosed))
	}
	_, err, ok := d.c.Report(ev)
	if !ok {
		// Not the report, which may still come: d is not recycled.
		d.tr.Received()
		return fmt.Errorf("dead letter to %s: no delivery report", d.u.Topic)
	}
	err = d.outcome(err)
	d.recycle()
	return err
}

// outcome is the outcome of a delivery whose report carried err.
func (d *deadLetterReport) outcome(err error) error {
	ctx, c, tr, u := d.ctx, d.c, d.tr, d.u
	if err != nil {
		if tr.Failed(c.GaveUp(err), u) {
			return sluice.Permanent(fmt.Errorf("dead letter to %s: %w before the message was delivered (%w)", u.Topic, tr.names.ErrClosed, err))
		}
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			// The send waited for room in the buffer until ctx ended.
			return context.Cause(ctx)
		}
		return c.Classify(fmt.Errorf("dead letter to %s: %w", u.Topic, err))
	}
	tr.Received()
	return nil
}

// sendDeadLetter hands o to the client, waiting out a full queue until
// ctx ends or Close starts. ctx goes to Send as it is: librdkafka's Send
// refuses a full queue at once, and kgo's waits for room itself (ahead of
// the Produce stages, franz's producer_first.go) and, when ctx ends
// first, says the queue is full having taken nothing; a context merged
// with Close's for every dead letter cost a tenth of the dead-letter
// path's CPU.
func sendDeadLetter(ctx context.Context, c Client, tr *Tracker, o *Outgoing, report chan Event) error {
	for {
		err := c.Send(ctx, o, report)
		if err == nil {
			return nil
		}
		if !c.QueueFull(err) {
			return c.Classify(fmt.Errorf("dead letter to %s: %w", o.Topic, err))
		}
		t := time.NewTimer(QueueFullWait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-tr.ClosingContext().Done():
			t.Stop()
			return c.Classify(fmt.Errorf("dead letter to %s: %w", o.Topic, tr.names.ErrClosed))
		}
	}
}
