package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/pgtest"
)

// Sinks of the consumers, the values of -sink: the output topic, or a
// PostgreSQL table (cmd/example --sink postgres).
const (
	sinkKafka    = "kafka"
	sinkPostgres = "postgres"
)

var sinks = []string{sinkKafka, sinkPostgres}

// With -sink postgres, cmd/example writes each valid event as one row of
// eventsTable (its default --postgres-table) and, exactly once, keeps
// each partition's position in offsetsTable (sink/postgres's default).
const (
	eventsTable  = "events"
	offsetsTable = "sluice_offsets"
)

// startPostgres starts the PostgreSQL server of a -sink postgres run (one
// for all its scenarios, a database each) and returns it with the
// function that stops it and removes its data.
func startPostgres() (*pgtest.Server, func() error, error) {
	srv, stop, err := pgtest.StartMain()
	if errors.Is(err, pgtest.ErrNotInstalled) {
		return nil, nil, fmt.Errorf("-sink postgres needs PostgreSQL (initdb and postgres on PATH or in /usr/lib/postgresql/*/bin): %w", err)
	}
	return srv, stop, err
}

// createDatabase creates the scenario's database on srv and returns its
// DSN.
func createDatabase(ctx context.Context, srv *pgtest.Server, name string) (string, error) {
	conn, err := pgx.Connect(ctx, srv.DSN("postgres"))
	if err != nil {
		return "", fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("creating database %s: %w", name, err)
	}
	return srv.DSN(name), nil
}

// databaseName is the scenario's database: its name in lower case, with
// '_' for what is not a letter or a digit.
func databaseName(c combo, seed int64) string {
	return strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, strings.ToLower(fmt.Sprintf("chaos_%s_%s_seed%d", c.client, c.protocol, seed)))
}

// storedPosition is one partition's row of the offsets table.
type storedPosition struct {
	epoch, next, written int64
	invalid              []int64
}

// table is what a -sink postgres scenario left in its database.
type table struct {
	// outputs holds one record per row of eventsTable, as check reads an
	// output: Key the id column, Value the payload, and where the row
	// says its event came from (topic, partition, offset) with the time
	// of its transaction, to name it.
	outputs []sluice.Record
	// wrong lists the rows whose columns disagree with their payload.
	wrong []string
	// positions are the offsets table's rows of the group's input
	// partitions.
	positions map[int32]storedPosition
}

