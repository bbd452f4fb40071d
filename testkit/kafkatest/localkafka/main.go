// Command localkafka runs Apache Kafka on this machine for trying Sluice
// against a real broker, with the same helper the tests use: it resolves
// the broker's jars with Maven (once; cached), starts a KRaft cluster on
// loopback, creates the topics asked for, prints the bootstrap address and
// runs until interrupted (Ctrl-C or SIGTERM), then stops the broker and
// deletes its data.
//
//	go run ./testkit/kafkatest/localkafka -topics events:8,events-enriched:8,events-dlq:1
//	go run ./cmd/example --brokers 127.0.0.1:PORT --messages 100000
//
// It needs Java 17 or later and Maven. The broker settings suit a laptop
// and tests (replication factor 1 on one node, short group sessions), not
// production.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/sluice-go/sluice/testkit/kafkatest"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "localkafka:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("localkafka", flag.ContinueOnError)
	topics := fs.String("topics", "events:8,events-enriched:8,events-dlq:1", "topics to create, as name:partitions, comma separated (empty for none)")
	nodes := fs.Int("nodes", 1, "broker nodes (each also a KRaft controller)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	specs, err := parseTopics(*topics)
	if err != nil {
		return err
	}
	if *nodes < 1 {
		return fmt.Errorf("-nodes=%d: need at least one node", *nodes)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := []kafkatest.BrokerOption{kafkatest.WithNodes(*nodes)}
	for _, s := range specs {
		opts = append(opts, kafkatest.WithTopic(s.name, s.partitions))
	}
	fmt.Fprintf(out, "starting Apache Kafka %s (%d node(s))...\n", kafkatest.ApacheKafkaVersion, *nodes)
	b, err := kafkatest.StartApache(ctx, opts...)
	if err != nil {
		return err
	}
	defer b.Close()
	fmt.Fprintf(out, "Apache Kafka %s is up; bootstrap servers: %s\n", kafkatest.ApacheKafkaVersion, b.Addr())
	for _, s := range specs {
		fmt.Fprintf(out, "  topic %s: %d partitions\n", s.name, s.partitions)
	}
	fmt.Fprintf(out, "try: go run ./cmd/example --brokers %s\nCtrl-C stops the broker and deletes its data.\n", b.Addr())
	<-ctx.Done()
	fmt.Fprintln(out, "stopping")
	return nil
}

type topicSpec struct {
	name       string
	partitions int32
}

// parseTopics reads "name:partitions,...".
func parseTopics(s string) ([]topicSpec, error) {
	var out []topicSpec
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, item := range strings.Split(s, ",") {
		name, n, ok := strings.Cut(strings.TrimSpace(item), ":")
		if !ok || name == "" {
			return nil, fmt.Errorf("-topics: %q is not name:partitions", item)
		}
		p, err := strconv.ParseInt(n, 10, 32)
		if err != nil || p < 1 {
			return nil, fmt.Errorf("-topics: %q: partitions must be a positive number", item)
		}
		out = append(out, topicSpec{name, int32(p)})
	}
	return out, nil
}
