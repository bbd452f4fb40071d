package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// admin is the parent's view of the broker: topics, commits and end
// offsets through franz-go's admin client, and a reader of output topics.
type admin struct {
	addrs []string
	cl    *kgo.Client
	adm   *kadm.Client
}

func newAdmin(addr string) (*admin, error) {
	addrs := strings.Split(addr, ",")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		return nil, err
	}
	return &admin{addrs: addrs, cl: cl, adm: kadm.NewClient(cl)}, nil
}

func (a *admin) close() { a.cl.Close() }

// committed returns group's committed offsets for topic, by partition.
func (a *admin) committed(ctx context.Context, group, topic string) (map[int32]int64, error) {
	resp, err := a.adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("fetch the offsets of group %s: %w", group, err)
	}
	offs := partitionOffsets{out: map[int32]int64{}}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic {
			offs.add(o.Partition, o.At, o.Err, fmt.Sprintf("group %s, %s[%d]", group, topic, o.Partition))
		}
	})
	return offs.result()
}

// endOffsets returns the end offset (high watermark) of every partition
// of topic.
func (a *admin) endOffsets(ctx context.Context, topic string) (map[int32]int64, error) {
	listed, err := a.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("list the end offsets of %s: %w", topic, err)
	}
	offs := partitionOffsets{out: map[int32]int64{}}
	listed.Each(func(o kadm.ListedOffset) {
		offs.add(o.Partition, o.Offset, o.Err, fmt.Sprintf("%s[%d]", topic, o.Partition))
	})
	return offs.result()
}

// partitionOffsets gathers the offsets of a topic's partitions from an
// admin answer, and the errors of the partitions that have none.
type partitionOffsets struct {
	out  map[int32]int64
	errs []error
}

// add records partition's offset, or its error err, which what names.
func (p *partitionOffsets) add(partition int32, offset int64, err error, what string) {
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("%s: %w", what, err))
		return
	}
	p.out[partition] = offset
}

// result returns the offsets by partition and the errors joined.
func (p *partitionOffsets) result() (map[int32]int64, error) {
	return p.out, errors.Join(p.errs...)
}

// createTopic creates topic with the given partitions and returns once
// every partition has a leader: Apache Kafka answers CreateTopics when
// the controller committed the topic, before the broker leads its
// partitions, and a producer that starts at once would first meet
// errors it has to retry.
func (a *admin) createTopic(ctx context.Context, topic string, partitions int) error {
	resp, err := a.adm.CreateTopic(ctx, int32(partitions), 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		led, err := a.led(ctx, topic)
		if err == nil && led == partitions {
			led, err = a.served(ctx, topic)
		}
		if err == nil && led == partitions {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("create topic %s: %d of %d partitions have a leader that serves them (%v): %w", topic, led, partitions, err, ctx.Err())
		case <-tick.C:
		}
	}
}

// led returns how many partitions of topic have a leader.
func (a *admin) led(ctx context.Context, topic string) (int, error) {
	md, err := a.adm.Metadata(ctx, topic)
	if err != nil {
		return 0, err
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return 0, errors.Join(errors.New("not in the metadata yet"), td.Err)
	}
	n := 0
	for _, p := range td.Partitions {
		if p.Err == nil && p.Leader >= 0 {
			n++
		}
	}
	return n, nil
}

// served returns how many partitions of topic their leader serves: a
// leader in the metadata may not be ready yet and answer a write with
// NOT_LEADER_FOR_PARTITION, which holds a kgo producer's records of that
// partition until its next metadata request (up to its
// kgo.MetadataMinAge later), so a run into a topic created a moment
// before would measure that wait. ListOffsets is answered by the leader
// as a write is.
func (a *admin) served(ctx context.Context, topic string) (int, error) {
	listed, err := a.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	n := 0
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			n++
		}
	})
	return n, nil
}

// deleteTopic deletes topic (the output of a consume → produce run, so
// that the broker does not keep every run's copy in memory).
func (a *admin) deleteTopic(ctx context.Context, topic string) error {
	resp, err := a.adm.DeleteTopic(ctx, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("delete topic %s: %w", topic, err)
	}
	return nil
}

// readOutput reads every record of an output topic up to its end offsets
// and records, in a tracker of the input layout, the input record each
// one was produced from (by the "p/o;" header of its value): the result
// says whether the output holds each input record exactly once, intact.
func (a *admin) readOutput(ctx context.Context, topic string, l layout) ([]PartStats, error) {
	end, err := a.endOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	start := make(map[int32]kgo.Offset)
	var total int64
	for p, e := range end {
		if e > 0 {
			start[p] = kgo.NewOffset().AtStart()
			total += e
		}
	}
	tr := newTracker(l)
	if total == 0 {
		return tr.stats(), nil
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(a.addrs...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}),
		kgo.FetchMaxWait(100*time.Millisecond),
	)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var read, unparsed int64
	for read < total {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read %s: %w after %d of %d records", topic, err, read, total)
		}
		if err := fetchErr(fs); err != nil {
			return nil, err
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= end[r.Partition] {
				return
			}
			read++
			p, o, ok := parseHeader(r.Value)
			if !ok || !tr.record(p, o, valueHash(r.Value)) {
				unparsed++
			}
		})
	}
	if unparsed > 0 {
		return tr.stats(), fmt.Errorf("%s: %d records not produced from an input record", topic, unparsed)
	}
	return tr.stats(), nil
}
