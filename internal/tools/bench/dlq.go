package main

import (
	"context"
	"errors"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// The dead-letter cases run Map (record the input) → Discard with the
// producer's Kafka dead-letter destination on the output topic:
// sluice-<client>-valid finds every record valid (nothing is
// dead-lettered), sluice-<client>-dlq finds every record invalid, so each
// record commits only after its dead letter was delivered. The -dlq case
// is compared with the -valid one, and its output topic must hold every
// input record exactly once.

// errBenchInvalid is the error every record of a -dlq case is invalid with.
var errBenchInvalid = errors.New("bench: every record is invalid")

// sluiceDeadLetters is a dead-letter case on one backend: every record
// invalid when invalid is set, every record valid otherwise.
func sluiceDeadLetters(src newSource, newProd newProducer, invalid bool) caseFunc {
	return func(ctx context.Context, cfg runConfig, tr *tracker, w *window) error {
		prod, err := newProd(cfg)
		if err != nil {
			return err
		}
		build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Map(in, func(_ context.Context, r sluice.Record) (sluice.Record, error) {
				if err := recordOrFail(tr, r.Partition, r.Offset, valueHash(r.Value)); err != nil {
					return r, err
				}
				if invalid {
					return r, sluice.Invalid(errBenchInvalid)
				}
				return r, nil
			}, stages.Name("decode")))
		}
		err = runSluice(ctx, cfg, src, w, build, pipeline.WithDeadLetter(prod.DeadLetter(cfg.out)))
		return errors.Join(err, prod.Close())
	}
}
