package postgres_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink/postgres"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// Names that need quoting (upper case, spaces, double quotes) for the
// schema, the table, the columns and the offsets table, exactly once, in
// both COPY and upsert modes.
func TestNamesThatNeedQuotingWork(t *testing.T) {
	for _, upsert := range []bool{false, true} {
		t.Run(map[bool]string{false: "copy", true: "upsert"}[upsert], func(t *testing.T) {
			db := newDB(t,
				`CREATE SCHEMA "My Schema"`,
				`CREATE TABLE "My Schema"."Odd ""Tab""" ("Key Col" integer PRIMARY KEY, "v""al" text)`)
			cfg := postgres.Config{
				Table:              `My Schema.Odd "Tab"`,
				Columns:            []string{"Key Col", `v"al`},
				ExactlyOnce:        true,
				OffsetsTable:       `My Schema.Off "Sets"`,
				CreateOffsetsTable: true,
				BatchSize:          4,
				Linger:             5 * time.Millisecond,
			}
			if upsert {
				cfg.Conflict = []string{"Key Col"}
			}
			m := startMember(t, db, cfg)
			m.assign(t, values(0, 10)...)
			m.finish(t, 10)
			sameInts(t, "rows", intsOf(t, db, `(SELECT "Key Col" AS n FROM "My Schema"."Odd ""Tab""") q`), seq(0, 10))
			var next int64
			must(t, db.QueryRow(context.Background(), `SELECT next_offset FROM "My Schema"."Off ""Sets"""`).Scan(&next))
			if next != 10 {
				t.Fatalf("stored next_offset %d; want 10", next)
			}
		})
	}
}

// A value pgx cannot encode deep inside a large COPY batch (the COPY is
// streaming when the encoding fails): the batch is written row by row,
// the bad row dead-lettered, every other row written once, and the
// connection is usable afterwards.
func TestEncodingFailureDeepInALargeCopyDeadLettersOnlyThatRow(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 20000 rows one by one")
	}
	db := newDB(t, rowsDDL)
	cfg := config(true)
	cfg.BatchSize = 20000
	cfg.Linger = 50 * time.Millisecond
	dl := testkit.NewDeadLetters()
	m := startMember(t, db, cfg, dl.Option(), pipeline.WithRetry(sluice.RetryPolicy{Attempts: 2}))
	const n = 20000
	vals := make([][]byte, n)
	for i := range vals {
		vals[i] = []byte(strconv.Itoa(i))
	}
	vals[15000] = []byte("chan")
	m.assign(t, vals...)
	m.fake.WaitCommitted(t, topic, 0, n)
	must(t, m.fake.Send(topic, 0, values(n, 4)...))
	m.finish(t, n+4)
	want := append(seq(0, 15000), seq(15001, n+4)...)
	sameInts(t, "rows", ints(t, db), want)
	if got := dl.Offsets(topic, 0); len(got) != 1 || got[0] != 15000 {
		t.Fatalf("dead letters at %v; want [15000]", got)
	}
}

// NULLs, jsonb, bytea, timestamptz and numeric go through COPY and
// through the row-by-row INSERT alike (a refused row in the batch sends
// it row by row).
func TestTypedValuesThroughCopyAndRowByRow(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		t.Run(map[bool]string{false: "copy", true: "row by row"}[refuse], func(t *testing.T) {
			db := newDB(t, `CREATE TABLE typed (n integer NOT NULL CHECK (n >= 0), j jsonb, b bytea, ts timestamptz, num numeric(10,2), s text)`)
			w, err := postgres.New(db, postgres.Config{Table: "typed", Columns: []string{"n", "j", "b", "ts", "num", "s"},
				ExactlyOnce: true, CreateOffsetsTable: true, BatchSize: 4, Linger: 5 * time.Millisecond})
			must(t, err)
			ts := time.Date(2024, 2, 29, 12, 34, 56, 789000000, time.UTC)
			f := testkit.NewFake()
			f.UseOffsetStore(w, group)
			dl := testkit.NewDeadLetters()
			r := testkit.Start(t, f, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				rows := stages.Map(in, func(_ context.Context, rec sluice.Record) (postgres.Row, error) {
					n, err := strconv.Atoi(string(rec.Value))
					if n == 1 {
						return postgres.Row{n, nil, nil, nil, nil, nil}, err
					}
					return postgres.Row{n, map[string]any{"k": n}, []byte{0, 1, 2}, ts, "12.34", "x"}, err
				})
				return w.Write(rows)
			}, dl.Option(), pipeline.WithRetry(sluice.RetryPolicy{Attempts: 2}))
			vs := bytesOf("0", "1", "2", "3")
			if refuse {
				vs[3] = []byte("-3")
			}
			must(t, f.Send(topic, 0, vs...))
			must(t, f.Assign(topic, 0))
			f.WaitCommitted(t, topic, 0, 4)
			must(t, r.Stop(t))
			var nulls, full int
			must(t, db.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE j IS NULL AND b IS NULL AND ts IS NULL AND num IS NULL AND s IS NULL),
count(*) FILTER (WHERE j->>'k' = n::text AND b = '\x000102'::bytea AND ts = $1 AND num = 12.34 AND s = 'x')
FROM typed`, ts).Scan(&nulls, &full))
			wantFull := 3 // rows 0, 2 and 3
			if refuse {
				wantFull = 2 // -3 is dead-lettered
			}
			if nulls != 1 || full != wantFull {
				t.Fatalf("%d NULL rows and %d full rows; want 1 and %d", nulls, full, wantFull)
			}
		})
	}
}
