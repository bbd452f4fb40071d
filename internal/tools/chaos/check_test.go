package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/demo"
	"github.com/sluice-go/sluice/sink"
)

// What a correct run leaves: n demo events over 4 partitions, one output
// per valid event and one dead letter per malformed one, all committed.
const (
	testTopic = "events"
	testParts = 4
	testN     = 400 // 4 malformed: 37, 137, 237, 337
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func perfect(t *testing.T) observed {
	t.Helper()
	o := observed{inputTopic: testTopic, committed: map[int32]int64{}, high: map[int32]int64{}}
	for i := range testN {
		p := int32(i % testParts)
		in := sluice.Record{Topic: testTopic, Partition: p, Offset: o.high[p], Value: demo.Value(i)}
		o.high[p]++
		o.input = append(o.input, in)
		if demo.IsMalformedIndex(i) {
			o.dead = append(o.dead, deadLetterOf(in, 0, int64(len(o.dead))))
		} else {
			o.output = append(o.output, outputOf(t, in, int32(i%3), int64(len(o.output)), t0.Add(time.Duration(i)*time.Millisecond)))
		}
	}
	for p, hw := range o.high {
		o.committed[p] = hw
	}
	return o
}

// outputOf is what cmd/example's enrich makes of in.
func outputOf(t *testing.T, in sluice.Record, p int32, off int64, ts time.Time) sluice.Record {
	t.Helper()
	var fields map[string]any
	if err := json.Unmarshal(in.Value, &fields); err != nil {
		t.Fatal(err)
	}
	fields["amount_cents"] = int64(math.Round(fields["amount"].(float64) * 100))
	fields["source"] = fmt.Sprintf("%s/%d/%d", in.Topic, in.Partition, in.Offset)
	v, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return sluice.Record{Topic: "events-enriched", Partition: p, Offset: off, Key: []byte(fields["id"].(string)), Value: v, Timestamp: ts}
}

func deadLetterOf(in sluice.Record, p int32, off int64) sluice.Record {
	return sluice.Record{Topic: "events-dlq", Partition: p, Offset: off, Value: in.Value, Headers: []sluice.Header{
		{Key: sink.HeaderTopic, Value: []byte(in.Topic)},
		{Key: sink.HeaderPartition, Value: []byte(strconv.Itoa(int(in.Partition)))},
		{Key: sink.HeaderOffset, Value: []byte(strconv.FormatInt(in.Offset, 10))},
		{Key: sink.HeaderError, Value: []byte(`"id" is missing`)},
		{Key: sink.HeaderStage, Value: []byte("decode")},
	}}
}

// outputFor returns the index in o.output of the output of input p/off.
func outputFor(t *testing.T, o observed, p int32, off int64) int {
	t.Helper()
	src := fmt.Sprintf(`"source":"%s/%d/%d"`, testTopic, p, off)
	for i, r := range o.output {
		if strings.Contains(string(r.Value), src) {
			return i
		}
	}
	t.Fatalf("no output for %d/%d", p, off)
	return -1
}

func TestCheckPerfectRun(t *testing.T) {
	v := check(perfect(t), nil)
	if !v.ok() || v.inputs != testN || v.valid != testN-4 || v.malformed != 4 || v.outputs != testN-4 ||
		v.deadLetters != 4 || v.duplicates != 0 {
		t.Fatalf("verdict %+v, want ok with %d inputs, 4 malformed, no duplicate", v, testN)
	}
}

func TestCheckFindsLostRecords(t *testing.T) {
	o := perfect(t)
	i := outputFor(t, o, 2, 10) // input 42
	o.output = append(o.output[:i], o.output[i+1:]...)
	o.dead = o.dead[1:] // input 37: partition 1, offset 9
	v := check(o, nil)
	want := []string{"events/1/9 (malformed, no dead letter)", "events/2/10 (valid, no output)"}
	if fmt.Sprint(v.lost) != fmt.Sprint(want) || fmt.Sprint(v.lostAt) != "map[1:[9] 2:[10]]" || len(v.wrong)+len(v.unexplained)+len(v.behind) != 0 {
		t.Fatalf("lost %q wrong %q unexplained %q behind %q, want lost exactly %q", v.lost, v.wrong, v.unexplained, v.behind, want)
	}
}

func TestCheckCountsUnprocessedRecordsPastTheCommitAsPendingNotLost(t *testing.T) {
	o := perfect(t)
	o.committed[2] = 10 // 2/10 (event 42) and later have no output yet
	i := outputFor(t, o, 2, 10)
	o.output = append(o.output[:i], o.output[i+1:]...)
	i = outputFor(t, o, 2, 11)
	o.output = append(o.output[:i], o.output[i+1:]...)
	v := check(o, nil)
	if len(v.lost) != 0 || v.pending != 2 || len(v.behind) != 1 {
		t.Fatalf("lost %q pending %d behind %q, want no loss, 2 pending and partition 2 behind", v.lost, v.pending, v.behind)
	}
}

func TestCheckCountsDuplicatesAndExplainsThemByKillWindows(t *testing.T) {
	o := perfect(t)
	// Partition 3, offsets 20..24 redone after a kill at t0+1s whose
	// window is [20, 30); offset 5 of partition 0 redone with no kill.
	for off := int64(20); off < 25; off++ {
		dup := o.output[outputFor(t, o, 3, off)]
		dup.Timestamp = t0.Add(2 * time.Second) // the redo is later than the first copy
		o.output = append(o.output, dup)
	}
	o.output = append(o.output, o.output[outputFor(t, o, 0, 5)])
	o.dead = append(o.dead, o.dead[0]) // input 37 = 1/9: no window on partition 1
	windows := map[int32][]window{
		3: {{from: 20, to: 30, at: t0.Add(time.Second), cause: "SIGKILL p0.1"}},
		0: {{from: 6, to: 9, at: t0, cause: "SIGKILL p1.1"}}, // does not cover offset 5
	}
	v := check(o, windows)
	if v.duplicates != 7 {
		t.Errorf("duplicates %d, want 7", v.duplicates)
	}
	want := []string{"events/0/5 processed 2 times, outside every kill window", "events/1/9 processed 2 times, outside every kill window"}
	if fmt.Sprint(v.unexplained) != fmt.Sprint(want) {
		t.Errorf("unexplained %q, want %q", v.unexplained, want)
	}
	if fmt.Sprint(v.unexplainedAt) != "map[0:[5] 1:[9]]" {
		t.Errorf("unexplained offsets %v, want 0/5 and 1/9", v.unexplainedAt)
	}
	// The oldest first copy in the window is input 3/20 = event 83, output
	// at t0+83ms; the kill was at t0+1s.
	if v.maxDupAge != time.Second-83*time.Millisecond {
		t.Errorf("max duplicate age %v, want %v", v.maxDupAge, time.Second-83*time.Millisecond)
	}
	if len(v.lost)+len(v.wrong)+len(v.behind) != 0 {
		t.Errorf("lost %q wrong %q behind %q, want none", v.lost, v.wrong, v.behind)
	}
}

func TestCheckFindsWrongOutputs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, o *observed)
		want   string
		lost   int // inputs left without a result by the change
	}{
		{"amount_cents", func(t *testing.T, o *observed) {
			r := &o.output[outputFor(t, *o, 1, 1)] // event 5: amount 5.05
			r.Value = []byte(strings.Replace(string(r.Value), `"amount_cents":505`, `"amount_cents":504`, 1))
		}, `want the fields of input events/1/1 plus amount_cents and source`, 0},
		{"missing field", func(t *testing.T, o *observed) {
			r := &o.output[outputFor(t, *o, 1, 1)]
			r.Value = []byte(strings.Replace(string(r.Value), `,"user":"u-5"`, ``, 1))
		}, `want the fields of input events/1/1`, 0},
		{"key", func(t *testing.T, o *observed) { o.output[outputFor(t, *o, 1, 1)].Key = []byte("e-6") },
			`key "e-6", want the input's id "e-5"`, 0},
		{"source of another record", func(t *testing.T, o *observed) {
			r := &o.output[outputFor(t, *o, 1, 1)]
			r.Value = []byte(strings.Replace(string(r.Value), `"events/1/1"`, `"events/1/2"`, 1))
		}, `want the fields of input events/1/2`, 1},
		{"source that does not exist", func(t *testing.T, o *observed) {
			r := &o.output[outputFor(t, *o, 1, 1)]
			r.Value = []byte(strings.Replace(string(r.Value), `"events/1/1"`, `"events/1/1000"`, 1))
		}, `source "events/1/1000" names no input record`, 1},
		{"source of a malformed input", func(t *testing.T, o *observed) {
			r := &o.output[outputFor(t, *o, 1, 1)]
			r.Value = []byte(strings.Replace(string(r.Value), `"events/1/1"`, `"events/1/9"`, 1))
		}, `source "events/1/9" is a malformed input`, 1},
		{"not JSON", func(t *testing.T, o *observed) { o.output[outputFor(t, *o, 1, 1)].Value = []byte("oops") },
			`value "oops" is not a JSON object`, 1},
		{"dead letter of a valid input", func(t *testing.T, o *observed) {
			o.dead = append(o.dead, deadLetterOf(o.input[8], 0, 99)) // event 8 = 0/2
		}, `input events/0/2 is valid`, 0},
		{"dead letter changed", func(t *testing.T, o *observed) { o.dead[0].Value = []byte("changed") },
			`value "changed", want the input events/1/9 untouched`, 1},
		{"dead letter of nothing", func(t *testing.T, o *observed) {
			o.dead[0].Headers[2].Value = []byte("5000")
		}, `names input events/1/5000, which does not exist`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := perfect(t)
			tc.change(t, &o)
			v := check(o, nil)
			if len(v.wrong) != 1 || !strings.Contains(v.wrong[0], tc.want) {
				t.Fatalf("wrong %q, want exactly one containing %q", v.wrong, tc.want)
			}
			if len(v.lost) != tc.lost || v.duplicates != 0 {
				t.Fatalf("lost %q duplicates %d, want %d lost and no duplicate", v.lost, v.duplicates, tc.lost)
			}
		})
	}
}

