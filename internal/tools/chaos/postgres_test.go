package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/pgtest"
)

// pgServer is the PostgreSQL server of the package's tests (TestMain
// stops it).
var pgServer pgtest.Shared

// tableOf is what the events table holds after a correct run: one row per
// output of o, as readTable returns it.
func tableOf(t *testing.T, o observed) []sluice.Record {
	t.Helper()
	var rows []sluice.Record
	for _, out := range o.output {
		var v struct {
			Source string `json:"source"`
		}
		if err := json.Unmarshal(out.Value, &v); err != nil {
			t.Fatal(err)
		}
		ref, err := parseSource(testTopic, v.Source)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, sluice.Record{Topic: testTopic, Partition: ref.partition, Offset: ref.offset, Key: out.Key, Value: out.Value,
			Timestamp: out.Timestamp})
	}
	return rows
}

// With -sink postgres, a second row of a valid event is a violation even
// inside a kill window; a second dead letter is not, wherever it is, but
// the ones outside every kill window are listed.
func TestCheckRowsOnceAllowsNoDuplicateRowEvenInAKillWindow(t *testing.T) {
	o := perfect(t)
	o.output = tableOf(t, o)
	o.rowsOnce = true
	if v := check(o, nil); !v.ok() || v.outputs != testN-4 || v.duplicates != 0 {
		t.Fatalf("the rows of a correct run: verdict %+v, want ok", v)
	}
	o.output = append(o.output, o.output[outputFor(t, o, 3, 20)])
	o.dead = append(o.dead, o.dead[0], o.dead[1]) // inputs 37 = 1/9 and 137 = 1/34
	windows := map[int32][]window{
		3: {{from: 20, to: 30, at: t0.Add(time.Second), cause: "SIGKILL p0.1"}},
		1: {{from: 0, to: 20, at: t0.Add(time.Second), cause: "SIGKILL p0.1"}}, // covers 1/9, not 1/34
	}
	v := check(o, windows)
	wantRows := []string{"events/3/20 has 2 rows (events/3/20 at 03:04:05.083, events/3/20 at 03:04:05.083), want exactly one"}
	wantDead := []string{"events/1/34 dead-lettered 2 times (events-dlq/0/1 at 00:00:00.000, events-dlq/0/1 at 00:00:00.000)"}
	if v.ok() || v.duplicates != 3 || v.deadDuplicates != 2 || fmt.Sprint(v.unexplained) != fmt.Sprint(wantRows) ||
		fmt.Sprint(v.deadOutside) != fmt.Sprint(wantDead) {
		t.Fatalf("duplicates %d (dead letters %d), unexplained %q, dead letters outside windows %q; want 3 (2), %q, %q",
			v.duplicates, v.deadDuplicates, v.unexplained, v.deadOutside, wantRows, wantDead)
	}
	o.output = o.output[:len(o.output)-1]
	if v := check(o, windows); !v.ok() || v.deadDuplicates != 2 {
		t.Fatalf("only dead letters twice: verdict %+v, want ok", v)
	}
}

func TestCheckRowsOnceFindsLostRows(t *testing.T) {
	o := perfect(t)
	o.output = tableOf(t, o)
	o.rowsOnce = true
	i := outputFor(t, o, 2, 10) // input 42
	o.output = append(o.output[:i], o.output[i+1:]...)
	if v := check(o, nil); fmt.Sprint(v.lost) != "[events/2/10 (valid, no output)]" {
		t.Fatalf("lost %q, want events/2/10", v.lost)
	}
}

