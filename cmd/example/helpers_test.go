package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// eachClient runs test as a subtest per client, named after it.
func eachClient(t *testing.T, test func(t *testing.T, client string)) {
	for _, client := range clients {
		t.Run(client, func(t *testing.T) { test(t, client) })
	}
}

// eachClientAnd runs test as a subtest per client and value of values
// (a group protocol, a PostgreSQL mode), named "client/value".
func eachClientAnd(t *testing.T, values []string, test func(t *testing.T, client, value string)) {
	for _, client := range clients {
		for _, v := range values {
			t.Run(client+"/"+v, func(t *testing.T) { test(t, client, v) })
		}
	}
}

// checkValidate checks that o.validate accepts o when want is empty, and
// otherwise fails with an error containing want.
func checkValidate(t *testing.T, o options, want string) {
	t.Helper()
	err := o.validate()
	switch {
	case want == "" && err != nil:
		t.Fatalf("validate: %v, want nil", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Fatalf("validate: %v, want an error containing %q", err, want)
	}
}

// demoTopics are the demo's topics of o on a test broker: the input and
// output topics of 8 partitions, the dead-letter topic of 1.
func demoTopics(o options) []kafkatest.BrokerOption {
	return []kafkatest.BrokerOption{kafkatest.WithTopic(o.input, 8), kafkatest.WithTopic(o.output, 8), kafkatest.WithTopic(o.dlq, 1)}
}

// runDemoOn runs the embedded demo with o on b, fails the test if it
// fails, and returns what the demo wrote.
func runDemoOn(t *testing.T, o options, b *kafkatest.Broker) string {
	t.Helper()
	var out bytes.Buffer
	if err := runDemo(context.Background(), o, b, slog.New(slog.DiscardHandler), &out); err != nil {
		t.Fatalf("runDemo: %v\n%s", err, out.String())
	}
	return out.String()
}

// runPostgresDemo runs the embedded demo of n events to a database of its
// own on the package's PostgreSQL server, with client and mode, on a new
// broker; it returns a pool on that database, the demo's options, the
// broker and what the demo wrote.
func runPostgresDemo(t *testing.T, client, mode string, n int) (*pgxpool.Pool, options, *kafkatest.Broker, string) {
	t.Helper()
	srv := pgServer.Get(t)
	dsn := srv.CreateDatabase(t, t.Name())
	o := postgresOptions(client, mode, dsn, n)
	b := kafkatest.NewBroker(t, demoTopics(o)...)
	return srv.Pool(t, dsn), o, b, runDemoOn(t, o, b)
}
