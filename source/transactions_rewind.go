package source

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/sluice-go/sluice"
)

// Rewind implements exactlyonce.Txn: it fetches the group's committed
// offsets of tps (Committed: an OffsetFetch that, with read_committed,
// waits out offsets of a transaction still pending) and seeks the
// consumer there (SeekPartitions). A partition without a committed offset
// is seeked to OffsetInvalid, which librdkafka resolves with
// auto.offset.reset, as for a new assignment. librdkafka's seek bumps the
// partition's version barrier before it returns: messages it prefetched
// from the old position are dropped by Poll, never returned, and what the
// poll loop's core held of tps (fetched before) is dropped too.
//
// It reports no partition gone: librdkafka reads and seeks by topic name,
// and it rebalances by itself when a subscribed topic disappears, so a
// per-partition error (a deleted topic's) stops the Group instead of
// leaving the partition to a Lose that may not come.
func (t confluentTxn) Rewind(ctx context.Context, tps []sluice.TopicPartition) ([]sluice.TopicPartition, error) {
	return nil, t.rewind(ctx, tps)
}

func (t confluentTxn) rewind(ctx context.Context, tps []sluice.TopicPartition) error {
	timeout := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	if timeout <= 0 {
		return fmt.Errorf("rewinding %v: %w", tps, context.DeadlineExceeded)
	}
	committed, err := t.c.Committed(kafkaTPs(tps), int(timeout.Milliseconds()))
	if err != nil {
		return fatalTxn(fmt.Errorf("fetching the committed offsets of %v: %w", tps, err))
	}
	if err := partitionErrors("fetching the committed offset", committed); err != nil {
		return err
	}
	seek := make([]kafka.TopicPartition, len(committed))
	for i, tp := range committed {
		seek[i] = kafka.TopicPartition{Topic: tp.Topic, Partition: tp.Partition, Offset: tp.Offset, LeaderEpoch: tp.LeaderEpoch}
		if tp.Offset < 0 {
			seek[i].Offset, seek[i].LeaderEpoch = kafka.OffsetInvalid, nil // auto.offset.reset
		}
	}
	sought, err := t.c.SeekPartitions(seek)
	t.t.core.DropHeld(tps)
	if err != nil {
		return fatalTxn(fmt.Errorf("seeking %v to their committed offsets: %w", tps, err))
	}
	return partitionErrors("seeking to the committed offset", sought)
}

// partitionErrors joins the per-partition errors of a librdkafka answer,
// each naming its partition.
func partitionErrors(what string, parts []kafka.TopicPartition) error {
	var errs []error
	for _, tp := range parts {
		if tp.Error != nil {
			errs = append(errs, fmt.Errorf("%s of %s/%d: %w", what, topicOf(tp), tp.Partition, tp.Error))
		}
	}
	return errors.Join(errs...)
}
