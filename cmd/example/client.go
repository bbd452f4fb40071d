package main

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/internal/demo"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/sink/confluent"
	"github.com/sluice-go/sluice/source"
)

// clients are the values of --client, the default first.
var clients = []string{"librdkafka", "franz"}

// backend is one Kafka client's source and producer: the only place the
// demo names its client. The producer is a sink.Producer whichever the
// client: the graph ends in sink.Produce with it and dead-letters to its
// DeadLetter. consume closes the producer once, after pipeline.Run
// returned.
type backend struct {
	src      sluice.Source
	producer sink.Producer
}

// newBackend builds the source and the producer of --client on brokers,
// configured by the group flags; store, when not nil, is the source's
// Config.OffsetStore. The client-independent half of the source's Config
// is built here, once, for whichever client: the switch below is the one
// place the demo chooses its client.
func newBackend(o options, brokers []string, logger *slog.Logger, store sluice.OffsetStore) (*backend, error) {
	g := sluice.GroupConfig{Brokers: brokers, Group: o.group, Topics: []string{o.input}, Logger: logger,
		CommitInterval: demo.CommitInterval, // a short demo: commit often
		OffsetStore:    store}
	switch o.client {
	case "", "librdkafka":
		return newLibrdkafkaBackend(o, g)
	case "franz":
		return newFranzBackend(o, g)
	}
	return nil, fmt.Errorf("--client=%q: want one of %s", o.client, strings.Join(clients, ", "))
}

// newLibrdkafkaBackend builds a librdkafka source of g and a confluent
// producer on the same brokers, with the flags' overrides.
func newLibrdkafkaBackend(o options, g sluice.GroupConfig) (*backend, error) {
	src, err := source.NewSource(source.Config{GroupConfig: g, Overrides: o.consumerOverrides()})
	if err != nil {
		return nil, err
	}
	return withProducer(src, func() (sink.Producer, error) {
		return newLibrdkafkaProducer(o, src, confluent.ProducerConfig{Brokers: g.Brokers, Logger: g.Logger, Overrides: o.producerOverrides()})
	})
}

// newFranzBackend builds a franz-go source of g and a franz producer on
// the same brokers, with the flags' options.
func newFranzBackend(o options, g sluice.GroupConfig) (*backend, error) {
	src, err := franz.NewSource(franz.Config{GroupConfig: g, Opts: o.franzConsumerOpts()})
	if err != nil {
		return nil, err
	}
	return withProducer(src, func() (sink.Producer, error) {
		return newFranzProducer(o, src, franz.ProducerConfig{Brokers: g.Brokers, Logger: g.Logger, Opts: o.franzClientOpts()})
	})
}

// withProducer is the backend of src and the producer newProducer
// builds, or newProducer's error. A source holds no client until it
// runs, so there is nothing of src to close on that error.
func withProducer(src sluice.Source, newProducer func() (sink.Producer, error)) (*backend, error) {
	prod, err := newProducer()
	if err != nil {
		return nil, err
	}
	return &backend{src: src, producer: prod}, nil
}

// franzConsumerOpts are the kgo options of the franz source
// (franz.Config.Opts) the flags ask for: the balancer of --group-protocol
// (KIP-848: kgo.ServerSideBalancer with the sticky balancer, which asks
// the broker for its "uniform" assignor), --session-timeout as
// kgo.SessionTimeout with heartbeats every tenth of it (as for
// librdkafka), --client-id as kgo.ClientID.
func (g groupFlags) franzConsumerOpts() []kgo.Opt {
	var opts []kgo.Opt
	switch g.protocol {
	case "", "cooperative-sticky":
		opts = append(opts, kgo.Balancers(kgo.CooperativeStickyBalancer()))
	case "range":
		opts = append(opts, kgo.Balancers(kgo.RangeBalancer()))
	case "consumer":
		opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.StickyBalancer()))
	}
	if g.sessionTimeout > 0 {
		opts = append(opts, kgo.SessionTimeout(g.sessionTimeout),
			kgo.HeartbeatInterval(max(100*time.Millisecond, g.sessionTimeout/10)))
	}
	return append(opts, g.franzClientOpts()...)
}

// franzClientOpts are the kgo options of every franz client (the source
// and the producer): --client-id.
func (g groupFlags) franzClientOpts() []kgo.Opt {
	if g.clientID == "" {
		return nil
	}
	return []kgo.Opt{kgo.ClientID(g.clientID)}
}

// validateClient checks --client.
func validateClient(client string) error {
	if client != "" && !slices.Contains(clients, client) {
		return fmt.Errorf("--client=%q: want one of %s", client, strings.Join(clients, ", "))
	}
	return nil
}
