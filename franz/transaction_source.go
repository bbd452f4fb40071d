package franz

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/exactlyonce"
	"github.com/sluice-go/sluice/internal/rebalance"
)

// transactions is the exactly-once side of one Run of a [Source] with a
// transactional producer bound to it (NewTransactionalProducer): the
// producer, its exactlyonce.Txn and the Group wrapping the runtime's. A
// nil *transactions (no producer bound) adds nothing: every method is
// safe on it.
type transactions struct {
	p   *Producer
	cfg exactlyonce.Config
	txn *kgoTxn
	eg  *exactlyonce.Group
	// watch reads the shared client's log while start waits for the
	// producer id (transaction_start.go).
	watch *initWatch
}

// takeTransactions returns the transactions of s's Run, nil when no
// producer is bound to s.
func (s *Source) takeTransactions() *transactions {
	b, ok := s.txn.Take()
	if !ok {
		return nil
	}
	p := b.Producer
	return &transactions{p: p, cfg: b.Config, txn: &kgoTxn{p: p, txnID: b.TransactionalID,
		group: s.cfg.Group, rewound: make(map[sluice.TopicPartition]bool)}, watch: new(initWatch)}
}

// wrap returns the Group the poll loop feeds: g, or g committing through
// the producer's transactions (the exactly-once Group goes beneath g's
// layers, next to the runtime's group: exactlyonce.Insert).
func (t *transactions) wrap(ctx context.Context, g sluice.Group) sluice.Group {
	if t == nil {
		return g
	}
	feed, eg := exactlyonce.Insert(ctx, g, t.txn, t.cfg)
	t.eg = eg
	return feed
}

// initWatch is the watch of start, for the client's logger; nil without
// a transactional producer.
func (t *transactions) initWatch() *initWatch {
	if t == nil {
		return nil
	}
	return t.watch
}

// attach tells the transactions the poll loop's core, gone topics and
// fetched topic IDs, and the group's coordinator (see kgoTxn.core,
// kgoTxn.gone, kgoTxn.ids and kgoTxn.coord).
func (t *transactions) attach(c *rebalance.Core, gone *goneTopics, ids *fetchedIDs, coord *groupCoordinator) {
	if t != nil {
		t.txn.core, t.txn.gone, t.txn.ids, t.txn.coord = c, gone, ids, coord
	}
}

// defaultOpts go before the source's Config.Opts, opts after them.
func (t *transactions) defaultOpts() []kgo.Opt {
	if t == nil {
		return nil
	}
	return t.p.txn.cfg.defaultClientOpts()
}

func (t *transactions) opts() []kgo.Opt {
	if t == nil {
		return nil
	}
	return t.p.txn.cfg.clientOpts()
}

// kip890p2 reports whether an ApiVersions response shows KIP-890 part 2
// as kgo uses it: transaction.version 2 finalized, TxnOffsetCommit v5,
// and the client's kgo.MaxVersions (capped, nil when unset) allowing Produce
// v12, EndTxn v5 and TxnOffsetCommit v5 (kgo keeps the old protocol
// otherwise).
func kip890p2(resp *kmsg.ApiVersionsResponse, capped *kversion.Versions) bool {
	if resp.FinalizedFeaturesEpoch == -1 {
		return false
	}
	if capped != nil {
		for key, least := range map[kmsg.Key]int16{kmsg.Produce: 12, kmsg.EndTxn: 5, kmsg.TxnOffsetCommit: 5} {
			if v, ok := capped.LookupMaxKeyVersion(int16(key)); !ok || v < least {
				return false
			}
		}
	}
	tv2 := false
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "transaction.version" && f.MaxVersionLevel >= 2 {
			tv2 = true
		}
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == int16(kmsg.TxnOffsetCommit) {
			return tv2 && k.MaxVersion >= 5
		}
	}
	return false
}

// group is the Group wrapping the runtime's, nil without a transactional
// producer (its Err and JoinErr are safe on nil).
func (t *transactions) group() *exactlyonce.Group {
	if t == nil {
		return nil
	}
	return t.eg
}