func TestRowAgreesWithItsPayload(t *testing.T) {
	user := "u-5"
	payload := `{"id":"e-5","amount":5.05,"user":"u-5","amount_cents":505,"source":"events/1/1"}`
	rec := sluice.Record{Topic: "events", Partition: 1, Offset: 1, Value: []byte(payload)}
	good := row{id: "e-5", amount: 5.05, amountCents: 505, user: &user}
	if err := good.agrees(rec); err != nil {
		t.Fatalf("agrees: %v", err)
	}
	other := "u-6"
	for _, tc := range []struct {
		name string
		r    row
		rec  sluice.Record
		want string
	}{
		{"id", row{id: "e-6", amount: 5.05, amountCents: 505, user: &user}, rec, `id "e-6", payload id "e-5"`},
		{"offset", good, sluice.Record{Topic: "events", Partition: 1, Offset: 2, Value: []byte(payload)}, `payload source "events/1/1"`},
		{"cents", row{id: "e-5", amount: 5.05, amountCents: 504, user: &user}, rec, "amount 5.05 and amount_cents 504, payload 5.05 and 505"},
		{"no user", row{id: "e-5", amount: 5.05, amountCents: 505}, rec, `user_name NULL, payload user "u-5"`},
		{"other user", row{id: "e-5", amount: 5.05, amountCents: 505, user: &other}, rec, `user_name "u-6", payload user "u-5"`},
		{"payload", good, sluice.Record{Topic: "events", Partition: 1, Offset: 1, Value: []byte("{")}, "payload {"},
	} {
		if err := tc.r.agrees(tc.rec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: agrees = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestCheckPositions(t *testing.T) {
	rows := []sluice.Record{{Partition: 0, Offset: 3}, {Partition: 0, Offset: 7}, {Partition: 1, Offset: 2}}
	high := map[int32]int64{0: 9, 1: 4, 2: 1, 3: 0}
	good := map[int32]storedPosition{0: {epoch: 3, next: 9, written: 7}, 1: {epoch: 2, next: 3, written: 2}, 2: {epoch: 1, next: 1, written: -1}}
	wrong, claims := checkPositions(good, rows, high)
	if len(wrong) != 0 || claims != 6 {
		t.Fatalf("checkPositions = %q, %d claims; want nothing wrong, 6 claims", wrong, claims)
	}
	bad := map[int32]storedPosition{0: {epoch: 1, next: 9, written: 6}, 1: {epoch: 1, next: 5, written: 2}, 3: {epoch: 1, next: 0, written: 0}}
	wrong, _ = checkPositions(bad, rows, high)
	want := []string{"partition 0: written_offset 6, newest row at offset 7", "partition 1: next_offset 5 past the high watermark 4",
		"partition 2: no position in sluice_offsets, high watermark 1", "partition 3: written_offset 0, no row"}
	if fmt.Sprint(wrong) != fmt.Sprint(want) {
		t.Fatalf("checkPositions = %q, want %q", wrong, want)
	}
}

func TestDatabaseName(t *testing.T) {
	if got := databaseName(combo{"librdkafka", "cooperative-sticky"}, 12); got != "chaos_librdkafka_cooperative_sticky_seed12" {
		t.Fatalf("databaseName = %q", got)
	}
}

// TestReadTable reads tables shaped as cmd/example --sink postgres makes
// them (cmd/example's tests check that shape against the real sink).
func TestReadTable(t *testing.T) {
	srv := pgServer.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn := srv.CreateDatabase(t, "readtable") // a name of its own, dropped at the end
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range []string{
		`CREATE TABLE events (id text NOT NULL, amount double precision NOT NULL, amount_cents bigint NOT NULL, user_name text,
			topic text NOT NULL, "partition" integer NOT NULL, "offset" bigint NOT NULL, payload jsonb NOT NULL,
			written_at timestamptz NOT NULL DEFAULT now())`,
		`CREATE TABLE sluice_offsets (consumer_group text, topic text, partition integer, epoch bigint, next_offset bigint,
			written_offset bigint, invalid_offsets bigint[] NOT NULL DEFAULT '{}')`,
		`INSERT INTO events VALUES ('e-0', 0, 0, NULL, 'events', 0, 0, '{"id":"e-0","amount":0.00,"amount_cents":0,"source":"events/0/0"}'),
			('e-1', 1.01, 101, 'u-1', 'events', 1, 0, '{"id":"e-1","amount":1.01,"user":"u-1","amount_cents":101,"source":"events/1/0"}'),
			('e-9', 1.01, 101, 'u-1', 'events', 1, 1, '{"id":"e-1","amount":1.01,"user":"u-1","amount_cents":101,"source":"events/1/0"}')`,
		`INSERT INTO sluice_offsets VALUES ('chaos', 'events', 0, 2, 1, 0, '{}'), ('chaos', 'events', 1, 1, 2, 1, '{1}'),
			('other', 'events', 0, 5, 5, 5, '{}')`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	tab, err := readTable(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.outputs) != 3 || string(tab.outputs[0].Key) != "e-0" || tab.outputs[1].Partition != 1 || tab.outputs[0].Timestamp.IsZero() {
		t.Fatalf("outputs %+v", tab.outputs)
	}
	if want := `[row e-9 of events/1/1: id "e-9", payload id "e-1"]`; fmt.Sprint(tab.wrong) != want {
		t.Fatalf("wrong %q, want %s", tab.wrong, want)
	}
	if want := "map[0:{2 1 0 []} 1:{1 2 1 [1]}]"; fmt.Sprint(tab.positions) != want {
		t.Fatalf("positions %v, want %s", tab.positions, want)
	}
}
