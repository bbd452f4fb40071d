package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/sink/postgres"
)

// An upsert batch of more parameters than one statement takes (65535):
// it is split, a key in both parts ends with the later row's values, and
// every row is in the table.
func TestAdversaryWideUpsertSplitsAcrossStatements(t *testing.T) {
	ctx := context.Background()
	const cols = 100 // 655 rows a statement
	names := make([]string, cols)
	defs := make([]string, cols)
	for i := range names {
		names[i] = fmt.Sprintf("c%d", i)
		defs[i] = names[i] + " integer"
	}
	defs[0] += " PRIMARY KEY"
	db := newDB(t, `CREATE TABLE wide (`+strings.Join(defs, ", ")+`)`)
	s, err := postgres.NewStore(db, postgres.Config{Table: "wide", Columns: names, Conflict: []string{"c0"}})
	must(t, err)
	rows := make([]postgres.Row, 1000)
	for i := range rows {
		r := make(postgres.Row, cols)
		key := i
		if i == 900 {
			key = 5 // updates row 5, written by the first statement
		}
		for c := range r {
			r[c] = i
		}
		r[0] = key
		rows[i] = r
	}
	tx, err := s.Begin(ctx)
	must(t, err)
	must(t, tx.Write(ctx, rows))
	must(t, tx.Commit(ctx))
	var n, c99 int
	must(t, db.QueryRow(ctx, `SELECT count(*), (SELECT c99 FROM wide WHERE c0 = 5) FROM wide`).Scan(&n, &c99))
	if n != 999 || c99 != 900 {
		t.Fatalf("%d rows, row 5 has c99 %d; want 999 rows and 900 (the later row)", n, c99)
	}
}
