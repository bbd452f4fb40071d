package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluice-go/sluice/internal/pgtest"
	"github.com/sluice-go/sluice/sink/postgres"
)

// The PostgreSQL cases write every record of the input topic as one row
// of pgTable, (partition, offset, value), in batches of batchSize rows,
// one transaction each. The benchmark starts its own server
// (internal/pgtest) in a database of its own; before each run the parent
// drops and recreates the table and the offsets table, and after it
// reads the table back: it must hold every record's row exactly once,
// with the record's value.

// pgTable is the table the PostgreSQL cases write, and pgColumns its
// columns, in the order of a row.
const pgTable = "bench_rows"

var pgColumns = []string{"kafka_partition", "kafka_offset", "value"}

// pgDatabase is the database the benchmark creates on its server.
const pgDatabase = "bench"

// pgTableDDL creates pgTable: no index (COPY appends to the heap only)
// and no autovacuum (which would run after a run's inserts, during the
// next run, and be counted there).
const pgTableDDL = `CREATE TABLE ` + pgTable + ` (
	kafka_partition integer NOT NULL,
	kafka_offset    bigint  NOT NULL,
	value           bytea   NOT NULL
) WITH (autovacuum_enabled = false)`

// pgServer is the benchmark's PostgreSQL server and the parent's
// connection to its database.
type pgServer struct {
	srv  *pgtest.Server
	stop func() error
	dsn  string // of pgDatabase
	conn *pgx.Conn
}

// startPostgres starts a server (pgtest.StartMain), creates pgDatabase
// and connects to it. An error wraps pgtest.ErrNotInstalled when
// PostgreSQL is not installed.
func startPostgres(ctx context.Context) (*pgServer, error) {
	srv, stop, err := pgtest.StartMain()
	if err != nil {
		return nil, fmt.Errorf("the PostgreSQL cases need a PostgreSQL server: %w", err)
	}
	pg := &pgServer{srv: srv, stop: stop, dsn: srv.DSN(pgDatabase)}
	if err := pg.createDatabase(ctx); err != nil {
		return nil, errors.Join(err, stop())
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if pg.conn, err = pgx.Connect(cctx, pg.dsn); err != nil {
		return nil, errors.Join(fmt.Errorf("connect to %s: %w", pg.dsn, err), stop())
	}
	return pg, nil
}

func (pg *pgServer) createDatabase(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.srv.DSN("postgres"))
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL at %s: %w", pg.srv.Addr(), err)
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgDatabase)
	return errors.Join(err, conn.Close(ctx))
}

// close closes the connection, stops the server and removes its data.
func (pg *pgServer) close() error {
	err := pg.conn.Close(context.Background())
	return errors.Join(err, pg.stop())
}

// version is the server's version string.
func (pg *pgServer) version(ctx context.Context) string {
	var v string
	if err := pg.conn.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		return "unknown version: " + err.Error()
	}
	return v
}

// cpu is the server's CPU time so far: its postmaster's process tree and
// the backends that ended.
func (pg *pgServer) cpu() (time.Duration, error) {
	pid := pg.srv.PID()
	if pid == 0 {
		return 0, errors.New("the PostgreSQL server is not running")
	}
	return serverCPU(pid)
}

// reset drops and recreates pgTable and the offsets table, then
// checkpoints, so that a run starts on empty tables and writes no
// buffers of the run before it.
func (pg *pgServer) reset(ctx context.Context) error {
	for _, sql := range []string{
		"DROP TABLE IF EXISTS " + pgTable + ", " + postgres.DefaultOffsetsTable,
		pgTableDDL,
		postgres.OffsetsDDL(""),
		"CHECKPOINT",
	} {
		if _, err := pg.conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("reset the PostgreSQL tables: %s: %w", firstLine(sql), err)
		}
	}
	return nil
}

// readTable reads pgTable back into a tracker of layout l: each row is
// recorded at its (partition, offset) with the hash of its value, so
// checkStats says whether the table holds every record of the topic
// exactly once, intact. A row whose value was not made for its partition
// and offset (the "p/o;" header), or whose partition is outside the
// layout, is an error.
func (pg *pgServer) readTable(ctx context.Context, l layout) ([]PartStats, error) {
	rows, err := pg.conn.Query(ctx, "SELECT kafka_partition, kafka_offset, value FROM "+pgTable)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", pgTable, err)
	}
	tr := newTracker(l)
	var p int32
	var o int64
	var v []byte
	var misplaced, outside int64
	_, err = pgx.ForEachRow(rows, []any{&p, &o, &v}, func() error {
		if hp, ho, ok := parseHeader(v); !ok || hp != p || ho != o {
			misplaced++
		}
		if !tr.record(p, o, valueHash(v)) {
			outside++
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", pgTable, err)
	}
	var errs []error
	if misplaced > 0 {
		errs = append(errs, fmt.Errorf("%d rows hold a value made for another record", misplaced))
	}
	if outside > 0 {
		errs = append(errs, fmt.Errorf("%d rows of partitions outside the topic", outside))
	}
	return tr.stats(), errors.Join(errs...)
}

// checkTable checks that pgTable holds every record of layout l exactly
// once with its value (want: l.expectedHashes()).
func (pg *pgServer) checkTable(ctx context.Context, l layout, want []uint64) error {
	got, err := pg.readTable(ctx, l)
	if err == nil {
		err = checkStats(l, want, got)
	}
	if err != nil {
		return fmt.Errorf("table %s: %w", pgTable, err)
	}
	return nil
}

// checkPositions checks the exactly-once positions the Writer stored for
// group and topic: one row per partition, resuming at the partition's
// end, its last record written, no refused offset.
func (pg *pgServer) checkPositions(ctx context.Context, l layout, group, topic string) error {
	rows, err := pg.conn.Query(ctx, "SELECT partition, next_offset, written_offset, cardinality(invalid_offsets) FROM "+
		postgres.DefaultOffsetsTable+" WHERE consumer_group = $1 AND topic = $2", group, topic)
	if err != nil {
		return fmt.Errorf("read %s: %w", postgres.DefaultOffsetsTable, err)
	}
	var p int32
	var next, written int64
	var invalid int
	seen := map[int32]bool{}
	var errs []error
	_, err = pgx.ForEachRow(rows, []any{&p, &next, &written, &invalid}, func() error {
		seen[p] = true
		if p < 0 || int(p) >= l.partitions {
			errs = append(errs, fmt.Errorf("partition %d: a position of a partition outside the topic", p))
			return nil
		}
		end := l.count(int(p))
		if next != end || written != end-1 || invalid != 0 {
			errs = append(errs, fmt.Errorf("partition %d: next %d, written %d, %d refused offsets; want %d, %d, none", p, next, written, invalid, end, end-1))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read %s: %w", postgres.DefaultOffsetsTable, err)
	}
	for p := range l.partitions {
		if !seen[int32(p)] && l.count(p) > 0 {
			errs = append(errs, fmt.Errorf("partition %d: no position stored", p))
		}
	}
	if len(errs) > maxProblems {
		errs = errs[:maxProblems]
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("positions in %s: %w", postgres.DefaultOffsetsTable, err)
	}
	return nil
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
