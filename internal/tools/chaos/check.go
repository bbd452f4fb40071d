package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/demo"
	"github.com/sluice-go/sluice/sink"
)

// observed is what a scenario left on the broker, read once every consumer
// has stopped: the topics' contents and the group's commits.
type observed struct {
	inputTopic string
	input      []sluice.Record // every record of the input topic
	output     []sluice.Record // every record of the output topic
	dead       []sluice.Record // every record of the dead-letter topic
	committed  map[int32]int64 // the group's committed offset per input partition (absent: none)
	high       map[int32]int64 // the input partitions' high watermarks
	// exactlyOnce: output and dead are the committed records only (read
	// with read_committed, readcommitted.go), and each input must have
	// exactly one result there: no duplicate is explained by a kill, and
	// no result may be committed past its input's committed offset.
	exactlyOnce bool
	// rowsOnce (-sink postgres): output holds the rows of the events
	// table, which must hold each valid input exactly once, kills
	// included; dead letters are sent at least once, and their copies
	// are counted (verdict.deadDuplicates), not violations.
	rowsOnce bool
}

// window is a range of input offsets [from, to) of one partition that an
// unclean stop (a SIGKILL) may have processed without committing: the
// committed offset and the high watermark at the moment of the kill. A
// duplicate inside a window is at-least-once delivery working as
// documented; one outside every window is a bug.
type window struct {
	from, to int64
	at       time.Time // when the process was killed
	cause    string    // e.g. "SIGKILL p1.2"
}

// verdict is what check found. Counts are exact; the string slices hold
// every finding (callers print the first few).
type verdict struct {
	inputs, valid, malformed int
	outputs, deadLetters     int

	// lost: inputs below their partition's committed offset that are
	// neither in the output (valid) nor dead-lettered (malformed), one
	// line each: the commit skipped them.
	lost []string
	// lostAt lists the offsets of the lost inputs by partition, in order.
	lostAt map[int32][]int64
	// pending counts the inputs at or past the committed offset without
	// an output or dead letter: not processed yet, which is only a
	// violation through behind.
	pending int
	// duplicates counts the copies beyond the first of every output and
	// dead letter; unexplained are those outside every kill window (in
	// exactly-once mode: all of them; with rowsOnce: every second row).
	duplicates  int
	unexplained []string
	// unexplainedAt lists the offsets of the unexplained duplicates by
	// partition, in order.
	unexplainedAt map[int32][]int64
	// maxDupAge is, over the explained duplicates, the longest time
	// between the first copy's output and the kill that caused the
	// redelivery: the work a kill loses is this recent. Outputs only
	// (dead letters keep the input's timestamp).
	maxDupAge time.Duration
	// wrong: outputs or dead letters that do not derive from their input.
	wrong []string
	// behind: partitions whose committed offset is not the high watermark.
	behind []string
	// deadDuplicates (rowsOnce only) counts the dead letters' copies
	// beyond the first, which are not violations there; deadOutside
	// lists those outside every kill window.
	deadDuplicates int
	deadOutside    []string
	// ahead (exactly-once mode only): inputs at or past their
	// partition's committed offset whose result is committed: a
	// transaction committed outputs without their input offsets.
	ahead []string
}

// ok reports whether the verdict has no violation.
func (v verdict) ok() bool {
	return len(v.lost) == 0 && len(v.unexplained) == 0 && len(v.wrong) == 0 && len(v.behind) == 0 && len(v.ahead) == 0
}

type inputRef struct {
	partition int32
	offset    int64
}

func (r inputRef) String() string { return fmt.Sprintf("%d/%d", r.partition, r.offset) }

