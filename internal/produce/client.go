package produce

import (
	"context"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// Outgoing is one message as the core hands it to a [Client].
type Outgoing struct {
	// Topic is the topic to produce to; the client picks the partition.
	Topic string
	// Message holds the key, value and headers, passed on unchanged.
	Message sluice.Message
	// Timestamp is the record's timestamp; zero lets the client set it.
	Timestamp time.Time
	// Ticket is the value's ticket for a Produce stage, the zero Ticket
	// for a dead letter; Client.Report gives it back with the report.
	Ticket stagekit.Ticket
}

// Event is one value on a receiver's report channel: a delivery report,
// or another event of the library that is not one (Client.Report tells).
// Its method set is confluent-kafka-go's kafka.Event's, so that one
// channel type serves every backend and the Produce stage is written once
// for all of them: the librdkafka backend (sink/confluent) hands a
// receiver's channel to librdkafka as the chan kafka.Event it takes, the
// others send pointers (which box without allocating).
type Event interface{ String() string }

// Client is what a backend implements for its Kafka library.
//
// Send is called by one goroutine per receiver (a Produce stage, a
// dead-letter call), concurrently across receivers; the others only read
// their argument.
type Client interface {
	// Send hands o to the library, its delivery report to go to reports
	// (which the caller keeps room in: Send may have the library write to
	// it without blocking). It must count the message with Tracker.Send
	// or Tracker.Admit, so a closed producer fails it with
	// Names.ErrClosed. o is the caller's and only
	// valid during the call (a stage reuses it for its next message):
	// Send copies what it keeps. It may block while the
	// library's buffer is full, until ctx ends or Close starts (then the
	// report carries the failure, or, for a Send that waits for room
	// before it hands anything over, it returns an error for which
	// QueueFull is true, having taken nothing); or it returns an error
	// for which QueueFull is true, and the core waits for a report or a
	// few milliseconds and sends again.
	Send(ctx context.Context, o *Outgoing, reports chan Event) error
	// QueueFull reports whether err, returned by Send, means the
	// library's buffer is full for now.
	QueueFull(err error) bool
	// Report reads one event of a receiver's channel: the ticket of the
	// Outgoing it reports and the delivery error (nil when delivered). ok
	// is false for an event that is not a delivery report.
	Report(ev Event) (t stagekit.Ticket, err error, ok bool)
	// GaveUp reports whether a delivery error is Close giving up on the
	// message (librdkafka's purge, kgo's abort or close).
	GaveUp(err error) bool
	// Classify marks a produce or delivery error sluice.Permanent when
	// producing again cannot fix it; others are returned unchanged.
	Classify(err error) error
	// MaxBuffered is the most messages the library holds undelivered
	// (kgo.MaxBufferedRecords, librdkafka's
	// queue.buffering.max.messages), or 0 when it has no such bound. A
	// Produce stage sizes its report channel from it when it starts.
	MaxBuffered() int
}

// ChunkSender is a [Client] that also takes a run of messages in one
// call, paying once per call what Send pays per message (the closed
// check, the clock, the counters every receiver shares). A Produce stage
// hands the converted messages of each chunk to SendChunk when its
// client has it, in as many calls as its report channel's room and the
// library's buffer require, and each message to Send otherwise.
type ChunkSender interface {
	// SendChunk hands os to the library in order, each as Send would, its
	// delivery report to go to reports (which the caller keeps room in
	// for all of os), and returns how many it handed over: a prefix of
	// os. When n < len(os), err says why os[n] was not: an error for which
	// QueueFull is true (the caller waits for a report or a few
	// milliseconds and sends os[n:] again), or another. When ctx ends
	// while it blocks (as Send may), it takes the message it blocked on
	// (as Send does) and hands over nothing more, returning ctx's error
	// (even with n == len(os)): the caller then sends the rest again,
	// which a closed producer refuses (franz's SendChunk never blocks on
	// a full buffer: it returns a QueueFull error instead). It must count
	// what it hands over with Tracker.Admit, so that a closed producer
	// refuses it with Names.ErrClosed. os is the caller's and only valid
	// during the call. It is called like Send: one goroutine per
	// receiver, concurrently across receivers.
	SendChunk(ctx context.Context, os []Outgoing, reports chan Event) (n int, err error)
}

// Names are the backend's words in errors.
type Names struct {
	// Package prefixes the producer's own errors ("sink", "franz").
	Package string
	// ErrClosed is the backend's sentinel for a closed producer.
	ErrClosed error
}
