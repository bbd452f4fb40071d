package produce

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-go/sluice/pipeline"
)

// DeadLetterMessage is the dead letter of dl: the record's key and value
// untouched, its headers followed by the sluice.dlq.* headers naming its
// topic, partition, offset, the error text and the stage.
func DeadLetterMessage(dl pipeline.DeadLetter) pipeline.Message {
	r := dl.Record
	hs := make([]pipeline.Header, 0, len(r.Headers)+5)
	hs = append(hs, r.Headers...)
	hs = append(hs,
		pipeline.Header{Key: pipeline.DeadLetterHeaderTopic, Value: []byte(r.Topic)},
		pipeline.Header{Key: pipeline.DeadLetterHeaderPartition, Value: []byte(strconv.Itoa(int(r.Partition)))},
		pipeline.Header{Key: pipeline.DeadLetterHeaderOffset, Value: []byte(strconv.FormatInt(r.Offset, 10))},
		pipeline.Header{Key: pipeline.DeadLetterHeaderError, Value: []byte(ErrText(dl.Err))},
		pipeline.Header{Key: pipeline.DeadLetterHeaderStage, Value: []byte(dl.Stage)},
	)
	return pipeline.Message{Key: r.Key, Value: r.Value, Headers: hs}
}

// invalidPrefix is what pipeline.Invalid's mark adds before its cause.
const invalidPrefix = "invalid input: "

// ErrText is the error's text without the "invalid input: " that
// pipeline.Invalid adds, wherever the mark sits in err's tree: what the
// user wrapped around it (fmt.Errorf("order %s: %w", id,
// pipeline.Invalid(err))) stays.
func ErrText(err error) string {
	text := err.Error()
	if !pipeline.IsInvalid(err) {
		return text
	}
	for _, cause := range invalidCauses(err, nil) {
		text = strings.Replace(text, invalidPrefix+cause, cause, 1)
	}
	return text
}

// invalidCauses appends to causes the text of the cause of every
// innermost pipeline.Invalid mark in err's tree. A mark is told by what
// it does, as its type is the engine's: it is marked, reads "invalid
// input: " followed by the text of the one error it wraps, which is not
// marked.
func invalidCauses(err error, causes []string) []string {
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if e != nil && pipeline.IsInvalid(e) {
				causes = invalidCauses(e, causes)
			}
		}
	case interface{ Unwrap() error }:
		inner := u.Unwrap()
		if inner == nil {
			break
		}
		if pipeline.IsInvalid(inner) {
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
// letter to topic with the record's timestamp and returns once its
// delivery report arrived, or Close gave up on it, or the client closed.
// name is the user's method ("sink: Producer.DeadLetter").
func DeadLetter[E any](c Client[E], tr *Tracker, name, topic string) func(context.Context, pipeline.DeadLetter) error {
	if topic == "" {
		return func(context.Context, pipeline.DeadLetter) error {
			return pipeline.Permanent(fmt.Errorf("%s: the topic is empty", name))
		}
	}
	return func(ctx context.Context, dl pipeline.DeadLetter) error {
		r := dl.Record
		o := &Outgoing{Topic: topic, Message: DeadLetterMessage(dl), Timestamp: r.Timestamp}
		report := make(chan E, 1)
		if err := sendDeadLetter(ctx, c, tr, o, report); err != nil {
			return err
		}
		// Wait for the report even if ctx ends: the library reports
		// every message within its delivery timeout (or when Close
		// gives up on it), and leaving would drop it.
		var ev E
		select {
		case ev = <-report:
		case <-tr.Gone():
			select {
			case ev = <-report:
			default:
				return pipeline.Permanent(fmt.Errorf("dead letter to %s: %w before its delivery was reported", topic, tr.names.ErrClosed))
			}
		}
		_, err, ok := c.Report(ev)
		if !ok {
			tr.Received()
			return fmt.Errorf("dead letter to %s: no delivery report", topic)
		}
		if err != nil {
			u := UndeliveredMessage{Topic: topic, Source: pipeline.TopicPartition{Topic: r.Topic, Partition: r.Partition}, Offset: r.Offset}
			if tr.Failed(c.GaveUp(err), u) {
				return pipeline.Permanent(fmt.Errorf("dead letter to %s: %w before the message was delivered (%w)", topic, tr.names.ErrClosed, err))
			}
			if ctx.Err() != nil && errors.Is(err, context.Canceled) {
				// The send waited for room in the buffer until ctx ended.
				return context.Cause(ctx)
			}
			return c.Classify(fmt.Errorf("dead letter to %s: %w", topic, err))
		}
		tr.Received()
		return nil
	}
}

// sendDeadLetter hands o to the client, waiting out a full queue until
// ctx ends (or Close starts).
func sendDeadLetter[E any](ctx context.Context, c Client[E], tr *Tracker, o *Outgoing, report chan E) error {
	sendCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(tr.ClosingContext(), cancel)()
	for {
		err := c.Send(sendCtx, o, report)
		if err == nil {
			return nil
		}
		if !c.QueueFull(err) {
			return c.Classify(fmt.Errorf("dead letter to %s: %w", o.Topic, err))
		}
		select {
		case <-time.After(QueueFullWait):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}
