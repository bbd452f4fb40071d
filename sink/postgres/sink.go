package postgres

import (
	"errors"

	"github.com/sluice-go/sluice/sink/txsink"
)

// New returns a sink writing Rows into cfg.Table through db (a
// *pgxpool.Pool the caller configures and closes after Run returned).
// Add it to each partition's graph with the returned Writer's Write:
//
//	rows := stages.Map(in, toRow)
//	return w.Write(rows)
//
// With cfg.ExactlyOnce, also set the source's Config.OffsetStore to the
// Writer. A bad Config is reported here, naming the field.
func New(db DB, cfg Config) (*txsink.Writer[Row], error) {
	if db == nil {
		return nil, errors.New("postgres: db is nil")
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	w := txsink.New[Row](newStore(db, &cfg), txsink.Options[Row]{
		Name:        cfg.Name,
		ExactlyOnce: cfg.ExactlyOnce,
		BatchSize:   cfg.BatchSize,
		BatchBytes:  cfg.BatchBytes,
		Weigh:       weigh(cfg.BatchBytes),
		Linger:      cfg.Linger,
		Logger:      cfg.Logger,
	})
	return w, nil
}

// weigh estimates a row's size in bytes for Config.BatchBytes.
func weigh(batchBytes int) func(Row) int {
	if batchBytes == 0 {
		return nil
	}
	return func(r Row) int {
		n := 0
		for _, v := range r {
			switch v := v.(type) {
			case string:
				n += len(v)
			case []byte:
				n += len(v)
			default:
				n += 8
			}
		}
		return n
	}
}
