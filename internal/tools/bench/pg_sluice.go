package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink/postgres"
	"github.com/sluice-go/sluice/stages"
)

// sluicePG is a Sluice PostgreSQL case: each partition's graph is Map
// (record the input, make its row) → the sink/postgres Writer's Write, on
// a pgxpool.Pool with pgxpool's defaults, batches of batchSize rows and
// the default Linger. With eos the Writer is exactly-once and the
// source's Config.OffsetStore; otherwise at least once.
func sluicePG(src newSource, eos bool) caseFunc {
	return func(ctx context.Context, cfg runConfig, tr *tracker, w *window) error {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		pool, err := pgxpool.New(pctx, cfg.pg)
		if err == nil {
			err = pool.Ping(pctx)
		}
		cancel()
		if err != nil {
			if pool != nil {
				pool.Close()
			}
			return fmt.Errorf("connect to PostgreSQL: %w", err)
		}
		defer pool.Close()
		sink, err := postgres.New(pool, postgres.Config{
			Table:       pgTable,
			Columns:     pgColumns,
			ExactlyOnce: eos,
			BatchSize:   batchSize,
		})
		if err != nil {
			return err
		}
		if eos {
			cfg.offsetStore = sink
		}
		return runSluice(ctx, cfg, src, w, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			rows := stages.Map(in, func(_ context.Context, r sluice.Record) (postgres.Row, error) {
				return postgres.Row{r.Partition, r.Offset, r.Value}, recordOrFail(tr, r.Partition, r.Offset, valueHash(r.Value))
			})
			return sink.Write(rows)
		})
	}
}