func TestCheckFindsCommitsBehind(t *testing.T) {
	o := perfect(t)
	o.committed[2] -= 3
	delete(o.committed, 3)
	v := check(o, nil)
	want := []string{"partition 2: committed 97, high watermark 100 (-3)", "partition 3: nothing committed, high watermark 100"}
	if fmt.Sprint(v.behind) != fmt.Sprint(want) || v.ok() {
		t.Fatalf("behind %q, want %q", v.behind, want)
	}
}

// In exactly-once mode, a duplicate in the committed output is a
// violation even inside a kill window, where at-least-once allows it.
func TestCheckExactlyOnceAllowsNoDuplicateEvenInAKillWindow(t *testing.T) {
	o := perfect(t)
	o.output = append(o.output, o.output[outputFor(t, o, 3, 20)])
	o.dead = append(o.dead, o.dead[0]) // input 37 = 1/9
	windows := map[int32][]window{
		3: {{from: 20, to: 30, at: t0.Add(time.Second), cause: "SIGKILL p0.1"}},
		1: {{from: 0, to: 100, at: t0.Add(time.Second), cause: "SIGKILL p0.1"}},
	}
	if v := check(o, windows); !v.ok() || v.duplicates != 2 {
		t.Fatalf("at least once: verdict %+v, want ok with the 2 duplicates explained by the windows", v)
	}
	o.exactlyOnce = true
	v := check(o, windows)
	want := []string{"events/1/9 in the committed output 2 times (events-dlq/0/0 at 00:00:00.000, events-dlq/0/0 at 00:00:00.000), want exactly once",
		"events/3/20 in the committed output 2 times (events-enriched/2/82 at 03:04:05.083, events-enriched/2/82 at 03:04:05.083), want exactly once"}
	if v.ok() || v.duplicates != 2 || fmt.Sprint(v.unexplained) != fmt.Sprint(want) || fmt.Sprint(v.unexplainedAt) != "map[1:[9] 3:[20]]" {
		t.Fatalf("exactly once: duplicates %d unexplained %q at %v, want 2: %q", v.duplicates, v.unexplained, v.unexplainedAt, want)
	}
}

// In exactly-once mode, a result committed past its input's committed
// offset means a transaction committed outputs without their offsets;
// at least once, it is only work the next owner will redo.
func TestCheckExactlyOnceFindsResultsPastTheCommit(t *testing.T) {
	o := perfect(t)
	o.committed[2] = 98 // 2/98 and 2/99 (events 394 and 398) have outputs
	if v := check(o, nil); len(v.ahead) != 0 || len(v.behind) != 1 {
		t.Fatalf("at least once: ahead %q behind %q, want only partition 2 behind", v.ahead, v.behind)
	}
	o.exactlyOnce = true
	v := check(o, nil)
	want := []string{"events/2/98 has a committed result but the partition is committed at 98",
		"events/2/99 has a committed result but the partition is committed at 98"}
	if v.ok() || fmt.Sprint(v.ahead) != fmt.Sprint(want) || len(v.lost)+v.pending+v.duplicates != 0 {
		t.Fatalf("exactly once: ahead %q lost %q pending %d duplicates %d, want ahead exactly %q", v.ahead, v.lost, v.pending, v.duplicates, want)
	}
}
