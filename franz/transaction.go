package franz

import (
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/exactlyonce"
)

// NewTransactionalProducer returns a transactional producer bound to src
// for exactly-once consume-transform-produce: while src runs, everything
// produced through it (sink.Produce stages and [Producer.DeadLetter], which
// work with it unchanged) and the offsets of the records behind it commit
// in one Kafka transaction per commit interval (src's
// Config.CommitInterval), and src commits no offsets itself. Readers of
// the outputs with read_committed isolation see every input's outputs
// exactly once; src reads its input with read_committed too (unless its
// Config.Opts set kgo.FetchIsolationLevel). See docs/exactly-once.md for
// what it guarantees and costs; it is confluent.NewTransactionalProducer's
// franz twin.
//
// The producer has no client of its own: kgo sends a consumer's offsets
// to a transaction only from the client that consumes, so src's Run
// creates one client for both, with cfg's options after src's, and
// closes it when it returns. Call NewTransactionalProducer before src's
// Run, once per source, and use the producer in that Run only (a produce
// before it started fails, permanently); Close it after pipeline.Run
// returned. Errors name the offending field or option; binding a second
// producer to src, or binding once its Run started (or returned), is an
// error.
func NewTransactionalProducer(src *Source, cfg TransactionalConfig) (*Producer, error) {
	if src == nil {
		return nil, errors.New("franz: NewTransactionalProducer: the source is nil")
	}
	cfg, err := cfg.validate(src)
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := newProducerFor(cfg.ProducerConfig, logger)
	p.txn = &txnState{cfg: cfg}
	eosLog := cfg.Logger
	if eosLog == nil {
		eosLog = src.cfg.Logger // the aborts are the consumer's business too
	}
	b := exactlyonce.Binding[*Producer]{Producer: p, TransactionalID: cfg.TransactionalID,
		Config: exactlyonce.Config{Logger: eosLog, CommitTimeout: cfg.CommitTimeout}}
	if err := src.txn.Bind(b); err != nil {
		return nil, fmt.Errorf("franz: NewTransactionalProducer: %w", err)
	}
	return p, nil
}

// txnState is what a transactional producer adds to a [Producer].
type txnState struct {
	cfg TransactionalConfig
	// attached is set once the source's Run gave the producer its client
	// (Producer.cl, written before): a produce reads cl only after seeing
	// it.
	attached atomic.Bool
	// delivered counts the records acknowledged since the transaction
	// began (kgoTxn.Begin resets it).
	delivered atomic.Int64
}

// errNotStarted fails a transactional producer's produce calls before its
// source's Run gave it the client.
var errNotStarted = errors.New("franz: the transactional producer has no client yet: it produces only within the Run of the source it is bound to (NewTransactionalProducer)")

// usable returns nil when p may produce: a plain producer, or a
// transactional one whose source's Run started.
func (p *Producer) usable() error {
	if p.txn != nil && !p.txn.attached.Load() {
		return sluice.Permanent(errNotStarted)
	}
	return nil
}

// acknowledged counts a delivered record of a transactional producer.
func (p *Producer) acknowledged() {
	if p.txn != nil {
		p.txn.delivered.Add(1)
	}
}

// attach gives p the shared client (the source's Run, before its poll
// loop starts).
func (p *Producer) attach(cl *kgo.Client) {
	p.setClient(cl)
	p.txn.attached.Store(true)
}
