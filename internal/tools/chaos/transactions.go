package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sluice-go/sluice/sink/confluent"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// stableBound is how long, after the last process stopped, the
// transactions left open may keep a partition's last stable offset
// behind its high watermark: a SIGKILLed process's open transaction
// stays open until the broker aborts it at its transaction timeout
// (cmd/example uses the default, confluent.DefaultTransactionTimeout, counted
// from the transaction's start, so before the kill), plus 5 s for the
// broker to write the abort markers on a loaded machine (Apache Kafka
// looks for timed-out transactions every second as kafkatest configures
// it: transaction.abort.timed.out.transaction.cleanup.interval.ms). Every
// incarnation has a transactional id of its own (transactionalID), so no
// restart aborts its predecessor's transaction sooner.
const stableBound = confluent.DefaultTransactionTimeout + 5*time.Second

// transactionalID is cmd/example's transactional.id for the process
// whose --client-id is name (cmd/example/exactlyonce.go).
func transactionalID(name string) string { return "sluice-example-" + name }

// unstable returns, for every partition of topics whose last stable
// offset is behind its high watermark (a transaction is open there),
// "topic/partition: last stable offset L, high watermark H". It asks the
// broker for both (ListOffsets with isolation level read_committed for
// the last stable offset, read_uncommitted for the high watermark).
func (c *cluster) unstable(ctx context.Context, topics ...string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, brokerCallTimeout)
	defer cancel()
	stable, err := c.adm.ListCommittedOffsets(ctx, topics...)
	if err == nil {
		err = stable.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("last stable offsets: %w", err)
	}
	end, err := c.adm.ListEndOffsets(ctx, topics...)
	if err == nil {
		err = end.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("high watermarks: %w", err)
	}
	var out []string
	for _, topic := range topics {
		for _, p := range slices.Sorted(maps.Keys(end[topic])) {
			lso, hw := stable[topic][p].Offset, end[topic][p].Offset
			if lso < hw {
				out = append(out, fmt.Sprintf("%s/%d: last stable offset %d, high watermark %d", topic, p, lso, hw))
			}
		}
	}
	return out, nil
}

// waitStable waits until no transaction is open on topics (every
// partition's last stable offset is its high watermark), looking every
// pollEvery, for at most bound. It returns how long it waited, or an
// error naming the partitions still unstable.
func (c *cluster) waitStable(ctx context.Context, bound time.Duration, topics ...string) (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	t := time.NewTicker(c.pollEvery)
	defer t.Stop()
	var last []string // the partitions the last answer named
	for {
		open, err := c.unstable(ctx, topics...)
		if err == nil && len(open) == 0 {
			return time.Since(start), nil
		}
		if err == nil {
			last = open
		}
		select {
		case <-ctx.Done():
			why := strings.Join(last, "; ")
			if last == nil {
				why = err.Error()
			}
			return time.Since(start), fmt.Errorf("transactions still open %v after the last process stopped (%v): %s",
				time.Since(start).Round(time.Millisecond), context.Cause(ctx), why)
		case <-t.C:
		}
	}
}

// txnState is what the broker says of one transactional id: its state
// while a transaction is open ("Ongoing"; on Apache Kafka also
// "PrepareAbort", "PrepareCommit" or "PrepareEpochFence" while its end
// is being written: its markers are not all written yet), "" when there
// is none, and the partitions the open transaction wrote to.
type txnState struct {
	state      string
	partitions map[string][]int32
}

func (t txnState) String() string {
	if t.state == "" {
		return "no transaction open"
	}
	var parts []string
	for _, topic := range slices.Sorted(maps.Keys(t.partitions)) {
		ps := slices.Clone(t.partitions[topic])
		slices.Sort(ps)
		parts = append(parts, fmt.Sprintf("%s %v", topic, ps))
	}
	return fmt.Sprintf("transaction %s on %s", t.state, strings.Join(parts, ", "))
}

// openTxnStates are the transaction states of DescribeTransactions in
// which a transaction holds its partitions' last stable offset back.
var openTxnStates = []string{"Ongoing", "PrepareAbort", "PrepareCommit", "PrepareEpochFence"}

// transaction describes the transaction of id (DescribeTransactions).
func (c *cluster) transaction(ctx context.Context, id string) (txnState, error) {
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp, err := req.RequestWith(ctx, c.admin)
	if err != nil {
		return txnState{}, fmt.Errorf("describe transaction %q: %w", id, err)
	}
	if len(resp.TransactionStates) != 1 {
		return txnState{}, fmt.Errorf("describe transaction %q: %d states in the answer", id, len(resp.TransactionStates))
	}
	st := resp.TransactionStates[0]
	if err := kerr.ErrorForCode(st.ErrorCode); err != nil {
		return txnState{}, fmt.Errorf("describe transaction %q: %w", id, err)
	}
	out := txnState{partitions: map[string][]int32{}}
	if slices.Contains(openTxnStates, st.State) {
		out.state = st.State
	}
	for _, t := range st.Topics {
		out.partitions[t.Topic] = append(out.partitions[t.Topic], t.Partitions...)
	}
	return out, nil
}
