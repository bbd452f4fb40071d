package franz_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// A transactional producer has no client of its own before its source's
// Run: its dead-letter destination's start check looks the topic up with
// a client made for it.
func TestTransactionalDeadLetterTopicCheckedBeforeRun(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "dlq", 1)
	src, err := franz.NewSource(franz.Config{GroupConfig: sluice.GroupConfig{Brokers: b.Addrs(), Group: "g", Topics: []string{"in"}}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := franz.NewTransactionalProducer(src, franz.TransactionalConfig{
		ProducerConfig: franz.ProducerConfig{Brokers: b.Addrs()}, TransactionConfig: sink.TransactionConfig{TransactionalID: "id"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := p.DeadLetter("dlq").CheckStart(ctx); err != nil {
		t.Errorf("CheckStart of an existing topic = %v, want nil", err)
	}
	if err := p.DeadLetter("dlg").CheckStart(ctx); !errors.Is(err, sluice.ErrMissingTopic) ||
		!strings.Contains(err.Error(), `the dead-letter topic "dlg" (Producer.DeadLetter) does not exist`) {
		t.Errorf("CheckStart of a missing topic = %v, want an error naming it", err)
	}
}
