package franz_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

func txnTestSource(t *testing.T) *franz.Source {
	t.Helper()
	src, err := franz.NewSource(franz.Config{GroupConfig: sluice.GroupConfig{Brokers: []string{"localhost:9092"}, Group: "g", Topics: []string{"in"}}})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// Each bad configuration is refused with an error naming the field or
// the option.
func TestNewTransactionalProducerRefusesBadConfig(t *testing.T) {
	base := func(c franz.TransactionalConfig) franz.TransactionalConfig {
		if c.TransactionalID == "" {
			c.TransactionalID = "id"
		}
		return c
	}
	for _, tc := range []struct {
		name string
		cfg  franz.TransactionalConfig
		want string
	}{
		{"no id", franz.TransactionalConfig{TransactionConfig: sink.TransactionConfig{TransactionalID: " "}}, "TransactionalConfig.TransactionalID is empty"},
		{"negative txn timeout", base(franz.TransactionalConfig{TransactionConfig: sink.TransactionConfig{TransactionTimeout: -time.Second}}), "TransactionalConfig.TransactionTimeout = -1s"},
		{"sub-ms txn timeout", base(franz.TransactionalConfig{TransactionConfig: sink.TransactionConfig{TransactionTimeout: time.Microsecond}}), "TransactionalConfig.TransactionTimeout = 1µs"},
		{"negative commit timeout", base(franz.TransactionalConfig{TransactionConfig: sink.TransactionConfig{CommitTimeout: -time.Second}}), "TransactionalConfig.CommitTimeout = -1s"},
		{"other brokers", base(franz.TransactionalConfig{ProducerConfig: franz.ProducerConfig{Brokers: []string{"elsewhere:9092"}}}),
			"TransactionalConfig.Brokers [elsewhere:9092] are not the source's Config.Brokers [localhost:9092]"},
		{"negative close timeout", base(franz.TransactionalConfig{ProducerConfig: franz.ProducerConfig{CloseTimeout: -1}}), "ProducerConfig.CloseTimeout"},
		{"txn id opt", base(franz.TransactionalConfig{ProducerConfig: franz.ProducerConfig{Opts: []kgo.Opt{kgo.TransactionalID("x")}}}),
			"kgo.TransactionalID cannot be set for a transactional producer: use TransactionalConfig.TransactionalID"},
		{"txn timeout opt", base(franz.TransactionalConfig{ProducerConfig: franz.ProducerConfig{Opts: []kgo.Opt{kgo.TransactionTimeout(time.Minute)}}}),
			"kgo.TransactionTimeout cannot be set for a transactional producer: use TransactionalConfig.TransactionTimeout"},
		{"producer reserved opt", base(franz.TransactionalConfig{ProducerConfig: franz.ProducerConfig{Opts: []kgo.Opt{kgo.ManualFlushing()}}}),
			"kgo.ManualFlushing cannot be set"},
		{"group opt", base(franz.TransactionalConfig{ProducerConfig: franz.ProducerConfig{Opts: []kgo.Opt{kgo.SessionTimeout(time.Minute)}}}),
			"ProducerConfig.Opts[0] is a consumer or group option"},
		{"consumer opt", base(franz.TransactionalConfig{ProducerConfig: franz.ProducerConfig{Opts: []kgo.Opt{kgo.FetchMaxWait(time.Second)}}}),
			"ProducerConfig.Opts[0] is a consumer or group option"},
		{"non-idempotent", base(franz.TransactionalConfig{ProducerConfig: franz.ProducerConfig{Opts: []kgo.Opt{kgo.DisableIdempotentWrite()}}}),
			"the source's Config.Opts with the producer's options"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := franz.NewTransactionalProducer(txnTestSource(t), tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewTransactionalProducer = %v, %v; want an error containing %q", p, err, tc.want)
			}
		})
	}
}

// A nil source, a second producer for one source and one bound after Run
// started are refused; the same brokers in another order are accepted.
func TestNewTransactionalProducerBinding(t *testing.T) {
	if _, err := franz.NewTransactionalProducer(nil, franz.TransactionalConfig{TransactionConfig: sink.TransactionConfig{TransactionalID: "id"}}); err == nil ||
		!strings.Contains(err.Error(), "the source is nil") {
		t.Fatalf("nil source: %v", err)
	}
	src, err := franz.NewSource(franz.Config{GroupConfig: sluice.GroupConfig{Brokers: []string{"a:1", "b:2"}, Group: "g", Topics: []string{"in"}}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := franz.NewTransactionalProducer(src, franz.TransactionalConfig{TransactionConfig: sink.TransactionConfig{TransactionalID: "id"},
		ProducerConfig: franz.ProducerConfig{Brokers: []string{"b:2", "a:1"}}})
	if err != nil {
		t.Fatalf("the source's brokers in another order: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close of a producer whose source never ran = %v, want nil", err)
	}
	if _, err := franz.NewTransactionalProducer(src, franz.TransactionalConfig{TransactionConfig: sink.TransactionConfig{TransactionalID: "id2"}}); err == nil ||
		!strings.Contains(err.Error(), "the source has a transactional producer already") {
		t.Fatalf("second producer: %v", err)
	}
}

// A transactional producer used outside its source's Run fails at once,
// permanently, naming why; Close still returns nil.
func TestTransactionalProducerBeforeRun(t *testing.T) {
	p, err := franz.NewTransactionalProducer(txnTestSource(t), franz.TransactionalConfig{TransactionConfig: sink.TransactionConfig{TransactionalID: "id"}})
	if err != nil {
		t.Fatal(err)
	}
	dl := p.DeadLetter("dlq")
	bad := sluice.DeadLetter{Record: sluice.Record{Topic: "in", Offset: 7}, Stage: "decode", Err: errors.New("bad")}
	err = dl(t.Context(), bad)
	if err == nil || !strings.Contains(err.Error(), "produces only within the Run of the source it is bound to") {
		t.Fatalf("dead letter before Run = %v, want the not-started error", err)
	}
	if !sluice.IsPermanent(err) {
		t.Fatalf("dead letter before Run = %v, want a permanent error", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// A transactional producer closed before its source's Run: Run fails
// (its produces are refused) within a bound, and commits nothing: a
// read_committed reader of the output sees nothing and the group has no
// committed offset past what no output covers.
func TestTransactionalProducerClosedBeforeRunCommitsNothing(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewKfake(t)
	b.CreateTopic(t, "in", 1)
	b.CreateTopic(t, "out", 1)
	b.Produce(t, "in", input(1, 0, 10)...)
	src, p := newTxnSource(t, b, "g", "in", "txn-closed-before-run", 0)
	if err := p.Close(); err != nil {
		t.Fatalf("Close before Run = %v", err)
	}
	r := testkit.Start(t, src, produceTo(p, "out"))
	err := within(t, wait, r.Wait)
	t.Logf("Run = %v", err)
	if err == nil {
		t.Error("Run with a transactional producer closed before it returned nil")
	}
	if got := b.Committed(t, "g", "in"); len(got) != 0 {
		t.Errorf("committed %v, want nothing: no output was produced", got)
	}
}

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
