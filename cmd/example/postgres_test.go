package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/demo"
	"github.com/sluice-go/sluice/internal/pgtest"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// pgServer is the PostgreSQL server of the package's tests (TestMain
// stops it).
var pgServer pgtest.Shared

func TestSinkFlagsValidate(t *testing.T) {
	base := options{group: "g", input: "i", output: "o", dlq: "d", workers: 1, messages: 1}
	for _, tc := range []struct {
		name        string
		f           sinkFlags
		exactlyOnce bool
		want        string // "" means valid
	}{
		{"defaults", sinkFlags{}, false, ""},
		{"kafka", sinkFlags{sink: "kafka", postgresMode: "exactly-once", postgresTable: "events"}, true, ""},
		{"postgres", sinkFlags{sink: "postgres", postgresDSN: "postgres://u@h/db", postgresTable: "events"}, false, ""},
		{"postgres at least once", sinkFlags{sink: "postgres", postgresDSN: "postgres://u@h/db", postgresMode: "at-least-once",
			postgresTable: "s.events"}, false, ""},
		{"unknown sink", sinkFlags{sink: "mysql"}, false, `--sink="mysql": want one of kafka, postgres`},
		{"no dsn", sinkFlags{sink: "postgres", postgresTable: "events"}, false, "--sink postgres needs --postgres-dsn"},
		{"bad dsn", sinkFlags{sink: "postgres", postgresDSN: "postgres://u@h:notaport/db", postgresTable: "events"}, false, "--postgres-dsn: "},
		{"dsn without postgres", sinkFlags{postgresDSN: "postgres://u@h/db"}, false, "--postgres-dsn is set without --sink postgres"},
		{"unknown mode", sinkFlags{sink: "postgres", postgresDSN: "postgres://u@h/db", postgresMode: "twice", postgresTable: "events"}, false,
			`--postgres-mode="twice": want one of exactly-once, at-least-once`},
		{"no table", sinkFlags{sink: "postgres", postgresDSN: "postgres://u@h/db", postgresTable: " "}, false, "--postgres-table is empty"},
		{"with Kafka transactions", sinkFlags{sink: "postgres", postgresDSN: "postgres://u@h/db", postgresTable: "events"}, true,
			"--exactly-once (Kafka transactions) is for --sink kafka"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base
			o.sinkFlags, o.exactlyOnce = tc.f, tc.exactlyOnce
			checkValidate(t, o, tc.want)
		})
	}
}

// TestDemoToPostgres runs the embedded demo with --sink postgres under
// each client and mode: every valid event is one row of the table,
// derived from its input record, and every malformed one is
// dead-lettered, untouched.
func TestDemoToPostgres(t *testing.T) {
	eachClientAnd(t, postgresModes, demoToPostgres)
}

func demoToPostgres(t *testing.T, client, mode string) {
	const n = 3000
	pool, o, b, out := runPostgresDemo(t, client, mode, n)
	valid, malformed := 0, 0
	for i := range n {
		if demo.IsMalformedIndex(i) {
			malformed++
		} else {
			valid++
		}
	}
	want := fmt.Sprintf("done: consumed %d, rows %d, dead-lettered %d, committed %d of %d in ", n, valid, malformed, n, n)
	if !strings.Contains(out, want) {
		t.Fatalf("summary does not say %q:\n%s", want, out)
	}
	rows := readEvents(t, pool, o.postgresTable)
	for i := range n {
		id := fmt.Sprintf("e-%d", i)
		if want := map[bool]int{false: 1, true: 0}[demo.IsMalformedIndex(i)]; len(rows[id]) != want {
			t.Fatalf("event %s: %d rows, want %d", id, len(rows[id]), want)
		}
	}
	if len(rows) != valid {
		t.Fatalf("%d distinct ids in the table, want %d", len(rows), valid)
	}
	checkDeadLetters(t, b, o.dlq, malformed)

	// Exactly-once keeps each partition's position next to the rows: the
	// newest offset written is the partition's newest row.
	var offsetsTable *string
	if err := pool.QueryRow(context.Background(), `SELECT to_regclass('sluice_offsets')::text`).Scan(&offsetsTable); err != nil {
		t.Fatal(err)
	}
	if mode == "at-least-once" {
		if offsetsTable != nil {
			t.Fatalf("at-least-once created the offsets table %s", *offsetsTable)
		}
		return
	}
	newest := map[int32]int64{}
	for _, rs := range rows {
		for _, r := range rs {
			newest[r.partition] = max(newest[r.partition], r.offset)
		}
	}
	written := map[int32]int64{}
	q, err := pool.Query(context.Background(), `SELECT partition, written_offset FROM sluice_offsets WHERE consumer_group = $1 AND topic = $2`, o.group, o.input)
	if err != nil {
		t.Fatal(err)
	}
	for q.Next() {
		var p int32
		var w int64
		if err := q.Scan(&p, &w); err != nil {
			t.Fatal(err)
		}
		written[p] = w
	}
	if err := q.Err(); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(written, newest) {
		t.Fatalf("written offsets in sluice_offsets %v, want each partition's newest row %v", written, newest)
	}
}

