package franz

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// drainOnlyGroup is a Group for a Run that returns before its poll loop
// (here: the input topic does not exist): Run asks it for the drain
// timeout only.
type drainOnlyGroup struct{ sluice.Group }

func (drainOnlyGroup) DrainTimeout() time.Duration { return 5 * time.Second }

// NewTransactionalProducer racing the source's Run either is refused
// ("the source's Run has started") or binds before Run takes the binding:
// a producer it returned without an error is never left bound to a source
// whose Run has started and will never take it (such a producer can never
// produce: every produce fails with "has no client yet", while the Run it
// was meant for runs at least once).
func TestNewTransactionalProducerRacingRunIsRefusedOrTaken(t *testing.T) {
	b := kafkatest.NewKfake(t)
	for i := range 300 {
		src, err := NewSource(Config{GroupConfig: sluice.GroupConfig{Brokers: b.Addrs(), Group: "g", Topics: []string{"no-such-topic"}}})
		if err != nil {
			t.Fatal(err)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		var runErr, bindErr error
		var p *Producer
		wg.Go(func() {
			<-start
			runErr = src.Run(context.Background(), drainOnlyGroup{})
		})
		wg.Go(func() {
			<-start
			p, bindErr = NewTransactionalProducer(src, TransactionalConfig{TransactionConfig: sink.TransactionConfig{TransactionalID: "race"}})
		})
		close(start)
		wg.Wait()
		if !errors.Is(runErr, sluice.ErrMissingTopic) {
			t.Fatalf("iteration %d: Run = %v, want the missing-topic error", i, runErr)
		}
		if bindErr != nil {
			continue
		}
		_, stillBound := src.txn.Take()
		_ = p.Close()
		if stillBound {
			t.Fatalf("iteration %d: NewTransactionalProducer returned no error, but the producer was bound after Run took the source's binding (Run ran without it; the producer can never produce)", i)
		}
	}
}
