package pipeline

import (
	"context"

	"github.com/sluice-go/sluice"
)

// WithDeadLetter sets where records marked with [sluice.Invalid] go. fn is
// called on the partition's dead-letter goroutine (one per partition, started
// with its first dead letter), not on the stage that found the record
// invalid, which goes on meanwhile. Within a
// partition, calls come one record at a time and in offset order: a record is
// handed over once every record before it finished or was found invalid
// itself, so a record that a later stage finds invalid at a lower offset still
// goes first (a slow record holds back the dead letters after it, which could
// not be committed before it anyway). Calls for different partitions may
// overlap. ctx is the partition's context.
//
// The record's offset counts as done only when fn returned nil. The
// Kafka destinations (a sink.Producer's DeadLetter, on either client) return as
// soon as the producer took the dead letter, and Run counts the offset as
// done when its delivery report arrives: a partition has up to 1024 dead
// letters in flight, produced in offset order (which the producers'
// default idempotent writes keep through their own retries), and a
// record still commits only after its dead letter was stored and every
// record before it finished.
//
// A failed call is retried under the [WithRetry] policy (a [sluice.Permanent]
// error or a panic is not); when it still fails, Run stops with a
// *sluice.StageError wrapping [sluice.ErrNotDeadLettered] and naming the record. A
// failed delivery report is retried the same way once the reports of the
// dead letters in flight with it arrived; those may already be stored, so
// the retried dead letter lands after them (and if it fails for good,
// they are produced again when the partition's next owner processes
// their records, which are not committed). A revoke or a shutdown
// interrupts the retries: the record and the dead letters queued after it
// stay uncommitted (the partition's next owner handles them), and at
// shutdown Run returns that error, naming them, so nothing is dropped
// silently.
//
// fn is any function of that signature (a func literal, a method value),
// or a value of a named function type. When its type implements
// [sluice.StartChecker], as the destinations of the Kafka producers do
// (a sink.Producer's DeadLetter, on either client: the topic must
// exist), Run calls its CheckStart before the source starts and returns
// its error: a misspelt dead-letter topic fails at start, not at the first
// invalid record. A nil fn is an option error.
func WithDeadLetter[F ~func(ctx context.Context, dl sluice.DeadLetter) error](fn F) Option {
	return func(c *config) {
		if fn == nil {
			c.bad("WithDeadLetter(nil): pass a function")
		}
		c.DeadLetter = fn
		c.deadLetterCheck = nil
		if sc, ok := any(fn).(sluice.StartChecker); ok && fn != nil {
			c.deadLetterCheck = sc.CheckStart
		}
	}
}

// WithDeadLetterLimit sets limits on invalid records per partition (off by
// default). The records already dead-lettered when a limit trips stay
// committed; Run then shuts down like after a stage error. A negative
// MaxConsecutive or Window, a MaxRatio that is not a number within
// [0, 1], or a Window without MaxRatio makes Run return an error naming the
// field.
func WithDeadLetterLimit(l sluice.DeadLetterLimit) Option {
	return func(c *config) {
		if l.Window > 0 && l.MaxRatio == 0 {
			c.bad("WithDeadLetterLimit: Window %d is set but MaxRatio is 0, which turns the ratio check off: set MaxRatio too, or leave Window 0", l.Window)
		}
		if l.Window == 0 {
			l.Window = 1000
		}
		if l.MaxConsecutive < 0 {
			c.bad("WithDeadLetterLimit: MaxConsecutive %d must not be negative", l.MaxConsecutive)
		}
		// Written so that NaN fails too: it compares false with everything.
		if !(l.MaxRatio >= 0 && l.MaxRatio <= 1) {
			c.bad("WithDeadLetterLimit: MaxRatio %v must be a number within [0, 1]", l.MaxRatio)
		}
		if l.Window < 0 {
			c.bad("WithDeadLetterLimit: Window %d must not be negative", l.Window)
		}
		c.DeadLetterLimit = l
	}
}