// TestPostgresResumesFromTheTable runs the demo into the table, rewinds
// the group's commits to the start and consumes again with more events:
// exactly-once resumes where the table says, so each event is still one
// row; at-least-once resumes at the group's commits and writes every
// event of the first run again.
func TestPostgresResumesFromTheTable(t *testing.T) {
	eachClientAnd(t, postgresModes, postgresResumes)
}

func postgresResumes(t *testing.T, client, mode string) {
	const n, more = 1600, 800
	pool, o, b, _ := runPostgresDemo(t, client, mode, n)
	rewindGroup(t, b, o.group, o.input)
	var recs []sluice.Record
	for i := n; i < n+more; i++ {
		recs = append(recs, sluice.Record{Partition: int32(i % 8), Value: demo.Value(i)})
	}
	consumeBatches(t, o, b, recs)

	rows := readEvents(t, pool, o.postgresTable)
	for i := range n + more {
		id := fmt.Sprintf("e-%d", i)
		want := 1
		switch {
		case demo.IsMalformedIndex(i):
			want = 0
		case mode == "at-least-once" && i < n:
			want = 2 // consumed again from the rewound commits
		}
		if len(rows[id]) != want {
			t.Fatalf("%s: event %s has %d rows, want %d", mode, id, len(rows[id]), want)
		}
	}
}

// consumeBatches runs the --brokers mode on b and, for each batch in
// turn, produces it to o.input and waits until the group committed every
// partition up to its high watermark; then it stops the run, as SIGINT
// does, and checks that it returned nil.
func consumeBatches(t *testing.T, o options, b *kafkatest.Broker, batches ...[]sluice.Record) {
	t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- runCluster(ctx, o, b.Addrs(), slog.New(slog.DiscardHandler), &out) }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for _, recs := range batches {
		b.Produce(t, o.input, recs...)
		hw := b.HighWatermarks(t, o.input)
		deadline := time.After(time.Minute)
		for !maps.Equal(b.Committed(t, o.group, o.input), hw) {
			select {
			case err := <-done:
				t.Fatalf("runCluster returned early: %v\n%s", err, out.String())
			case <-deadline:
				cancel()
				<-done
				t.Fatalf("committed %v after a minute, want %v", b.Committed(t, o.group, o.input), hw)
			case <-tick.C:
			}
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("runCluster: %v\n%s", err, out.String())
	}
}

// postgresOptions are the demo's options with --sink postgres.
func postgresOptions(client, mode, dsn string, n int) options {
	return options{group: "g", input: "events", output: "events-enriched", dlq: "events-dlq", workers: 4, messages: n,
		client: client, sinkFlags: sinkFlags{sink: "postgres", postgresDSN: dsn, postgresMode: mode, postgresTable: "events"}}
}

