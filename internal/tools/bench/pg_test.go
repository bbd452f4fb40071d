package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluice-go/sluice/internal/pgtest"
	"github.com/sluice-go/sluice/sink/postgres"
)

// startTestPostgres starts the benchmark's server for one test, skipping
// without PostgreSQL unless SLUICE_REQUIRE_POSTGRES is set.
func startTestPostgres(t *testing.T) *pgServer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg, err := startPostgres(ctx)
	if errors.Is(err, pgtest.ErrNotInstalled) && os.Getenv(pgtest.RequireEnv) == "" {
		t.Skipf("%v (set %s=1 to fail instead)", err, pgtest.RequireEnv)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pg.close(); err != nil {
			t.Error(err)
		}
	})
	return pg
}

// fillTable writes the row of every record of l, as a correct run would.
func fillTable(t *testing.T, pg *pgServer, l layout) {
	t.Helper()
	var rows [][]any
	for p := range l.partitions {
		for o := range l.count(p) {
			rows = append(rows, []any{int32(p), o, valueOf(int32(p), o, l.valueSize)})
		}
	}
	if _, err := pg.conn.CopyFrom(context.Background(), pgx.Identifier{pgTable}, pgColumns, pgx.CopyFromRows(rows)); err != nil {
		t.Fatal(err)
	}
}

func execPG(t *testing.T, pg *pgServer, sql string, args ...any) {
	t.Helper()
	if _, err := pg.conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// The table check passes only when the table holds every record's row
// exactly once with its value: a missing row, a duplicate, a value of
// another record or a row of a partition outside the topic each fail it,
// and reset empties the table again.
func TestCheckTable(t *testing.T) {
	pg := startTestPostgres(t)
	ctx := context.Background()
	l := layout{records: 101, partitions: 4, valueSize: 40}
	want := l.expectedHashes()
	for _, c := range []struct {
		name  string
		spoil func()
		err   string // "" for none
	}{
		{"every row once", func() {}, ""},
		{"a row missing", func() { execPG(t, pg, "DELETE FROM "+pgTable+" WHERE kafka_partition = 2 AND kafka_offset = 7") }, "partition 2: 24 distinct offsets of 25 (1 missing)"},
		{"a row twice", func() {
			execPG(t, pg, "INSERT INTO "+pgTable+" SELECT * FROM "+pgTable+" WHERE kafka_partition = 1 AND kafka_offset = 0")
		}, "partition 1: 1 duplicates"},
		{"another record's value", func() {
			execPG(t, pg, "UPDATE "+pgTable+" SET value = $1 WHERE kafka_partition = 3 AND kafka_offset = 4", valueOf(3, 5, l.valueSize))
		}, "1 rows hold a value made for another record"},
		{"a partition outside the topic", func() {
			execPG(t, pg, "INSERT INTO "+pgTable+" VALUES (9, 0, $1)", valueOf(9, 0, l.valueSize))
		}, "1 rows of partitions outside the topic"},
	} {
		if err := pg.reset(ctx); err != nil {
			t.Fatal(err)
		}
		if err := pg.checkTable(ctx, l, want); err == nil || !strings.Contains(err.Error(), "partition 0: 0 distinct offsets of 26 (26 missing)") {
			t.Fatalf("%s: checkTable of the empty table after reset: %v", c.name, err)
		}
		fillTable(t, pg, l)
		c.spoil()
		err := pg.checkTable(ctx, l, want)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: checkTable: %v", c.name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: checkTable: %v, want an error with %q", c.name, err, c.err)
		}
	}
}

// The positions check passes only when each partition's position is at
// its end: one missing, behind, or with a refused offset each fail it.
func TestCheckPositions(t *testing.T) {
	pg := startTestPostgres(t)
	ctx := context.Background()
	l := layout{records: 10, partitions: 3, valueSize: 40}
	insert := func(group string, p int, next, written int64, invalid []int64) {
		execPG(t, pg, "INSERT INTO "+postgres.DefaultOffsetsTable+
			" (consumer_group, topic, partition, epoch, next_offset, written_offset, invalid_offsets) VALUES ($1, 'in', $2, 1, $3, $4, $5)",
			group, p, next, written, invalid)
	}
	for _, c := range []struct {
		name  string
		spoil func(group string)
		err   string
	}{
		{"at the ends", func(string) {}, ""},
		{"a partition without a position", func(g string) {
			execPG(t, pg, "DELETE FROM "+postgres.DefaultOffsetsTable+" WHERE consumer_group = $1 AND partition = 1", g)
		}, "partition 1: no position stored"},
		{"a partition behind", func(g string) {
			execPG(t, pg, "UPDATE "+postgres.DefaultOffsetsTable+" SET next_offset = 2 WHERE consumer_group = $1 AND partition = 2", g)
		}, "partition 2: next 2, written 2, 0 refused offsets; want 3, 2, none"},
		{"a refused offset", func(g string) {
			execPG(t, pg, "UPDATE "+postgres.DefaultOffsetsTable+" SET invalid_offsets = '{3}' WHERE consumer_group = $1 AND partition = 0", g)
		}, "partition 0: next 4, written 3, 1 refused offsets"},
	} {
		if err := pg.reset(ctx); err != nil {
			t.Fatal(err)
		}
		group := "g-" + strings.ReplaceAll(c.name, " ", "-")
		for p := range l.partitions {
			insert(group, p, l.count(p), l.count(p)-1, []int64{})
		}
		insert("another-group", 0, 0, -1, []int64{}) // not this run's
		c.spoil(group)
		err := pg.checkPositions(ctx, l, group, "in")
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: checkPositions: %v", c.name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: checkPositions: %v, want an error with %q", c.name, err, c.err)
		}
	}
}
