package franz

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// newOutRecord carries every field of the message to kgo's record, and
// messageSize counts the bytes kgo counts of it; the promise finds it from
// its kgo.Record and sends it, as its report, to its receiver's channel,
// where Report reads its ticket and outcome.
func TestOutRecordCarriesTheMessageToItsReport(t *testing.T) {
	p := newProducerFor(ProducerConfig{}, nil)
	reports := make(chan produce.Event, 1)
	ts := time.Unix(1700000000, 0)
	o := &produce.Outgoing{Topic: "out", Timestamp: ts, Ticket: ticketNumbered(7), Message: sluice.Message{
		Key: []byte("k"), Value: []byte("value"),
		Headers: []sluice.Header{{Key: "trace", Value: []byte("t1")}, {Key: "s", Value: nil}},
	}}
	or := newOutRecord(o, reports)
	size := or.size
	r := &or.rec
	r.Context = context.Background()
	if r.Topic != "out" || string(r.Key) != "k" || string(r.Value) != "value" || !r.Timestamp.Equal(ts) ||
		len(r.Headers) != 2 || r.Headers[0].Key != "trace" || string(r.Headers[0].Value) != "t1" || r.Headers[1].Key != "s" {
		t.Fatalf("record %+v", r)
	}
	if want := int64(len("k") + len("value") + len("trace") + len("t1") + len("s")); size != want {
		t.Errorf("size %d, want %d", size, want)
	}
	if outRecordOf(r) != or {
		t.Fatal("outRecordOf does not find the outRecord of its record")
	}
	p.reported(r, nil)
	select {
	case ev := <-reports:
		if ev != produce.Event(or) {
			t.Fatalf("report %v, want the record's outRecord", ev)
		}
		if tk, err, ok := (client{p}).Report(ev); tk != o.Ticket || err != nil || !ok {
			t.Errorf("report of ticket %v, error %v (a report: %v), want %v, nil (true)", tk, err, ok, o.Ticket)
		}
	default:
		t.Fatal("no report on the receiver's channel")
	}
	if r, b := p.buffered.load(); r != -1 || b != -size {
		t.Errorf("the promise counted %d records and %d bytes out of the buffer, want -1 and %d (only its own record)", r, b, -size)
	}
}

// A record failing because its window's context ended reports the
// delivery timeout; another record's DeadlineExceeded (its window still
// open) is reported as kgo gave it.
func TestReportedNamesTheDeliveryTimeout(t *testing.T) {
	p := newProducerFor(ProducerConfig{DeliveryTimeout: 3 * time.Second}, nil)
	reports := make(chan produce.Event, 2)
	ended, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	for _, window := range []context.Context{ended, context.Background()} {
		or := newOutRecord(&produce.Outgoing{Topic: "out"}, reports)
		or.rec.Context = window
		p.reported(&or.rec, context.DeadlineExceeded) // as kgo reports a record whose context ended
	}
	_, timedOut, _ := (client{p}).Report(<-reports)
	_, other, _ := (client{p}).Report(<-reports)
	if !errors.Is(timedOut, context.DeadlineExceeded) || !strings.Contains(timedOut.Error(), "not delivered within the delivery timeout (3s)") {
		t.Errorf("report of the ended window: %v, want the delivery timeout named", timedOut)
	}
	if other != context.DeadlineExceeded {
		t.Errorf("report of the open window: %v, want kgo's error unchanged", other)
	}
}

// A produce allocates its outRecord and, when the message has headers,
// their array, and nothing else: no closure for the promise, no boxing of
// the report.
func TestOutRecordIsTheOnlyAllocationOfAProduce(t *testing.T) {
	p := newProducerFor(ProducerConfig{}, nil)
	reports := make(chan produce.Event, 1)
	for _, c := range []struct {
		name    string
		headers []sluice.Header
		want    float64
	}{{"no headers", nil, 1}, {"headers", []sluice.Header{{Key: "h"}, {Key: "i"}}, 2}} {
		o := &produce.Outgoing{Topic: "out", Message: sluice.Message{Value: []byte("v"), Headers: c.headers}}
		allocs := testing.AllocsPerRun(100, func() {
			or := newOutRecord(o, reports)
			or.rec.Context = context.Background()
			p.promise(&or.rec, nil)
			_, _, _ = (client{p}).Report(<-reports)
		})
		if allocs != c.want {
			t.Errorf("%s: %v allocations per record, want %v", c.name, allocs, c.want)
		}
	}
}

// full counts what Send handed kgo until its promise reported it: a
// record over kgo.MaxBufferedRecords or kgo.MaxBufferedBytes waits, one
// reported makes room, and a record larger than the byte limit never
// waits (kgo fails it at once).
func TestFullCountsRecordsUntilReported(t *testing.T) {
	p := newProducerFor(ProducerConfig{}, nil)
	p.maxRecords, p.maxBytes = 2, 100
	reports := make(chan produce.Event, 2)
	full := func(size int64) bool {
		records, bytes := p.buffered.load()
		return p.full(records, bytes, size)
	}
	var sent []*outRecord
	for range 2 {
		o := &produce.Outgoing{Topic: "out", Message: sluice.Message{Value: make([]byte, 40)}}
		or := newOutRecord(o, reports)
		or.rec.Context = context.Background()
		p.buffered.add(1, or.size) // as SendChunk does before kgo.Produce
		sent = append(sent, or)
	}
	if !full(1) {
		t.Error("not full with 2 records buffered of kgo.MaxBufferedRecords 2")
	}
	p.reported(&sent[0].rec, nil)
	if full(60) {
		t.Error("full after a report: 1 record and 40 B buffered, 60 B more fit 100 B")
	}
	if !full(61) {
		t.Error("61 B fit with 40 of kgo.MaxBufferedBytes 100 buffered")
	}
	if full(101) {
		t.Error("a record larger than kgo.MaxBufferedBytes waits for room that never comes")
	}
	p.reported(&sent[1].rec, nil)
	if r, b := p.buffered.load(); r != 0 || b != 0 {
		t.Errorf("%d records, %d bytes counted once every record was reported, want 0, 0", r, b)
	}
}

// ticketNumbered is a ticket no other has: stagekit.Ticket holds one
// uint64 (engine.Ticket's id), which Report must carry back unchanged.
func ticketNumbered(id uint64) stagekit.Ticket {
	var t stagekit.Ticket
	if unsafe.Sizeof(t) != unsafe.Sizeof(id) {
		panic("stagekit.Ticket is no longer one uint64")
	}
	return *(*stagekit.Ticket)(unsafe.Pointer(&id))
}
