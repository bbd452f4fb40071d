package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice/sink"
)

// stableBound is how long, after the last process stopped, the
// transactions left open may keep a partition's last stable offset
// behind its high watermark: a SIGKILLed process's open transaction
// stays open until the broker aborts it at its transaction timeout
// (cmd/example uses the default, sink.DefaultTransactionTimeout, counted
// from the transaction's start, so before the kill), plus 5 s for kfake
// to write the abort markers on a loaded machine. Every incarnation has a
// transactional id of its own (transactionalID), so no restart aborts
// its predecessor's transaction sooner.
const stableBound = sink.DefaultTransactionTimeout + 5*time.Second

// transactionalID is cmd/example's transactional.id for the process
// whose --client-id is name (cmd/example/exactlyonce.go).
func transactionalID(name string) string { return "sluice-example-" + name }

// unstable returns, for every partition of topics whose last stable
// offset is behind its high watermark (a transaction is open there),
// "topic/partition: last stable offset L, high watermark H".
func (c *cluster) unstable(topics ...string) []string {
	var out []string
	for _, topic := range topics {
		infos := c.b.Cluster().PartitionInfos(topic)
		slices.SortFunc(infos, func(a, b *kfake.PartitionInfo) int { return int(a.Partition - b.Partition) })
		for _, pi := range infos {
			if pi.LastStableOffset < pi.HighWatermark {
				out = append(out, fmt.Sprintf("%s/%d: last stable offset %d, high watermark %d", topic, pi.Partition,
					pi.LastStableOffset, pi.HighWatermark))
			}
		}
	}
	return out
}

// waitStable waits until no transaction is open on topics (every
// partition's last stable offset is its high watermark), polling every
// pollEvery, for at most bound. It returns how long it waited, or an
// error naming the partitions still unstable.
func (c *cluster) waitStable(ctx context.Context, bound time.Duration, topics ...string) (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		open := c.unstable(topics...)
		if len(open) == 0 {
			return time.Since(start), nil
		}
		select {
		case <-ctx.Done():
			return time.Since(start), fmt.Errorf("transactions still open %v after the last process stopped (%v): %s",
				time.Since(start).Round(time.Millisecond), context.Cause(ctx), strings.Join(open, "; "))
		case <-t.C:
		}
	}
}

// txnState is what the broker says of one transactional id: its state
// ("Ongoing" while a transaction is open, "" when there is none) and the
// partitions the open transaction wrote to.
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
	if st.State == "Ongoing" {
		out.state = st.State
	}
	for _, t := range st.Topics {
		out.partitions[t.Topic] = append(out.partitions[t.Topic], t.Partitions...)
	}
	return out, nil
}
