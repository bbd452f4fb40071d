package franz

import (
	"log/slog"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A transactional producer has no client until its source's Run attaches
// the source's: a Produce stage that starts meanwhile (in another
// source's Run, whose produce calls fail with errNotStarted) asks the
// producer's MaxBuffered while attach sets it. It reads the bound only
// after seeing the client attached (as usable does), so the two do not
// race, and before that it answers 0 (no known bound); after, it is the
// client's kgo.MaxBufferedRecords.
func TestTransactionalMaxBufferedWhileAttaching(t *testing.T) {
	p := newProducerFor(ProducerConfig{Brokers: []string{"127.0.0.1:1"}}, slog.New(slog.DiscardHandler))
	p.txn = &txnState{}
	defer p.cancelGiveUp()
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"), kgo.MaxBufferedRecords(3000))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if got := (client{p}).MaxBuffered(); got != 0 {
		t.Errorf("MaxBuffered before attach = %d, want 0", got)
	}
	var wg sync.WaitGroup
	wg.Go(func() { p.attach(cl) })
	if got := (client{p}).MaxBuffered(); got != 0 && got != 3000 {
		t.Errorf("MaxBuffered while attaching = %d, want 0 or 3000", got)
	}
	wg.Wait()
	if got := (client{p}).MaxBuffered(); got != 3000 {
		t.Errorf("MaxBuffered after attach = %d, want 3000", got)
	}
}