// readTable reads the events and offsets tables of the database at dsn.
func readTable(ctx context.Context, dsn string) (table, error) {
	t := table{positions: map[int32]storedPosition{}}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return t, fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT id, amount, amount_cents, user_name, topic, "partition", "offset", payload::text, written_at
FROM `+eventsTable+` ORDER BY written_at, "partition", "offset"`)
	if err != nil {
		return t, fmt.Errorf("reading %s: %w", eventsTable, err)
	}
	for rows.Next() {
		var (
			r       row
			payload string
		)
		var rec sluice.Record
		if err := rows.Scan(&r.id, &r.amount, &r.amountCents, &r.user, &rec.Topic, &rec.Partition, &rec.Offset, &payload, &rec.Timestamp); err != nil {
			rows.Close()
			return t, fmt.Errorf("reading %s: %w", eventsTable, err)
		}
		rec.Key, rec.Value = []byte(r.id), []byte(payload)
		if err := r.agrees(rec); err != nil {
			t.wrong = append(t.wrong, fmt.Sprintf("row %s of %s/%d/%d: %v", r.id, rec.Topic, rec.Partition, rec.Offset, err))
		}
		t.outputs = append(t.outputs, rec)
	}
	if err := rows.Err(); err != nil {
		return t, fmt.Errorf("reading %s: %w", eventsTable, err)
	}
	pos, err := conn.Query(ctx, `SELECT "partition", epoch, next_offset, written_offset, invalid_offsets FROM `+offsetsTable+
		` WHERE consumer_group = $1 AND topic = $2`, groupName, inputTopic)
	if err != nil {
		return t, fmt.Errorf("reading %s: %w", offsetsTable, err)
	}
	for pos.Next() {
		var p int32
		var q storedPosition
		if err := pos.Scan(&p, &q.epoch, &q.next, &q.written, &q.invalid); err != nil {
			pos.Close()
			return t, fmt.Errorf("reading %s: %w", offsetsTable, err)
		}
		t.positions[p] = q
	}
	if err := pos.Err(); err != nil {
		return t, fmt.Errorf("reading %s: %w", offsetsTable, err)
	}
	return t, nil
}

// row is the columns of a row besides its input record and payload.
type row struct {
	id          string
	amount      float64
	amountCents int64
	user        *string
}

// agrees checks that the row's columns say what its payload (rec.Value)
// says: the id, the amounts, the user and the input record (source).
func (r row) agrees(rec sluice.Record) error {
	var p struct {
		ID          string  `json:"id"`
		Amount      float64 `json:"amount"`
		AmountCents int64   `json:"amount_cents"`
		User        *string `json:"user"`
		Source      string  `json:"source"`
	}
	if err := json.Unmarshal(rec.Value, &p); err != nil {
		return fmt.Errorf("payload %s: %v", rec.Value, err)
	}
	src := fmt.Sprintf("%s/%d/%d", rec.Topic, rec.Partition, rec.Offset)
	switch {
	case r.id != p.ID:
		return fmt.Errorf("id %q, payload id %q", r.id, p.ID)
	case src != p.Source:
		return fmt.Errorf("payload source %q", p.Source)
	case r.amount != p.Amount || r.amountCents != p.AmountCents || r.amountCents != int64(math.Round(r.amount*100)):
		return fmt.Errorf("amount %v and amount_cents %d, payload %v and %d", r.amount, r.amountCents, p.Amount, p.AmountCents)
	case (r.user == nil) != (p.User == nil) || (r.user != nil && *r.user != *p.User):
		return fmt.Errorf("user_name %v, payload user %v", deref(r.user), deref(p.User))
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return "NULL"
	}
	return fmt.Sprintf("%q", *s)
}

// checkPositions checks the offsets table against the rows and the input
// at the end of a scenario: every input partition with records has a
// position, its written offset is its newest row (each transaction
// stores the batch's last offset with the batch), and it resumes at or
// before the high watermark. It returns what is wrong, and the claims
// made in all (each claim raised a partition's epoch by one).
func checkPositions(positions map[int32]storedPosition, rows []sluice.Record, high map[int32]int64) (wrong []string, claims int64) {
	newest := map[int32]int64{}
	for _, r := range rows {
		if n, ok := newest[r.Partition]; !ok || r.Offset > n {
			newest[r.Partition] = r.Offset
		}
	}
	for _, p := range slices.Sorted(maps.Keys(high)) {
		pos, ok := positions[p]
		claims += pos.epoch
		n, hasRows := newest[p]
		switch {
		case !ok && high[p] > 0:
			wrong = append(wrong, fmt.Sprintf("partition %d: no position in %s, high watermark %d", p, offsetsTable, high[p]))
		case !ok:
		case hasRows && pos.written != n:
			wrong = append(wrong, fmt.Sprintf("partition %d: written_offset %d, newest row at offset %d", p, pos.written, n))
		case !hasRows && pos.written != -1:
			wrong = append(wrong, fmt.Sprintf("partition %d: written_offset %d, no row", p, pos.written))
		case pos.next > high[p]:
			wrong = append(wrong, fmt.Sprintf("partition %d: next_offset %d past the high watermark %d", p, pos.next, high[p]))
		case len(pos.invalid) > 0:
			wrong = append(wrong, fmt.Sprintf("partition %d: invalid_offsets %v: the table refused rows", p, pos.invalid))
		}
	}
	return wrong, claims
}

// keepPostgresLog writes the end of the PostgreSQL server's log into the
// scenario's log directory when the scenario failed.
func (s *scenario) keepPostgresLog() {
	if s.res.ok() || s.pg == nil {
		return
	}
	path := filepath.Join(s.logDir, "postgres.log")
	if err := os.WriteFile(path, []byte(s.pg.LogTail(postgresLogLines)), 0o644); err != nil {
		s.logf("keeping PostgreSQL's log: %v", err)
		return
	}
	s.logf("PostgreSQL's log kept in %s", path)
}

// postgresLogLines is how much of PostgreSQL's log a failed scenario
// keeps (the server serves every scenario of the run).
const postgresLogLines = 2000
