package franz

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
)

// SendChunk hands kgo the prefix of a chunk that fits kgo's buffer, in
// order, and says the buffer is full for the rest: the records handed
// over are counted (pending, buffered) once, exactly, each of its own
// size, and each gets its report; the rest are not counted and never
// reach kgo.
func TestSendChunkHandsOverWhatFitsTheBuffer(t *testing.T) {
	// No broker answers: what kgo takes stays buffered until Close gives up.
	p, err := NewProducer(ProducerConfig{Brokers: []string{"127.0.0.1:1"}, CloseTimeout: 100 * time.Millisecond,
		Opts: []kgo.Opt{kgo.MaxBufferedRecords(3)}})
	if err != nil {
		t.Fatal(err)
	}
	reports := make(chan produce.Event, 5)
	chunk := make([]produce.Outgoing, 5)
	for i := range chunk {
		// Each value of its own size: i+1 bytes.
		chunk[i] = produce.Outgoing{Topic: "out", Message: sluice.Message{Value: bytes.Repeat([]byte{byte('a' + i)}, i+1)}}
	}
	n, err := (client{p}).SendChunk(context.Background(), chunk, reports)
	if n != 3 || err != errBufferFull {
		t.Fatalf("SendChunk of 5 with room for 3 = %d, %v; want 3, errBufferFull", n, err)
	}
	if records, bytes := p.buffered.load(); records != 3 || bytes != 1+2+3 {
		t.Errorf("buffered %d records of %d bytes, want 3 of 6", records, bytes)
	}
	if got := p.tr.Pending(); got != 3 {
		t.Errorf("%d pending, want 3", got)
	}
	if n, err := (client{p}).SendChunk(context.Background(), chunk[3:], reports); n != 0 || err != errBufferFull {
		t.Errorf("SendChunk with the buffer full = %d, %v; want 0, errBufferFull", n, err)
	}
	var cerr *sluice.CloseError
	if err := p.Close(); !errors.As(err, &cerr) {
		t.Fatalf("Close with 3 records buffered: %v, want a *sluice.CloseError", err)
	}
	for i := range 3 {
		ev := <-reports
		value, size := string(ev.(*outRecord).rec.Value), ev.(*outRecord).size
		_, err, ok := (client{p}).Report(ev)
		if want := strings.Repeat(string(rune('a'+i)), i+1); !ok || err == nil || value != want || size != int64(len(want)) {
			t.Errorf("report %d: of %q, %d bytes, error %v (a report: %v); want of %q, %d bytes, given up on",
				i, value, size, err, ok, want, len(want))
		}
	}
	select {
	case ev := <-reports:
		t.Errorf("a fourth report %v for a record never handed over", ev)
	default:
	}
	if records, bytes := p.buffered.load(); records != 0 || bytes != 0 {
		t.Errorf("buffered %d records of %d bytes once every record was reported, want 0 of 0", records, bytes)
	}
}

// Receivers that send chunks at the same time share kgo's buffer: between
// them they hand kgo no more records than it buffers, so none of their
// calls waits inside kgo's Produce (deaf to its partition's end) for room
// that only deliveries make. The broker never answers, so a call that
// waited there would wait until Close gives up.
func TestConcurrentSendChunksNeverOverfillTheBuffer(t *testing.T) {
	const (
		maxRecords = 256
		senders    = 4
		rounds     = 3
	)
	for round := range rounds {
		p, err := NewProducer(ProducerConfig{Brokers: []string{"127.0.0.1:1"}, CloseTimeout: time.Millisecond,
			Opts: []kgo.Opt{kgo.MaxBufferedRecords(maxRecords)}})
		if err != nil {
			t.Fatal(err)
		}
		start := make(chan struct{})
		handed := make(chan int, senders)
		reports := make([]chan produce.Event, senders)
		for i := range senders {
			reports[i] = make(chan produce.Event, maxRecords)
			// Headers make each call take a while to size its chunk.
			headers := make([]sluice.Header, 64)
			chunk := make([]produce.Outgoing, maxRecords)
			for j := range chunk {
				chunk[j] = produce.Outgoing{Topic: "out", Message: sluice.Message{Value: []byte("v"), Headers: headers}}
			}
			go func() {
				<-start
				n, _ := (client{p}).SendChunk(context.Background(), chunk, reports[i])
				handed <- n
			}()
		}
		close(start)
		total, returned := 0, 0
		// A deadline only to tell a call waiting in kgo's Produce from
		// one that returned: those return within microseconds.
		timeout := time.After(10 * time.Second)
	collect:
		for returned < senders {
			select {
			case n := <-handed:
				total += n
				returned++
			case <-timeout:
				break collect
			}
		}
		blocked := senders - returned
		_ = p.Close() // gives up on what kgo buffers: a call waiting in Produce returns
		for range blocked {
			total += <-handed
		}
		for i := range senders {
			for len(reports[i]) > 0 {
				_, _, _ = (client{p}).Report(<-reports[i])
			}
		}
		if blocked > 0 || total > maxRecords {
			t.Fatalf("round %d: %d concurrent SendChunk calls handed kgo %d records with kgo.MaxBufferedRecords(%d); %d of them waited in kgo's Produce until Close",
				round, senders, total, maxRecords, blocked)
		}
	}
}

