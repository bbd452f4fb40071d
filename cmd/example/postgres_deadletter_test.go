package main

import (
	"context"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/demo"
	"github.com/sluice-go/sluice/sink/postgres"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestPostgresGracefulRestartDeadLettersOnce stops a consumer gracefully
// after the newest record of a partition was dead-lettered (after its
// last row) and starts another: with --postgres-mode exactly-once the
// new one resumes where the offsets table says, which must be past that
// record, so that its dead letter is not sent again. A graceful stop
// redoes nothing with --sink kafka.
func TestPostgresGracefulRestartDeadLettersOnce(t *testing.T) {
	eachClient(t, postgresGracefulRestartDeadLettersOnce)
}

func postgresGracefulRestartDeadLettersOnce(t *testing.T, client string) {
	srv := pgServer.Get(t)
	o := postgresOptions(client, "exactly-once", srv.CreateDatabase(t, t.Name()), 1)
	b := kafkatest.NewBroker(t, demoTopics(o)...)
	events := func(from, to int) []sluice.Record {
		var recs []sluice.Record
		for i := from; i < to; i++ {
			if !demo.IsMalformedIndex(i) {
				recs = append(recs, sluice.Record{Partition: int32(i % 8), Value: demo.Value(i)})
			}
		}
		return recs
	}
	malformed := []sluice.Record{{Partition: 1, Value: demo.Value(37)}}
	// First consumer: rows on every partition, then a record of partition
	// 1 that only has a dead letter; it commits, then stops.
	consumeBatches(t, o, b, events(0, 16), malformed)
	var next int64
	pool := srv.Pool(t, o.postgresDSN)
	if err := pool.QueryRow(context.Background(), `SELECT next_offset FROM sluice_offsets WHERE topic = $1 AND partition = 1`, o.input).
		Scan(&next); err != nil {
		t.Fatal(err)
	}
	committed := b.Committed(t, o.group, o.input)[1]
	// Second consumer: one more row on every partition.
	consumeBatches(t, o, b, events(16, 24))

	if dead := b.ReadAll(t, o.dlq); len(dead) != 1 {
		t.Fatalf("%d dead letters of the one malformed record, events[1] offset 2, want 1; when the first consumer stopped, the group "+
			"had committed %d on partition 1 and %s said next_offset %d", len(dead), committed, postgres.DefaultOffsetsTable, next)
	}
	rows := readEvents(t, pool, o.postgresTable)
	if len(rows) != 24 {
		t.Fatalf("%d events in the table, want the 24 valid ones", len(rows))
	}
	for id, rs := range rows {
		if len(rs) != 1 {
			t.Fatalf("event %s has %d rows, want 1", id, len(rs))
		}
	}
}
