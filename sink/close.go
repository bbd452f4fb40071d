package sink

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice/pipeline"
)

// closeGrace bounds each step of Close after the flush: waiting for the
// receivers to read the failed reports of the messages it gave up on, and
// closing the client.
const closeGrace = time.Second

// UndeliveredMessage is a message [Producer.Close] gave up on: it was
// still queued or in flight when the close timeout passed.
type UndeliveredMessage struct {
	// Topic is the topic the message was for.
	Topic string
	// Source is the partition of the record the message came from (for a
	// dead letter, the invalid record; for a Produce stage, the first
	// record behind the value), Offset that record's offset, -1 when
	// unknown.
	Source pipeline.TopicPartition
	Offset int64
}

// String names the message as "to TOPIC from SOURCE/PARTITION@OFFSET".
func (u UndeliveredMessage) String() string {
	if u.Offset < 0 {
		return fmt.Sprintf("to %s from %s/%d", u.Topic, u.Source.Topic, u.Source.Partition)
	}
	return fmt.Sprintf("to %s from %s/%d@%d", u.Topic, u.Source.Topic, u.Source.Partition, u.Offset)
}

// CloseError is the error [Producer.Close] returns when messages were
// still undelivered at the close timeout, or when the client did not close
// in time.
type CloseError struct {
	// Timeout is the close timeout (ProducerConfig.CloseTimeout).
	Timeout time.Duration
	// Undelivered lists the messages given up on, in the order their
	// receivers (Produce stages, dead-letter calls) read their failed
	// delivery reports.
	Undelivered []UndeliveredMessage
	// Unreported counts messages given up on whose failed report no
	// receiver had read when Close returned; their sources are unknown.
	Unreported int
	// Client is set when the client did not finish closing within its
	// bound; Close returned anyway and the client closes in the background.
	Client error
}

// Count returns the number of messages given up on.
func (e *CloseError) Count() int { return len(e.Undelivered) + e.Unreported }

// maxNamed is how many undelivered messages Error names.
const maxNamed = 10

// Error counts the messages given up on and names the first of them.
func (e *CloseError) Error() string {
	var b strings.Builder
	b.WriteString("sink: closing the producer:")
	if n := e.Count(); n > 0 {
		fmt.Fprintf(&b, " %d messages undelivered after %v", n, e.Timeout)
		if len(e.Undelivered) > 0 {
			b.WriteString(" (")
			for i, u := range e.Undelivered[:min(len(e.Undelivered), maxNamed)] {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(u.String())
			}
			if more := n - min(len(e.Undelivered), maxNamed); more > 0 {
				fmt.Fprintf(&b, " and %d more", more)
			}
			b.WriteString(")")
		}
		if e.Client != nil {
			b.WriteString(";")
		}
	}
	if e.Client != nil {
		b.WriteString(" ")
		b.WriteString(e.Client.Error())
	}
	return b.String()
}

// Close flushes what is still queued, for up to ProducerConfig.CloseTimeout,
// and closes the producer. Messages still undelivered then are given up on:
// their deliveries fail (with an error wrapping [ErrClosed]), so the
// records they came from are never committed, and Close returns a
// *CloseError that counts and names them. Close returns within the close
// timeout plus at most two seconds, also when librdkafka's own close would
// hang.
//
// Call it after pipeline.Run returned: every Produce stage and dead letter
// has then been reported and Close has nothing to wait for. Calling it
// while Run is still running is safe: later produce calls fail with
// ErrClosed, outstanding ones as above, and Run stops with that error
// unless the partition was already being taken away. Close is idempotent:
// later calls wait for the first and return its result.
func (p *Producer) Close() error {
	p.once.Do(func() { p.closeErr = p.close() })
	return p.closeErr
}

func (p *Producer) close() error {
	p.mu.Lock()
	p.closing.Store(true) // no message is handed to the client after this
	p.mu.Unlock()

	e := &CloseError{Timeout: p.closeTimeout}
	if left := p.p.Flush(int(p.closeTimeout.Milliseconds())); left > 0 {
		// Fail what is left: every purged message's report goes to its
		// receiver, which fails the value and records it in undelivered.
		if err := p.p.Purge(kafka.PurgeQueue | kafka.PurgeInFlight); err != nil {
			p.logger.Warn("sink: purging the producer's queue", "err", err)
		}
		if !p.awaitIdle(closeGrace) {
			p.umu.Lock()
			e.Unreported = int(p.pending.Load())
			e.Undelivered = slices.Clone(p.undelivered)
			p.umu.Unlock()
		}
	}

	// librdkafka's close waits for its poller, which waits while a report
	// channel is full, and for its threads: bound it.
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		p.p.Close()
		p.wg.Wait()
	}()
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	select {
	case <-closed:
	case <-t.C:
		e.Client = fmt.Errorf("the client did not close within %v", closeGrace)
	}

	if e.Unreported == 0 {
		p.umu.Lock()
		e.Undelivered = slices.Clone(p.undelivered)
		p.umu.Unlock()
	}
	if e.Count() == 0 && e.Client == nil {
		return nil
	}
	p.logger.Warn("sink: closing the producer", "err", e)
	return e
}

// awaitIdle waits up to d for every delivery report to be read by its
// receiver; it reports whether they were.
func (p *Producer) awaitIdle(d time.Duration) bool {
	if p.pending.Load() == 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.idle:
		return true
	case <-t.C:
		return p.pending.Load() == 0
	}
}