// eventRow is one row of the events table.
type eventRow struct {
	partition int32
	offset    int64
}

// readEvents reads the table, checks that each row is what toRow makes
// of the input record its topic, partition and offset name, and returns
// the rows by event id.
func readEvents(t *testing.T, pool *pgxpool.Pool, table string) map[string][]eventRow {
	t.Helper()
	q, err := pool.Query(context.Background(), `SELECT id, amount, amount_cents, user_name, topic, "partition", "offset", payload::text FROM `+table)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	rows := map[string][]eventRow{}
	for q.Next() {
		var (
			id, topic, payload string
			user               *string
			amount             float64
			amountCents        int64
			r                  eventRow
		)
		if err := q.Scan(&id, &amount, &amountCents, &user, &topic, &r.partition, &r.offset, &payload); err != nil {
			t.Fatal(err)
		}
		var i int
		if _, err := fmt.Sscanf(id, "e-%d", &i); err != nil || demo.IsMalformedIndex(i) {
			t.Fatalf("row of id %q: not a valid event of the workload", id)
		}
		var in, got map[string]any
		if err := json.Unmarshal(demo.Value(i), &in); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(payload), &got); err != nil {
			t.Fatalf("row %s: payload %s: %v", id, payload, err)
		}
		in["amount_cents"] = float64(cents(in["amount"].(float64)))
		in["source"] = fmt.Sprintf("%s/%d/%d", topic, r.partition, r.offset)
		wantUser, hasUser := in["user"].(string)
		switch {
		case topic != "events" || r.partition != int32(i%8):
			t.Fatalf("row %s: from %s[%d], want events[%d]", id, topic, r.partition, i%8)
		case !reflect.DeepEqual(got, in):
			t.Fatalf("row %s: payload %v, want %v", id, got, in)
		case amount != in["amount"] || float64(amountCents) != in["amount_cents"]:
			t.Fatalf("row %s: amount %v, amount_cents %d, want %v and %v", id, amount, amountCents, in["amount"], in["amount_cents"])
		case hasUser != (user != nil) || (user != nil && *user != wantUser):
			t.Fatalf("row %s: user_name %v, want %q (set: %v)", id, user, wantUser, hasUser)
		}
		rows[id] = append(rows[id], r)
	}
	if err := q.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// checkDeadLetters checks that topic holds one dead letter per malformed
// event, untouched, naming the input and the decode stage.
func checkDeadLetters(t *testing.T, b *kafkatest.Broker, topic string, want int) {
	t.Helper()
	dead := b.ReadAll(t, topic)
	if len(dead) != want {
		t.Fatalf("%d dead letters, want %d", len(dead), want)
	}
	seen := map[string]bool{}
	for _, r := range dead {
		h := map[string]string{}
		for _, x := range r.Headers {
			h[x.Key] = string(x.Value)
		}
		at := h[sink.HeaderPartition] + "/" + h[sink.HeaderOffset]
		if h[sink.HeaderTopic] != "events" || h[sink.HeaderStage] != "decode" || h[sink.HeaderError] == "" || seen[at] {
			t.Fatalf("dead letter %q has headers %v (seen before: %v)", r.Value, h, seen[at])
		}
		seen[at] = true
		if !demo.IsMalformed(r.Value) {
			t.Fatalf("dead letter value %q is not one of the malformed inputs, unchanged", r.Value)
		}
	}
}

// rewindGroup commits offset 0 on every partition of topic for group,
// which has no member.
func rewindGroup(t *testing.T, b *kafkatest.Broker, group, topic string) {
	t.Helper()
	adm, err := b.Admin()
	if err != nil {
		t.Fatal(err)
	}
	var offs kadm.Offsets
	for p := range b.HighWatermarks(t, topic) {
		offs.Add(kadm.Offset{Topic: topic, Partition: p, At: 0, LeaderEpoch: -1})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.CommitOffsets(ctx, group, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("rewinding group %s: %v", group, err)
	}
}
