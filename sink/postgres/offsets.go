package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/sink/txsink"
)

// OffsetsDDL returns the statement that creates the offsets table named
// table (DefaultOffsetsTable when empty), for users who create it
// themselves (Config.CreateOffsetsTable false). One row per partition of
// each consumer group:
//
//   - epoch: the owner epoch; each claim raises it, and a write with an
//     older one is refused (fencing);
//   - next_offset: where the partition resumes (-1: nothing stored);
//   - written_offset: the newest offset whose row was written (-1: none);
//   - invalid_offsets: offsets from next_offset to written_offset whose
//     rows the table refused: they are tried again on resume.
func OffsetsDDL(table string) string {
	if table == "" {
		table = DefaultOffsetsTable
	}
	return fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	consumer_group  text     NOT NULL,
	topic           text     NOT NULL,
	partition       integer  NOT NULL,
	epoch           bigint   NOT NULL,
	next_offset     bigint   NOT NULL,
	written_offset  bigint   NOT NULL,
	invalid_offsets bigint[] NOT NULL DEFAULT '{}',
	updated_at      timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (consumer_group, topic, partition)
)`, ident(table).Sanitize())
}

// offsets are the statements on the offsets table.
type offsets struct {
	name    string      // Config.OffsetsTable
	table   string      // sanitized
	create  string      // OffsetsDDL, when the sink creates the table
	created atomic.Bool // the table was found or created
}

func newOffsets(c *Config) *offsets {
	o := &offsets{name: c.OffsetsTable, table: ident(c.OffsetsTable).Sanitize()}
	if c.CreateOffsetsTable {
		o.create = OffsetsDDL(c.OffsetsTable)
	}
	return o
}

// ensure creates the table in tx if the sink creates it and it does not
// exist yet.
func (o *offsets) ensure(ctx context.Context, tx pgx.Tx) error {
	if o.create == "" || o.created.Load() {
		return nil
	}
	// Members starting together would race to create the table (one of
	// them failing on the catalog's unique keys): the creation is
	// serialized by a lock held until this transaction ends.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, "sluice offsets table "+o.table); err != nil {
		return fmt.Errorf("lock the creation of offsets table %s: %w", o.table, err)
	}
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, o.table).Scan(&exists); err != nil {
		return fmt.Errorf("look up offsets table %s: %w", o.table, err)
	}
	if exists {
		return nil
	}
	if _, err := tx.Exec(ctx, o.create); err != nil {
		return fmt.Errorf("create offsets table %s: %w", o.table, err)
	}
	return nil
}

// missing reports whether err says the offsets table does not exist.
func missing(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42P01"
}

// classify is classifyNoValue for a statement on the offsets table, with
// the way out when the table is missing and the sink does not create
// it.
func (o *offsets) classify(err error) error {
	if o.create == "" && missing(err) {
		return sluice.Permanent(fmt.Errorf("postgres: the offsets table %s does not exist: create it with the statement postgres.OffsetsDDL(%q) returns, or set Config.CreateOffsetsTable (%w)", o.table, o.name, err))
	}
	return classifyNoValue(err)
}

// claim raises the owner epoch of each partition of tps in one
// transaction, creating the rows that do not exist, and returns the
// positions after the raise. Partitions are locked in a fixed order, so
// that two members claiming overlapping sets cannot deadlock.
func (o *offsets) claim(ctx context.Context, db beginner, group string, tps []sluice.TopicPartition) (map[sluice.TopicPartition]txsink.Position, error) {
	sorted := slices.Clone(tps)
	slices.SortFunc(sorted, func(a, b sluice.TopicPartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
	out := make(map[sluice.TopicPartition]txsink.Position, len(tps))
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if err := o.ensure(ctx, tx); err != nil {
			return err
		}
		q := `INSERT INTO ` + o.table + ` AS t (consumer_group, topic, partition, epoch, next_offset, written_offset)
VALUES ($1, $2, $3, 1, -1, -1)
ON CONFLICT (consumer_group, topic, partition) DO UPDATE SET epoch = t.epoch + 1, updated_at = now()
RETURNING epoch, next_offset, written_offset, invalid_offsets`
		for _, tp := range sorted {
			var p txsink.Position
			if err := tx.QueryRow(ctx, q, group, tp.Topic, tp.Partition).Scan(&p.Epoch, &p.Next, &p.Written, &p.Invalid); err != nil {
				return fmt.Errorf("claim %s[%d] in %s: %w", tp.Topic, tp.Partition, o.table, err)
			}
			out[tp] = p
		}
		return nil
	})
	var pe *pgconn.PgError
	switch {
	case err == nil:
		o.created.Store(true)
		return out, nil
	case o.create != "" && errors.As(err, &pe) && (pe.Code == "23505" || pe.Code == "42710" || pe.Code == "42P07"):
		// Another session created the table at the same time (one that
		// does not take the creation lock): retried.
		return nil, err
	}
	return nil, o.classify(err)
}

// read returns the stored position of tp, waiting for a transaction
// that stored it to end: a locking read (FOR SHARE), which needs the
// UPDATE privilege the sink has anyway and, as it marks the row, commits
// like a write (with synchronous replication, it waits for the standby).
// Before the sink created the table there is none.
func (o *offsets) read(ctx context.Context, db querier, group string, tp sluice.TopicPartition) (txsink.Position, bool, error) {
	var p txsink.Position
	err := db.QueryRow(ctx, `SELECT epoch, next_offset, written_offset, invalid_offsets FROM `+o.table+
		` WHERE consumer_group = $1 AND topic = $2 AND partition = $3 FOR SHARE`, group, tp.Topic, tp.Partition).
		Scan(&p.Epoch, &p.Next, &p.Written, &p.Invalid)
	if errors.Is(err, pgx.ErrNoRows) || (err != nil && o.create != "" && missing(err)) {
		return txsink.Position{}, false, nil
	}
	if err != nil {
		return p, false, o.classify(fmt.Errorf("read position of %s[%d] from %s: %w", tp.Topic, tp.Partition, o.table, err))
	}
	return p, true, nil
}

// store writes p as tp's position if p.Epoch is still the owner epoch;
// the row stays locked until tx ends, so a claim waits for it.
func (o *offsets) store(ctx context.Context, tx pgx.Tx, group string, tp sluice.TopicPartition, p txsink.Position) error {
	inv := p.Invalid
	if inv == nil {
		inv = []int64{}
	}
	tag, err := tx.Exec(ctx, `UPDATE `+o.table+` SET next_offset = $5, written_offset = $6, invalid_offsets = $7, updated_at = now()
WHERE consumer_group = $1 AND topic = $2 AND partition = $3 AND epoch = $4`,
		group, tp.Topic, tp.Partition, p.Epoch, p.Next, p.Written, inv)
	if err != nil {
		return o.classify(fmt.Errorf("store position of %s[%d] in %s: %w", tp.Topic, tp.Partition, o.table, err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %s[%d] in %s, epoch %d", txsink.ErrFenced, tp.Topic, tp.Partition, o.table, p.Epoch)
	}
	return nil
}
