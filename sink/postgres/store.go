package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/sink/txsink"
)

// Row is one row of the table: the values of Config.Columns, in order,
// of any Go type pgx encodes for the column's type.
type Row = []any

// beginner and querier are what the store needs of a pgxpool.Pool (or a
// pgx.Conn).
type beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// DB is what the sink needs of its database: *pgxpool.Pool implements it.
type DB interface {
	beginner
	querier
}

// store is the txsink.Store of one table.
type store struct {
	db      DB
	table   pgx.Identifier
	cols    []string
	insert  string // INSERT ... VALUES ($1..$n) [ON CONFLICT ...] for one row
	upsert  string // the ON CONFLICT clause, or "" for COPY inserts
	offsets *offsets
}

var _ txsink.Store[Row] = (*store)(nil)

func newStore(db DB, c *Config) *store {
	s := &store{db: db, table: ident(c.Table), cols: c.Columns, offsets: newOffsets(c)}
	if len(c.Conflict) > 0 {
		update := c.Update
		if len(update) == 0 {
			for _, col := range c.Columns {
				if !slices.Contains(c.Conflict, col) {
					update = append(update, col)
				}
			}
		}
		if len(update) == 0 {
			s.upsert = " ON CONFLICT (" + quoteList(c.Conflict) + ") DO NOTHING"
		} else {
			sets := make([]string, len(update))
			for i, col := range update {
				q := pgx.Identifier{col}.Sanitize()
				sets[i] = q + " = EXCLUDED." + q
			}
			s.upsert = " ON CONFLICT (" + quoteList(c.Conflict) + ") DO UPDATE SET " + strings.Join(sets, ", ")
		}
	}
	s.insert = s.valuesStatement(1)
	return s
}

// valuesStatement is a multi-row INSERT of n rows.
func (s *store) valuesStatement(n int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO " + s.table.Sanitize() + " (" + quoteList(s.cols) + ") VALUES ")
	k := 1
	for r := 0; r < n; r++ {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for c := range s.cols {
			if c > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "$%d", k)
			k++
		}
		b.WriteByte(')')
	}
	b.WriteString(s.upsert)
	return b.String()
}

func (s *store) Claim(ctx context.Context, group string, tps []sluice.TopicPartition) (map[sluice.TopicPartition]txsink.Position, error) {
	delay := 50 * time.Millisecond
	for {
		pos, err := s.offsets.claim(ctx, s.db, group, tps)
		if err == nil || sluice.IsPermanent(err) || ctx.Err() != nil {
			return pos, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-t.C:
		}
		delay = min(2*delay, time.Second)
	}
}

func (s *store) Read(ctx context.Context, group string, tp sluice.TopicPartition) (txsink.Position, bool, error) {
	return s.offsets.read(ctx, s.db, group, tp)
}

func (s *store) Begin(ctx context.Context) (txsink.Tx[Row], error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return nil, classify(fmt.Errorf("begin a transaction on %s: %w", s.table.Sanitize(), err))
	}
	return &txn{s: s, tx: tx}, nil
}

// txn is one transaction of the store.
type txn struct {
	s         *store
	tx        pgx.Tx
	immediate bool // SET CONSTRAINTS ALL IMMEDIATE ran (WriteOne)
}

// maxParams is PostgreSQL's limit of bind parameters in one statement.
const maxParams = 65535

func (t *txn) Write(ctx context.Context, rows []Row) error {
	for _, r := range rows {
		if len(r) != len(t.s.cols) {
			return sluice.Invalid(fmt.Errorf("row has %d values for the %d columns of %s", len(r), len(t.s.cols), t.s.table.Sanitize()))
		}
	}
	if t.s.upsert == "" {
		_, err := t.tx.CopyFrom(ctx, t.s.table, t.s.cols, pgx.CopyFromRows(rows))
		if err != nil {
			return classifyBatch(ctx, fmt.Errorf("copy %d rows into %s: %w", len(rows), t.s.table.Sanitize(), err), t.tx.Conn().PgConn())
		}
		return nil
	}
	per := max(1, maxParams/len(t.s.cols))
	for len(rows) > 0 {
		n := statementRows(len(rows), per)
		args := make([]any, 0, n*len(t.s.cols))
		for _, r := range rows[:n] {
			args = append(args, r...)
		}
		if _, err := t.tx.Exec(ctx, t.s.valuesStatement(n), args...); err != nil {
			return classifyBatch(ctx, fmt.Errorf("upsert %d rows into %s: %w", n, t.s.table.Sanitize(), err), t.tx.Conn().PgConn())
		}
		rows = rows[n:]
	}
	return nil
}

func (t *txn) WriteOne(ctx context.Context, r Row) error {
	if len(r) != len(t.s.cols) {
		return sluice.Invalid(fmt.Errorf("row has %d values for the %d columns of %s", len(r), len(t.s.cols), t.s.table.Sanitize()))
	}
	if !t.immediate {
		// A deferred constraint refuses the row here, not at Commit.
		if _, err := t.tx.Exec(ctx, "SET CONSTRAINTS ALL IMMEDIATE"); err != nil {
			return classify(fmt.Errorf("check the constraints of %s at once: %w", t.s.table.Sanitize(), err))
		}
		t.immediate = true
	}
	sp, err := t.tx.Begin(ctx) // a savepoint
	if err != nil {
		return classify(fmt.Errorf("savepoint on %s: %w", t.s.table.Sanitize(), err))
	}
	if _, err := sp.Exec(ctx, t.s.insert, r...); err != nil {
		err = classifyValue(fmt.Errorf("write a row into %s: %w", t.s.table.Sanitize(), err), t.tx.Conn().PgConn())
		if rerr := sp.Rollback(ctx); rerr != nil && sluice.IsInvalid(err) {
			return classify(fmt.Errorf("roll back to the savepoint on %s: %w", t.s.table.Sanitize(), rerr))
		}
		return err
	}
	if err := sp.Commit(ctx); err != nil {
		return classify(fmt.Errorf("release the savepoint on %s: %w", t.s.table.Sanitize(), err))
	}
	return nil
}

func (t *txn) StoreOffset(ctx context.Context, group string, tp sluice.TopicPartition, p txsink.Position) error {
	return t.s.offsets.store(ctx, t.tx, group, tp, p)
}

func (t *txn) Commit(ctx context.Context) error {
	if err := t.tx.Commit(ctx); err != nil {
		return classify(fmt.Errorf("commit on %s: %w", t.s.table.Sanitize(), err))
	}
	return nil
}

func (t *txn) Rollback(ctx context.Context) error {
	err := t.tx.Rollback(ctx)
	if err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return err
	}
	return nil
}

func quoteList(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = pgx.Identifier{c}.Sanitize()
	}
	return strings.Join(q, ", ")
}

// statementRows is how many of left rows the next multi-row statement
// takes: the largest power of two not above left nor per (the most rows
// whose values fit in one statement's parameters). Every statement text
// is then one of about log2(per) sizes, so the statements pgx prepares
// and caches on each connection stay a handful, whatever sizes batches
// close at (a linger, a byte cap, a drain).
func statementRows(left, per int) int {
	n := 1
	for n*2 <= left && n*2 <= per {
		n *= 2
	}
	return n
}