// check compares the output and dead-letter topics with the input, record
// by record: every valid input must have an output derived from it
// (cmd/example's enrich: the input's fields, amount_cents, and source =
// "topic/partition/offset" of the input, keyed by id), every malformed one
// (demo.IsMalformed) an untouched dead letter naming it, at least below
// the committed offset (what is past it counts as pending); copies beyond the
// first are duplicates, which must lie in windows[partition] (in
// exactly-once mode there must be none, and no result past the committed
// offset; with rowsOnce no second row of a valid input, while copies of
// dead letters are only counted); and every partition must be committed
// up to its high watermark.
func check(o observed, windows map[int32][]window) verdict {
	var v verdict
	inputs := make(map[inputRef]sluice.Record, len(o.input))
	for _, r := range o.input {
		inputs[inputRef{r.Partition, r.Offset}] = r
		if demo.IsMalformed(r.Value) {
			v.malformed++
		} else {
			v.valid++
		}
	}
	v.inputs = len(o.input)
	v.outputs, v.deadLetters = len(o.output), len(o.dead)

	firstOut := map[inputRef]time.Time{} // first output's timestamp
	copies := map[inputRef]int{}         // correct outputs and dead letters
	copiesAt := map[inputRef][]string{}  // where they are: topic/partition/offset and timestamp
	wrongly := map[inputRef]bool{}       // has a wrong output (reported once, as wrong, not as lost)
	for _, r := range o.output {
		ref, err := checkOutput(o.inputTopic, r, inputs)
		if err != nil {
			v.wrong = append(v.wrong, fmt.Sprintf("output %d/%d (key %q): %v", r.Partition, r.Offset, r.Key, err))
			if ref != nil {
				wrongly[*ref] = true
			}
			continue
		}
		if first, seen := firstOut[*ref]; !seen || r.Timestamp.Before(first) {
			firstOut[*ref] = r.Timestamp
		}
		copies[*ref]++
		copiesAt[*ref] = append(copiesAt[*ref], position(r))
	}
	for _, r := range o.dead {
		ref, err := checkDeadLetter(o.inputTopic, r, inputs)
		if err != nil {
			v.wrong = append(v.wrong, fmt.Sprintf("dead letter %d/%d: %v", r.Partition, r.Offset, err))
			continue
		}
		copies[ref]++
		copiesAt[ref] = append(copiesAt[ref], position(r))
	}

	refs := slices.SortedFunc(maps.Keys(inputs), func(a, b inputRef) int {
		if a.partition != b.partition {
			return int(a.partition - b.partition)
		}
		return int(a.offset - b.offset)
	})
	for _, ref := range refs {
		n := copies[ref]
		if n == 0 && wrongly[ref] {
			continue
		}
		if n == 0 && ref.offset >= o.committed[ref.partition] {
			v.pending++
			continue
		}
		if n > 0 && o.exactlyOnce && ref.offset >= o.committed[ref.partition] {
			v.ahead = append(v.ahead, fmt.Sprintf("%s/%s has a committed result but the partition is committed at %d",
				o.inputTopic, ref, o.committed[ref.partition]))
		}
		if n == 0 {
			kind := "valid, no output"
			if demo.IsMalformed(inputs[ref].Value) {
				kind = "malformed, no dead letter"
			}
			v.lost = append(v.lost, fmt.Sprintf("%s/%s (%s)", o.inputTopic, ref, kind))
			if v.lostAt == nil {
				v.lostAt = map[int32][]int64{}
			}
			v.lostAt[ref.partition] = append(v.lostAt[ref.partition], ref.offset)
			continue
		}
		if n == 1 {
			continue
		}
		v.duplicates += n - 1
		w, ok := covering(windows[ref.partition], ref.offset)
		malformed := demo.IsMalformed(inputs[ref].Value)
		switch {
		case o.exactlyOnce:
			v.unexplain(ref, fmt.Sprintf("%s/%s in the committed output %d times (%s), want exactly once", o.inputTopic, ref, n,
				strings.Join(copiesAt[ref], ", ")))
		case o.rowsOnce && !malformed:
			v.unexplain(ref, fmt.Sprintf("%s/%s has %d rows (%s), want exactly one", o.inputTopic, ref, n,
				strings.Join(copiesAt[ref], ", ")))
		case o.rowsOnce:
			v.deadDuplicates += n - 1
			if !ok {
				v.deadOutside = append(v.deadOutside, fmt.Sprintf("%s/%s dead-lettered %d times (%s)", o.inputTopic, ref, n,
					strings.Join(copiesAt[ref], ", ")))
			}
		case !ok:
			v.unexplain(ref, fmt.Sprintf("%s/%s processed %d times, outside every kill window", o.inputTopic, ref, n))
		default:
			if first, ok := firstOut[ref]; ok {
				v.maxDupAge = max(v.maxDupAge, w.at.Sub(first))
			}
		}
	}

	for _, p := range slices.Sorted(maps.Keys(o.high)) {
		hw := o.high[p]
		c, ok := o.committed[p]
		switch {
		case !ok && hw > 0:
			v.behind = append(v.behind, fmt.Sprintf("partition %d: nothing committed, high watermark %d", p, hw))
		case ok && c != hw:
			v.behind = append(v.behind, fmt.Sprintf("partition %d: committed %d, high watermark %d (%+d)", p, c, hw, c-hw))
		}
	}
	return v
}

// position names where a result is: topic/partition/offset, and its
// timestamp (the producer's create time).
func position(r sluice.Record) string {
	return fmt.Sprintf("%s/%d/%d at %s", r.Topic, r.Partition, r.Offset, r.Timestamp.UTC().Format("15:04:05.000"))
}

