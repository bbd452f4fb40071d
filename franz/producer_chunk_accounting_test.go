package franz

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
)

// Receivers sending chunks of messages with headers at once through a
// buffer bounded in records and bytes, each keeping at most its channel's
// room outstanding as a Produce stage does: every message is reported
// once, to its own receiver, and once all are, the producer counts
// nothing buffered, as kgo does.
func TestConcurrentChunksAreEachReportedOnceAndUncounted(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := NewProducer(ProducerConfig{Brokers: c.ListenAddrs(), Opts: []kgo.Opt{kgo.MaxBufferedRecords(40), kgo.MaxBufferedBytes(3000)}})
	if err != nil {
		t.Fatal(err)
	}
	const senders, perSender, room = 4, 600, 32
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for s := range senders {
		wg.Go(func() {
			reports := make(chan produce.Event, room)
			msgs := make([]produce.Outgoing, perSender)
			for i := range msgs {
				v := fmt.Appendf(nil, "%d/%d", s, i)
				hs := make([]sluice.Header, i%4)
				for j := range hs {
					hs[j] = sluice.Header{Key: "k", Value: make([]byte, (i*7+j)%50)}
				}
				msgs[i] = produce.Outgoing{Topic: "out", Message: sluice.Message{Value: v, Headers: hs}}
			}
			seen := make(map[string]int)
			outstanding, next := 0, 0
			read := func(ev produce.Event) {
				or := ev.(*outRecord)
				if _, err, _ := (client{p}).Report(ev); err != nil {
					errs <- fmt.Errorf("sender %d: delivery of %q: %w", s, or.rec.Value, err)
				}
				seen[string(or.rec.Value)]++
				outstanding--
				p.tr.Received()
			}
			deadline := time.After(30 * time.Second)
			for next < perSender || outstanding > 0 {
				if next < perSender && outstanding < room {
					part := msgs[next:min(perSender, next+room-outstanding)]
					n, err := (client{p}).SendChunk(context.Background(), part, reports)
					next += n
					outstanding += n
					if err == nil || n > 0 {
						continue
					}
					if err != errBufferFull {
						errs <- err
						return
					}
				}
				select {
				case ev := <-reports:
					read(ev)
				case <-time.After(5 * time.Millisecond):
				case <-deadline:
					errs <- fmt.Errorf("sender %d: %d sent, %d outstanding after 30s", s, next, outstanding)
					return
				}
			}
			for i := range perSender {
				if k := fmt.Sprintf("%d/%d", s, i); seen[k] != 1 {
					errs <- fmt.Errorf("sender %d: %q reported %d times", s, k, seen[k])
				}
			}
			if len(seen) != perSender {
				errs <- fmt.Errorf("sender %d: %d distinct reports, want %d", s, len(seen), perSender)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if r, b := p.buffered.load(); r != 0 || b != 0 {
		t.Errorf("buffered %d records of %d bytes once all were reported, want 0", r, b)
	}
	// kgo drops its count of a record just after its promise returned:
	// Flush waits for that.
	if err := p.cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r, b := p.cl.BufferedProduceRecords(), p.cl.BufferedProduceBytes(); r != 0 || b != 0 {
		t.Errorf("kgo buffers %d records of %d bytes once all were reported, want 0", r, b)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
