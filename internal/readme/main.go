// Command readme is the consumer of the README's "A typical consumer"
// section, compiled: the code between the markers below is the README's
// code block, verbatim (TestREADMEConsumerIsThisCode fails when they
// differ), and the rest is what the README leaves to the reader.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink/confluent"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/stages"
)

// BEGIN README
func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := run(logger); err != nil {
		logger.Error("consumer stopped", "err", err)
		os.Exit(1) // a failed Run must not look like a clean exit
	}
}

// run consumes until SIGINT or SIGTERM (how Kubernetes stops a pod), then
// drains, commits and returns nil; otherwise its error says what stopped
// it: a *sluice.StageError, *sluice.BuildError, ... (pipeline.Run
// lists them all).
func run(logger *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	brokers := []string{"localhost:9092"}
	group := sluice.GroupConfig{Brokers: brokers, Group: "billing", Topics: []string{"orders"}, Logger: logger}
	src, err := source.NewSource(source.Config{GroupConfig: group}) // or franz.NewSource(franz.Config{GroupConfig: group})
	if err != nil {
		return err
	}
	dlq, err := confluent.NewProducer(confluent.ProducerConfig{Brokers: brokers, Logger: logger})
	if err != nil {
		return err
	}
	err = pipeline.Run(ctx, src, build,
		pipeline.WithDeadLetter(dlq.DeadLetter("orders-dlq")),
		pipeline.WithLogger(logger))
	return errors.Join(err, dlq.Close()) // Close once Run returned
}

// build wires the graph of one partition; Run calls it for every partition it gets.
func build(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
	orders := stages.Map(in, decode)
	// Per partition: 16 calls at once, one at a time per customer (for limits
	// across all partitions: stages.NewLimiter, stages.NewKeyLock).
	charged := stages.PoolByKey(orders, 16,
		func(o Order) string { return o.Customer }, charge)
	return stages.Each(charged, save) // side effects: make them idempotent
}

func decode(_ context.Context, r sluice.Record) (Order, error) {
	var o Order
	if err := json.Unmarshal(r.Value, &o); err != nil {
		return o, sluice.Invalid(err) // bad data: to the dead-letter destination
	}
	return o, nil
}

// END README

// Order is an order as the input topic carries it (JSON).
type Order struct {
	ID       string
	Customer string
	Amount   int64
}

// Receipt is what charging an order returns.
type Receipt struct {
	Order string
}

// charge stands for the call to the payment service.
func charge(_ context.Context, o Order) (Receipt, error) { return Receipt{Order: o.ID}, nil }

// save stands for the idempotent write of a receipt.
func save(context.Context, Receipt) error { return nil }
