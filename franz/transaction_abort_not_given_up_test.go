package franz

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
)

// A record that a transaction's abort fails (kgo.ErrAborting, from
// kgoTxn.Abort's AbortBufferedRecords) while the producer is open is not
// Close giving up on it: its input is rewound and processed again, so a
// later Close that gave up on nothing returns nil, not a
// *sluice.CloseError naming that record as undelivered.
func TestTransactionAbortIsNotCloseGivingUp(t *testing.T) {
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"), kgo.TransactionalID("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close() // the source's Run would close it
	p := newProducerFor(ProducerConfig{CloseTimeout: 100 * time.Millisecond}, slog.New(slog.DiscardHandler))
	p.txn = &txnState{}
	p.attach(cl)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	reports := make(chan produce.Event, 1)
	chunk := []produce.Outgoing{{Topic: "out", Message: sluice.Message{Value: []byte("v")}}}
	if n, err := (client{p}).SendChunk(context.Background(), chunk, reports); n != 1 || err != nil {
		t.Fatalf("SendChunk = %d, %v; want 1, nil", n, err)
	}
	// The transaction aborts (kgoTxn.Abort) with the record buffered.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.AbortBufferedRecords(ctx); err != nil {
		t.Fatal(err)
	}
	_, rerr, _ := (client{p}).Report(<-reports)
	// What a Produce stage does with the failed report (producing.failed).
	gaveUp := p.tr.Failed((client{p}).GaveUp(rerr), sluice.UndeliveredMessage{Topic: "out", Offset: 7})
	if gaveUp {
		t.Errorf("a record the transaction's abort failed (%v) counts as given up on by Close, which has not started", rerr)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close, which gave up on nothing = %v; want nil", err)
	}
}
