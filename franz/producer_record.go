package franz

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// outRecord is one message handed to kgo: its kgo.Record and what the
// promise needs to report it; once reported, it is its own delivery
// report (a produce.Event) on the receiver's channel. The promise, shared
// by every record (Producer.reported), finds the outRecord from the
// *kgo.Record it is given (the address of rec), so a produce costs no
// closure: one allocation, the outRecord (sending its pointer as a
// produce.Event allocates nothing), and its header array when the
// message has headers. An outRecord is never reused: the receiver reads
// its report and drops it. (Recycling them through a sync.Pool cost
// more CPU than allocating: a recycled outRecord was last written by
// kgo's promise goroutine or by another receiver, and reading it missed
// the CPU's caches; docs/performance.md.) The record's Context is its
// send window's (deadlines.context), never the outRecord: kgo keeps a
// record's context past its promise (waitUnknownTopic selects on it while
// the topic's partitions load).
type outRecord struct {
	rec     kgo.Record
	t       stagekit.Ticket
	reports chan produce.Event
	size    int64 // the bytes counted in Producer.buffered
	err     error // the delivery's outcome, set by the promise
}

// String makes an outRecord a produce.Event.
func (or *outRecord) String() string { return "franz delivery report" }

// outRecordOf returns the outRecord whose rec is r. r must be the record
// of an outRecord (Send produces only those with Producer.promise).
func outRecordOf(r *kgo.Record) *outRecord {
	return (*outRecord)(unsafe.Add(unsafe.Pointer(r), -unsafe.Offsetof(outRecord{}.rec)))
}

// newOutRecord returns a new outRecord of o, reported to reports, with
// the bytes kgo counts of o against kgo.MaxBufferedBytes (messageSize: a
// few lengths, cheaper to sum again than to carry from reserveRoom). The record's Context (the send window)
// and a zero timestamp are left to set before Produce.
func newOutRecord(o *produce.Outgoing, reports chan produce.Event) *outRecord {
	or := &outRecord{t: o.Ticket, reports: reports, size: messageSize(&o.Message)}
	r := &or.rec
	r.Topic, r.Key, r.Value, r.Timestamp = o.Topic, o.Message.Key, o.Message.Value, o.Timestamp
	if len(o.Message.Headers) > 0 {
		r.Headers = make([]kgo.RecordHeader, len(o.Message.Headers))
		for i, h := range o.Message.Headers {
			r.Headers[i] = kgo.RecordHeader{Key: h.Key, Value: h.Value}
		}
	}
	return or
}

// messageSize is the bytes kgo counts of m against kgo.MaxBufferedBytes:
// its key, value and headers.
func messageSize(m *sluice.Message) int64 {
	size := int64(len(m.Key) + len(m.Value))
	for _, h := range m.Headers {
		size += int64(len(h.Key) + len(h.Value))
	}
	return size
}

// reported is the promise of every record p's Send hands kgo (as
// Producer.promise; called by kgo's promise goroutine, one at a time): it
// sends the record, its outcome set, as its report to its receiver's
// channel, which has room for it (the core's outstanding bound). The
// promise touches it no more once sent: the receiver owns it.
func (p *Producer) reported(r *kgo.Record, err error) {
	or := outRecordOf(r)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && r.Context.Err() != nil {
		err = fmt.Errorf("not delivered within the delivery timeout (%v): %w", p.delivery, err)
	}
	if err == nil {
		p.acknowledged()
	}
	p.buffered.add(-1, -or.size)
	p.roomFreed()
	or.err = err
	or.reports <- or
}

// stamp sets a record's zero timestamp to now, as kgo would (a dead
// letter keeps its record's).
func stamp(r *kgo.Record, now time.Time) {
	if r.Timestamp.IsZero() {
		r.Timestamp = now
	}
}

// bufferedCount counts records and their bytes; it is safe for
// concurrent use.
type bufferedCount struct{ records, bytes atomic.Int64 }

func (b *bufferedCount) add(records, bytes int64) {
	b.records.Add(records)
	b.bytes.Add(bytes)
}

func (b *bufferedCount) load() (records, bytes int64) { return b.records.Load(), b.bytes.Load() }
