package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
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

// apacheJVMFlags are the JVM flags of the Apache Kafka broker: the server
// JIT and G1 with a heap of 1 to 2 GiB, as a throughput setup would run
// it (kafkatest's defaults stop at the client JIT with a small serial-GC
// heap, which starts fast and suits tests).
var apacheJVMFlags = []string{"-Xms1g", "-Xmx2g", "-XX:+UseG1GC"}

// brokerChild is the "broker" mode: it starts the broker -kind names,
// creates and fills every -topic with -records records of -value bytes,
// prints brokerReady and the address, and serves until stdin is closed
// (the parent exiting closes it too) or it gets SIGINT or SIGTERM. On
// Apache Kafka it stops the Java processes and removes their data before
// it exits; if it is killed instead, they get SIGKILL (kafkatest ties
// them to this process).
func brokerChild(args []string) int {
	fs := flag.NewFlagSet("bench broker", flag.ContinueOnError)
	records := fs.Int("records", 0, "records per topic")
	value := fs.Int("value", 0, "value bytes per record")
	kind := fs.String("kind", string(kafkatest.Kfake), "the broker: kfake or apache")
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
	k := kafkatest.Kind(*kind)
	if k != kafkatest.Kfake && k != kafkatest.Apache {
		fmt.Fprintf(os.Stderr, "bench broker: -kind=%q: want %s or %s\n", *kind, kafkatest.Kfake, kafkatest.Apache)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		// The parent closes stdin to stop the broker, and so does its
		// end, however it ends.
		_, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
		cancel()
	}()
	opts := []kafkatest.BrokerOption{kafkatest.WithJVMFlags(apacheJVMFlags...)}
	for i := range topics {
		topics[i].l.records, topics[i].l.valueSize = *records, *value
		opts = append(opts, kafkatest.WithTopic(topics[i].name, int32(topics[i].l.partitions)))
	}
	began := time.Now()
	b, err := kafkatest.Start(ctx, k, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench broker:", err)
		return 1
	}
	defer b.Close()
	fmt.Fprintf(os.Stderr, "bench broker: %s up at %s in %v\n", k, b.Addr(), time.Since(began).Round(time.Millisecond))
	for _, t := range topics {
		began := time.Now()
		if err := fill(ctx, b.Addrs(), t); err != nil {
			fmt.Fprintf(os.Stderr, "bench broker: fill %s: %v\n%s", t.name, err, b.LogTail(40))
			return 1
		}
		fmt.Fprintf(os.Stderr, "bench broker: filled %s (%d partitions) with %d records in %v\n",
			t.name, t.l.partitions, t.l.records, time.Since(began).Round(time.Millisecond))
	}
	fmt.Println(brokerReady + b.Addr())
	<-ctx.Done()
	return 0
}

// fill produces the records of t's layout, all partitions interleaved,
// with franz-go directly (asynchronous, batched) and waits for every
// acknowledgement.
func fill(ctx context.Context, addrs []string, t topicSpec) error {
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
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
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
