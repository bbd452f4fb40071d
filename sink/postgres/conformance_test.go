package postgres_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluice-go/sluice/sink/postgres"
	"github.com/sluice-go/sluice/sink/txsink"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
)

// The PostgreSQL store keeps the txsink.Store contract, writing through
// COPY (inserts) and through INSERT ... ON CONFLICT (upserts). Refused(i)
// is a negative n, which the table's CHECK constraint refuses. Each
// subtest gets a schema of its own in the test's database, which names
// the rows and offsets tables schema-qualified.
func TestConformance(t *testing.T) {
	for _, mode := range []struct {
		name     string
		conflict []string
	}{{"insert", nil}, {"upsert", []string{"n"}}} {
		t.Run(mode.name, func(t *testing.T) {
			db := newDB(t)
			var schemas sync.Map // txsink.Store[postgres.Row] -> its schema
			var n atomic.Int64
			txsinktest.Run(t, txsinktest.Harness[postgres.Row]{
				New: func(t *testing.T) txsink.Store[postgres.Row] {
					schema := fmt.Sprintf("s%d", n.Add(1))
					exec(t, db, "CREATE SCHEMA "+schema)
					exec(t, db, strings.Replace(keyedDDL, "TABLE rows", "TABLE "+schema+".rows", 1))
					cfg := config(true)
					cfg.Table, cfg.OffsetsTable, cfg.Conflict = schema+".rows", schema+".offsets", mode.conflict
					s, err := postgres.NewStore(db, cfg)
					must(t, err)
					schemas.Store(s, schema)
					return s
				},
				Value:   func(i int) postgres.Row { return postgres.Row{i, "v"} },
				Refused: func(i int) postgres.Row { return postgres.Row{-i, "v"} },
				Rows: func(t *testing.T, s txsink.Store[postgres.Row]) []int {
					schema, _ := schemas.Load(s)
					return intsOf(t, db, schema.(string)+".rows")
				},
			})
		})
	}
}