// unexplain records a duplicate of ref that no kill explains.
func (v *verdict) unexplain(ref inputRef, what string) {
	v.unexplained = append(v.unexplained, what)
	if v.unexplainedAt == nil {
		v.unexplainedAt = map[int32][]int64{}
	}
	v.unexplainedAt[ref.partition] = append(v.unexplainedAt[ref.partition], ref.offset)
}

// covering returns the window that holds offset, the latest kill first.
func covering(ws []window, offset int64) (window, bool) {
	for i := len(ws) - 1; i >= 0; i-- {
		if ws[i].from <= offset && offset < ws[i].to {
			return ws[i], true
		}
	}
	return window{}, false
}

// checkOutput finds the input an output record derives from (its "source"
// field) and checks that the output is exactly enrich(input). It returns
// the input (nil when the output names none, or a malformed one) and what
// is wrong with the output: a wrong output of an existing valid input is
// reported once, as wrong, not also as that input lost.
func checkOutput(topic string, r sluice.Record, inputs map[inputRef]sluice.Record) (*inputRef, error) {
	var out map[string]any
	if err := json.Unmarshal(r.Value, &out); err != nil {
		return nil, fmt.Errorf("value %q is not a JSON object: %v", r.Value, err)
	}
	src, _ := out["source"].(string)
	ref, err := parseSource(topic, src)
	if err != nil {
		return nil, err
	}
	in, ok := inputs[ref]
	if !ok {
		return nil, fmt.Errorf("source %q names no input record", src)
	}
	if demo.IsMalformed(in.Value) {
		return nil, fmt.Errorf("source %q is a malformed input (%q), which must be dead-lettered", src, in.Value)
	}
	var fields map[string]any
	if err := json.Unmarshal(in.Value, &fields); err != nil {
		return &ref, fmt.Errorf("input %s is not JSON: %v", src, err)
	}
	want := maps.Clone(fields)
	amount, _ := fields["amount"].(float64)
	want["amount_cents"] = float64(int64(math.Round(amount * 100)))
	want["source"] = src
	if !reflect.DeepEqual(out, want) {
		return &ref, fmt.Errorf("value %s, want the fields of input %s plus amount_cents and source: %v", r.Value, src, want)
	}
	if id, _ := fields["id"].(string); string(r.Key) != id {
		return &ref, fmt.Errorf("key %q, want the input's id %q", r.Key, id)
	}
	return &ref, nil
}

// checkDeadLetter finds the input a dead letter names in its headers and
// checks that it is that malformed input, untouched.
func checkDeadLetter(topic string, r sluice.Record, inputs map[inputRef]sluice.Record) (inputRef, error) {
	h := map[string]string{}
	for _, x := range r.Headers {
		h[x.Key] = string(x.Value)
	}
	if h[sink.HeaderTopic] != topic {
		return inputRef{}, fmt.Errorf("header %s = %q, want %q", sink.HeaderTopic, h[sink.HeaderTopic], topic)
	}
	p, err1 := strconv.ParseInt(h[sink.HeaderPartition], 10, 32)
	off, err2 := strconv.ParseInt(h[sink.HeaderOffset], 10, 64)
	if err1 != nil || err2 != nil {
		return inputRef{}, fmt.Errorf("headers %s = %q, %s = %q: not numbers", sink.HeaderPartition, h[sink.HeaderPartition],
			sink.HeaderOffset, h[sink.HeaderOffset])
	}
	ref := inputRef{int32(p), off}
	in, ok := inputs[ref]
	switch {
	case !ok:
		return inputRef{}, fmt.Errorf("names input %s/%s, which does not exist", topic, ref)
	case !demo.IsMalformed(in.Value):
		return inputRef{}, fmt.Errorf("input %s/%s is valid (%s) but was dead-lettered (%s: %s)", topic, ref, in.Value,
			sink.HeaderError, h[sink.HeaderError])
	case string(r.Value) != string(in.Value):
		return inputRef{}, fmt.Errorf("value %q, want the input %s/%s untouched: %q", r.Value, topic, ref, in.Value)
	case h[sink.HeaderStage] != "decode" || h[sink.HeaderError] == "":
		return inputRef{}, fmt.Errorf("stage %q error %q, want stage decode and an error", h[sink.HeaderStage], h[sink.HeaderError])
	}
	return ref, nil
}

// parseSource parses enrich's "topic/partition/offset".
func parseSource(topic, src string) (inputRef, error) {
	rest, ok := strings.CutPrefix(src, topic+"/")
	ps, os, ok2 := strings.Cut(rest, "/")
	p, err1 := strconv.ParseInt(ps, 10, 32)
	off, err2 := strconv.ParseInt(os, 10, 64)
	if !ok || !ok2 || err1 != nil || err2 != nil {
		return inputRef{}, fmt.Errorf("source %q, want %s/<partition>/<offset>", src, topic)
	}
	return inputRef{int32(p), off}, nil
}
