package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

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
	table  string // sanitized
	create string // OffsetsDDL, when the sink creates the table
}

func newOffsets(c *Config) offsets {
	o := offsets{table: ident(c.OffsetsTable).Sanitize()}
	if c.CreateOffsetsTable {
		o.create = OffsetsDDL(c.OffsetsTable)
	}
	return o
}

// claim raises the owner epoch of each partition of tps in one
// transaction, creating the rows that do not exist, and returns the
// positions after the raise. Partitions are locked in a fixed order, so
// that two members claiming overlapping sets cannot deadlock.
func (o offsets) claim(ctx context.Context, db beginner, group string, tps []sluice.TopicPartition) (map[sluice.TopicPartition]txsink.Position, error) {
	sorted := slices.Clone(tps)
	slices.SortFunc(sorted, func(a, b sluice.TopicPartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
	out := make(map[sluice.TopicPartition]txsink.Position, len(tps))
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if o.create != "" {
			if _, err := tx.Exec(ctx, o.create); err != nil {
				return fmt.Errorf("create offsets table %s: %w", o.table, err)
			}
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
	if err != nil {
		return nil, classify(err)
	}
	return out, nil
}

// read returns the stored position of tp.
func (o offsets) read(ctx context.Context, db querier, group string, tp sluice.TopicPartition) (txsink.Position, bool, error) {
	var p txsink.Position
	err := db.QueryRow(ctx, `SELECT epoch, next_offset, written_offset, invalid_offsets FROM `+o.table+
		` WHERE consumer_group = $1 AND topic = $2 AND partition = $3`, group, tp.Topic, tp.Partition).
		Scan(&p.Epoch, &p.Next, &p.Written, &p.Invalid)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, false, nil
	}
	if err != nil {
		return p, false, classify(fmt.Errorf("read position of %s[%d] from %s: %w", tp.Topic, tp.Partition, o.table, err))
	}
	return p, true, nil
}

// store writes p as tp's position if p.Epoch is still the owner epoch;
// the row stays locked until tx ends, so a claim waits for it.
func (o offsets) store(ctx context.Context, tx pgx.Tx, group string, tp sluice.TopicPartition, p txsink.Position) error {
	inv := p.Invalid
	if inv == nil {
		inv = []int64{}
	}
	tag, err := tx.Exec(ctx, `UPDATE `+o.table+` SET next_offset = $5, written_offset = $6, invalid_offsets = $7, updated_at = now()
WHERE consumer_group = $1 AND topic = $2 AND partition = $3 AND epoch = $4`,
		group, tp.Topic, tp.Partition, p.Epoch, p.Next, p.Written, inv)
	if err != nil {
		return classify(fmt.Errorf("store position of %s[%d] in %s: %w", tp.Topic, tp.Partition, o.table, err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %s[%d] in %s, epoch %d", txsink.ErrFenced, tp.Topic, tp.Partition, o.table, p.Epoch)
	}
	return nil
}
