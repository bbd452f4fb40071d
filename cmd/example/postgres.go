package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink/postgres"
	"github.com/sluice-go/sluice/sink/txsink"
	"github.com/sluice-go/sluice/stages"
)

// sinks are the values of --sink, the default first.
var sinks = []string{"kafka", "postgres"}

// postgresModes are the values of --postgres-mode, the default first.
var postgresModes = []string{"exactly-once", "at-least-once"}

// sinkFlags choose where the enriched events go: the output topic
// (kafka), or a PostgreSQL table (postgres).
type sinkFlags struct {
	// sink is --sink, one of sinks; empty means the first (kafka).
	sink string
	// postgresDSN is --postgres-dsn, the database of --sink postgres.
	postgresDSN string
	// postgresMode is --postgres-mode, one of postgresModes; empty means
	// the first (exactly-once).
	postgresMode string
	// postgresTable is --postgres-table, the table the events go to,
	// created when missing (eventsDDL).
	postgresTable string
}

// toPostgres reports whether --sink is postgres.
func (f sinkFlags) toPostgres() bool { return f.sink == "postgres" }

// postgresExactlyOnce reports whether --postgres-mode is exactly-once.
func (f sinkFlags) postgresExactlyOnce() bool {
	return f.postgresMode == "" || f.postgresMode == "exactly-once"
}

// resultsName is what the progress line and the summary call the
// results handed to the sink: produced messages or table rows.
func (f sinkFlags) resultsName() string {
	if f.toPostgres() {
		return "rows"
	}
	return "produced"
}

// validate checks the sink flags; kafkaExactlyOnce is --exactly-once
// (Kafka transactions), which only the kafka sink has.
func (f sinkFlags) validate(kafkaExactlyOnce bool) []error {
	var errs []error
	if f.sink != "" && !slices.Contains(sinks, f.sink) {
		return []error{fmt.Errorf("--sink=%q: want one of %s", f.sink, strings.Join(sinks, ", "))}
	}
	if f.postgresMode != "" && !slices.Contains(postgresModes, f.postgresMode) {
		errs = append(errs, fmt.Errorf("--postgres-mode=%q: want one of %s", f.postgresMode, strings.Join(postgresModes, ", ")))
	}
	if !f.toPostgres() {
		if f.postgresDSN != "" {
			errs = append(errs, fmt.Errorf("--postgres-dsn is set without --sink postgres"))
		}
		return errs
	}
	if strings.TrimSpace(f.postgresDSN) == "" {
		errs = append(errs, fmt.Errorf("--sink postgres needs --postgres-dsn"))
	} else if _, err := pgxpool.ParseConfig(f.postgresDSN); err != nil {
		errs = append(errs, fmt.Errorf("--postgres-dsn: %w", err))
	}
	if strings.TrimSpace(f.postgresTable) == "" {
		errs = append(errs, fmt.Errorf("--postgres-table is empty"))
	}
	if kafkaExactlyOnce {
		errs = append(errs, fmt.Errorf("--exactly-once (Kafka transactions) is for --sink kafka; --sink postgres is exactly once by its --postgres-mode"))
	}
	return errs
}

// eventColumns are the columns of the events table a row fills, in row
// order (toRow).
var eventColumns = []string{"id", "amount", "amount_cents", "user_name", "topic", "partition", "offset", "payload"}

// eventsDDL creates the events table when it does not exist: one row per
// valid event, with the input record it came from (topic, partition,
// offset) and the enriched event as payload (what --sink kafka
// produces). No unique key on id, on purpose: a duplicate write would be
// a constraint violation, which the sink dead-letters, and the duplicate
// would not show; without one, a duplicate is a second row.
func eventsDDL(table string) string {
	return fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	id           text             NOT NULL,
	amount       double precision NOT NULL,
	amount_cents bigint           NOT NULL,
	user_name    text,
	topic        text             NOT NULL,
	"partition"  integer          NOT NULL,
	"offset"     bigint           NOT NULL,
	payload      jsonb            NOT NULL,
	written_at   timestamptz      NOT NULL DEFAULT now()
)`, pgx.Identifier(strings.Split(table, ".")).Sanitize())
}

// setupTimeout bounds the connection and the table creation at start.
const setupTimeout = 30 * time.Second

// postgresSink is --sink postgres: the pool, the sink's Writer, and
// whether it is the source's offset store (exactly-once).
type postgresSink struct {
	pool        *pgxpool.Pool
	w           *txsink.Writer[postgres.Row]
	exactlyOnce bool
}

// openPostgres connects to --postgres-dsn, creates the events table if
// missing and returns the sink; close it after Run returned.
func openPostgres(ctx context.Context, f sinkFlags, logger *slog.Logger) (*postgresSink, error) {
	cfg, err := pgxpool.ParseConfig(f.postgresDSN)
	if err != nil {
		return nil, fmt.Errorf("--postgres-dsn: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("--postgres-dsn: %w", err)
	}
	if err := createEventsTable(ctx, pool, f.postgresTable); err != nil {
		pool.Close()
		return nil, err
	}
	exactlyOnce := f.postgresExactlyOnce()
	w, err := postgres.New(pool, postgres.Config{Table: f.postgresTable, Columns: eventColumns,
		ExactlyOnce: exactlyOnce, CreateOffsetsTable: exactlyOnce, Logger: logger})
	if err != nil {
		pool.Close()
		return nil, err
	}
	return &postgresSink{pool: pool, w: w, exactlyOnce: exactlyOnce}, nil
}

// createEventsTable runs eventsDDL under a transaction-scoped advisory
// lock: processes starting together would otherwise race in CREATE
// TABLE IF NOT EXISTS, and all but one could fail on the catalog's
// unique index.
func createEventsTable(ctx context.Context, pool *pgxpool.Pool, table string) error {
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, "sluice-example "+table); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, eventsDDL(table))
		return err
	})
	if err != nil {
		return fmt.Errorf("creating table %s: %w", table, err)
	}
	return nil
}

// offsetStore is the source's Config.OffsetStore: the Writer in
// exactly-once mode, else none (the group's commits decide where
// partitions resume). Nil p (--sink kafka) has none.
func (p *postgresSink) offsetStore() sluice.OffsetStore {
	if p == nil || !p.exactlyOnce {
		return nil
	}
	return p.w
}

// build is a partition's graph of --sink postgres: decode, then enrich
// into a row (Pool keeps input order, which exactly-once needs), then
// the sink. written counts the rows handed to the sink.
func (p *postgresSink) build(in pipeline.Stream[sluice.Record], workers int, written func()) pipeline.End {
	events := stages.Map(in, decode, stages.Name("decode"))
	rows := stages.Pool(events, workers, func(ctx context.Context, ev event) (postgres.Row, error) {
		r, err := toRow(ctx, ev)
		if err == nil {
			written()
		}
		return r, err
	}, stages.Name("enrich"))
	return p.w.Write(rows)
}

// close closes the pool; call it after Run returned.
func (p *postgresSink) close() { p.pool.Close() }

// toRow is ev's row of the events table (eventColumns): its fields, the
// record it came from, and the enriched event (enrich's value) as
// payload.
func toRow(ctx context.Context, ev event) (postgres.Row, error) {
	m, err := enrich(ctx, ev)
	if err != nil {
		return nil, err
	}
	return postgres.Row{ev.id, ev.amount, cents(ev.amount), ev.user, ev.topic, ev.partition, ev.offset, m.Value}, nil
}
