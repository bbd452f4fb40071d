package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// brokerReady is the line the broker child prints once its topics are
// filled, followed by the bootstrap address.
const brokerReady = "bench-broker: ready "

// topicSpec is one input topic the broker child creates and fills.
type topicSpec struct {
	name string
	l    layout
}

// String is the -topic flag's form: name:partitions.
func (t topicSpec) String() string { return fmt.Sprintf("%s:%d", t.name, t.l.partitions) }

// brokerChild is the "broker" mode: it starts an embedded broker, creates
// and fills every -topic with -records records of -value bytes, prints
// brokerReady and the address, and serves until stdin is closed (the
// parent exiting closes it too).
func brokerChild(args []string) int {
	fs := flag.NewFlagSet("bench broker", flag.ContinueOnError)
	records := fs.Int("records", 0, "records per topic")
	value := fs.Int("value", 0, "value bytes per record")
	var topics []topicSpec
	fs.Func("topic", "name:partitions of an input topic (repeatable)", func(v string) error {
		name, parts, ok := strings.Cut(v, ":")
		n, err := strconv.Atoi(parts)
		if !ok || name == "" || err != nil || n <= 0 {
			return fmt.Errorf("%q: want name:partitions", v)
		}
		topics = append(topics, topicSpec{name: name, l: layout{partitions: n}})
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *records <= 0 || *value < minValueSize || len(topics) == 0 {
		fmt.Fprintf(os.Stderr, "bench broker: need -records > 0, -value >= %d and a -topic\n", minValueSize)
		return 2
	}
	var opts []kafkatest.BrokerOption
	for i := range topics {
		topics[i].l.records, topics[i].l.valueSize = *records, *value
		opts = append(opts, kafkatest.WithTopic(topics[i].name, int32(topics[i].l.partitions)))
	}
	b, err := kafkatest.StartBroker(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench broker:", err)
		return 1
	}
	defer b.Close()
	for _, t := range topics {
		began := time.Now()
		if err := fill(b.Addrs(), t); err != nil {
			fmt.Fprintf(os.Stderr, "bench broker: fill %s: %v\n", t.name, err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "bench broker: filled %s (%d partitions) with %d records in %v\n",
			t.name, t.l.partitions, t.l.records, time.Since(began).Round(time.Millisecond))
	}
	fmt.Println(brokerReady + b.Addr())
	_, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
	return 0
}

// fill produces the records of t's layout, all partitions interleaved,
// with franz-go directly (asynchronous, batched) and waits for every
// acknowledgement.
func fill(addrs []string, t topicSpec) error {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addrs...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedRecords(1<<17),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytes(1<<20),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var (
		mu    sync.Mutex
		first error
	)
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if first == nil {
				first = fmt.Errorf("partition %d offset %d: %w", r.Partition, r.Offset, err)
			}
			mu.Unlock()
		}
	}
	l := t.l
	for i := range l.records {
		p := int32(i % l.partitions)
		o := int64(i / l.partitions)
		cl.Produce(ctx, &kgo.Record{Topic: t.name, Partition: p, Key: keyOf(p, o), Value: valueOf(p, o, l.valueSize)}, promise)
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	if first != nil {
		return first
	}
	return errors.Join(ctx.Err())
}