// Close waits (within its timeout) for a send admitted before it started
// to hand its record to kgo: the record is flushed and, the cluster gone,
// given up on and counted in Close's error, instead of reaching kgo
// after Close checked what kgo holds. So does a transactional producer's
// Close, on the client its source's Run gave it.
func TestCloseCountsARecordAdmittedBeforeItStarted(t *testing.T) {
	const timeout = 300 * time.Millisecond
	for _, transactional := range []bool{false, true} {
		t.Run(fmt.Sprintf("transactional=%v", transactional), func(t *testing.T) {
			var p *Producer
			if transactional {
				cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
				if err != nil {
					t.Fatal(err)
				}
				defer cl.Close() // the source's Run would close it
				p = newProducerFor(ProducerConfig{CloseTimeout: timeout}, slog.New(slog.DiscardHandler))
				p.txn = &txnState{}
				p.attach(cl)
			} else {
				var err error
				if p, err = NewProducer(ProducerConfig{Brokers: []string{"127.0.0.1:1"}, CloseTimeout: timeout}); err != nil {
					t.Fatal(err)
				}
			}
			closeWhileHandingOver(t, p, timeout)
		})
	}
}

// closeWhileHandingOver admits a record on p with SendChunk's first half
// (reserveRoom), closes p while the record is not yet handed to kgo,
// hands it over with SendChunk's second half (handOver) once Close waits
// for it, and checks that Close flushed it for its timeout and counted
// it as given up on.
func closeWhileHandingOver(t *testing.T, p *Producer, timeout time.Duration) {
	t.Helper()
	reports := make(chan produce.Event, 1)
	chunk := []produce.Outgoing{{Topic: "out", Message: sluice.Message{Value: []byte("v")}}}
	waiting := make(chan struct{}) // closed: Close waits in handedOver
	p.awaitingHandOver = sync.OnceFunc(func() { close(waiting) })
	if n, err := p.reserveRoom(chunk); n != 1 || err != nil {
		t.Fatalf("reserveRoom = %d, %v; want 1, nil", n, err)
	}
	closed := make(chan error, 1)
	start := time.Now()
	go func() { closed <- p.Close() }()
	select {
	case <-waiting:
	case err := <-closed:
		t.Fatalf("Close returned %v before the admitted record was handed over", err)
	}
	p.handOver(chunk, reports)

	err := <-closed
	var ce *sluice.CloseError
	if !errors.As(err, &ce) || ce.Count() != 1 {
		t.Errorf("Close = %v, want a *sluice.CloseError counting the record", err)
	}
	if took := time.Since(start); took < timeout {
		t.Errorf("Close took %v, want at least its timeout %v (kgo flushing the record)", took, timeout)
	}
	// The record's report says Close gave up on it.
	if _, err, ok := (client{p}).Report(<-reports); !ok || err == nil {
		t.Errorf("report of the record: error %v (a report: %v), want given up on", err, ok)
	}
}
