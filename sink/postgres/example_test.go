package postgres_test

import (
	"context"
	"encoding/json"
	"log"
	"os"
	"os/signal"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink/postgres"
	"github.com/sluice-go/sluice/stages"
)

// Page views go from a topic into a table, exactly once: each batch of
// rows commits with its partition's position in the offsets table, and
// the Writer is the source's offset store, so a restarted or rebalanced
// consumer resumes where the table says. Records that do not decode are
// dead-lettered. (It needs a database and a broker: it is compiled, not
// run. source.Config has the same OffsetStore field as franz.Config.)
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	pool, err := pgxpool.New(ctx, "postgres://app@db.example/analytics")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close() // after Run returned

	w, err := postgres.New(pool, postgres.Config{
		Table:              "page_views",
		Columns:            []string{"user_id", "url", "seen_at"},
		ExactlyOnce:        true,
		CreateOffsetsTable: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	src, err := franz.NewSource(franz.Config{
		GroupConfig: sluice.GroupConfig{
			Brokers:     []string{"kafka.example:9092"},
			Group:       "page-views-to-postgres",
			Topics:      []string{"page-views"},
			OffsetStore: w,
		},
	})
	if err != nil {
		log.Fatal(err)
	}

	type view struct {
		User string `json:"user"`
		URL  string `json:"url"`
	}
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		rows := stages.Map(in, func(_ context.Context, r sluice.Record) (postgres.Row, error) {
			var v view
			if err := json.Unmarshal(r.Value, &v); err != nil {
				return nil, sluice.Invalid(err)
			}
			return postgres.Row{v.User, v.URL, r.Timestamp}, nil
		})
		return w.Write(rows)
	}
	deadLetters := func(_ context.Context, d sluice.DeadLetter) error {
		log.Printf("dead letter: %s[%d]@%d: %v", d.Record.Topic, d.Record.Partition, d.Record.Offset, d.Err)
		return nil
	}
	if err := pipeline.Run(ctx, src, build, pipeline.WithDeadLetter(deadLetters)); err != nil {
		log.Fatal(err)
	}
}
