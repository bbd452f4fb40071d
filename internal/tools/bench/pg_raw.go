package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The raw PostgreSQL loops consume the topic on one goroutine and write
// what they consume on one connection: rows of any partitions, batchSize
// at a time (or fewer once the oldest has waited pgLinger, as the sink's
// Linger), each batch through COPY in one transaction; once a batch
// committed, its records' offsets are marked for the client's
// auto-commit (every second), and the loop commits them synchronously
// after the last batch. That is the hand-written at-least-once consumer
// the sink replaces.

// pgLinger is the longest a row waits for its batch, in the raw loops
// and in the sink (its default Linger).
const pgLinger = 100 * time.Millisecond

// pgBatch is a raw loop's open batch.
type pgBatch struct {
	rows  [][]any
	first time.Time // when the oldest row was added
}

// add appends the row of one record, opening the window at the first
// one and recording it in tr.
func (b *pgBatch) add(tr *tracker, w *window, p int32, o int64, v []byte) error {
	w.open()
	if !tr.record(p, o, valueHash(v)) {
		return fmt.Errorf("record of unknown partition %d", p)
	}
	if len(b.rows) == 0 {
		b.first = time.Now()
	}
	b.rows = append(b.rows, []any{p, o, v})
	return nil
}

// due reports whether the batch is to be written: full, or its oldest
// row waited pgLinger.
func (b *pgBatch) due() bool {
	return len(b.rows) >= batchSize || (len(b.rows) > 0 && time.Since(b.first) >= pgLinger)
}

// wait is how long a poll may wait before the batch is due (forever, 0,
// when it is empty).
func (b *pgBatch) wait() time.Duration {
	if len(b.rows) == 0 {
		return 0
	}
	return max(time.Millisecond, pgLinger-time.Since(b.first))
}

// write writes the batch in one transaction through COPY and empties it.
func (b *pgBatch) write(ctx context.Context, conn *pgx.Conn) error {
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		_, err := tx.CopyFrom(ctx, pgx.Identifier{pgTable}, pgColumns, pgx.CopyFromRows(b.rows))
		return err
	})
	if err != nil {
		return fmt.Errorf("copy %d rows into %s: %w", len(b.rows), pgTable, err)
	}
	clear(b.rows)
	b.rows = b.rows[:0]
	return nil
}

// connectPG opens the raw loops' connection.
func connectPG(ctx context.Context, cfg runConfig) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, cfg.pg)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	return conn, nil
}

// rawPGFranz is the raw loop on franz-go: PollRecords up to what the
// batch lacks, write the batch when it is due, mark its records for
// kgo's auto-commit (AutoCommitMarks).
func rawPGFranz(ctx context.Context, cfg runConfig, tr *tracker, w *window) error {
	conn, err := connectPG(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	cl, err := kgo.NewClient(append(rawFranzOpts(cfg, w), kgo.AutoCommitMarks())...)
	if err != nil {
		return err
	}
	defer cl.Close()
	b := pgBatch{rows: make([][]any, 0, batchSize)}
	recs := make([]*kgo.Record, 0, batchSize) // the batch's records, to mark
	target := int64(cfg.l.records)
	var n int64
	for n < target {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if d := b.wait(); d > 0 {
			pctx, cancel = context.WithTimeout(ctx, d)
		}
		fs := cl.PollRecords(pctx, batchSize-len(b.rows))
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fetchErr(fs); err != nil {
			return err
		}
		var bad error
		fs.EachRecord(func(r *kgo.Record) {
			if bad == nil {
				bad = b.add(tr, w, r.Partition, r.Offset, r.Value)
				recs = append(recs, r)
				n++
			}
		})
		if bad != nil {
			return bad
		}
		if b.due() || (n >= target && len(b.rows) > 0) {
			if err := b.write(ctx, conn); err != nil {
				return err
			}
			cl.MarkCommitRecords(recs...)
			clear(recs)
			recs = recs[:0]
		}
	}
	w.close()
	return cl.CommitMarkedOffsets(ctx)
}

// rawPGConfluent is the raw loop on confluent-kafka-go: Poll, write the
// batch when it is due, store its offsets for librdkafka's auto-commit
// (enable.auto.offset.store=false).
func rawPGConfluent(ctx context.Context, cfg runConfig, tr *tracker, w *window) error {
	conn, err := connectPG(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	c, err := subscribed(cfg, storingConsumerConfig(cfg), w)
	if err != nil {
		return err
	}
	b := pgBatch{rows: make([][]any, 0, batchSize)}
	next := make(map[int32]int64) // the batch's next offset by partition
	store := func() error {
		tps := make([]kafka.TopicPartition, 0, len(next))
		for p, o := range next {
			tps = append(tps, kafka.TopicPartition{Topic: &cfg.topic, Partition: p, Offset: kafka.Offset(o)})
		}
		clear(next)
		_, err := c.StoreOffsets(tps)
		return err
	}
	target := int64(cfg.l.records)
	var n int64
	for n < target && ctx.Err() == nil {
		timeout := pollMs
		if d := b.wait(); d > 0 {
			timeout = int(d.Milliseconds())
		}
		switch e := c.Poll(timeout).(type) {
		case *kafka.Message:
			tp := e.TopicPartition
			if err := b.add(tr, w, tp.Partition, int64(tp.Offset), e.Value); err != nil {
				return errors.Join(err, c.Close())
			}
			next[tp.Partition] = int64(tp.Offset) + 1
			n++
		case kafka.Error:
			if e.IsFatal() {
				return errors.Join(e, c.Close())
			}
		}
		if b.due() || (n >= target && len(b.rows) > 0) {
			if err := b.write(ctx, conn); err != nil {
				return errors.Join(err, c.Close())
			}
			if err := store(); err != nil {
				return errors.Join(err, c.Close())
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return errors.Join(err, c.Close())
	}
	w.close()
	return errors.Join(commitStored(c), c.Close())
}
