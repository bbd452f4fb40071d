package sluice

import (
	"fmt"
	"strings"
	"time"
)

// UndeliveredMessage is a message a Kafka producer's Close
// (sink.Producer.Close, franz.Producer.Close) gave up on: it was still
// queued or in flight when the close timeout passed. Its record was never
// committed.
type UndeliveredMessage struct {
	// Topic is the topic the message was for.
	Topic string
	// Source is the partition of the record the message came from (for a
	// dead letter, the invalid record; for a Produce stage, the first
	// record behind the value), Offset that record's offset, -1 when
	// unknown.
	Source TopicPartition
	Offset int64
}

// String names the message as "to TOPIC from SOURCE/PARTITION@OFFSET".
func (u UndeliveredMessage) String() string {
	if u.Offset < 0 {
		return fmt.Sprintf("to %s from %s/%d", u.Topic, u.Source.Topic, u.Source.Partition)
	}
	return fmt.Sprintf("to %s from %s/%d@%d", u.Topic, u.Source.Topic, u.Source.Partition, u.Offset)
}

// CloseError is the error a Kafka producer's Close (sink.Producer.Close,
// franz.Producer.Close) returns when messages were still undelivered at
// the close timeout, or when the client did not close in time. Close
// returns the same *CloseError on every call.
type CloseError struct {
	// Timeout is the close timeout (the producer config's CloseTimeout).
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
	b.WriteString("closing the producer:")
	if n := e.Count(); n > 0 {
		noun := "messages"
		if n == 1 {
			noun = "message"
		}
		fmt.Fprintf(&b, " %d %s undelivered after %v", n, noun, e.Timeout)
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
