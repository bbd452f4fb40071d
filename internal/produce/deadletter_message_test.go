package produce_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/produce"
)

// invalidRecord is a dead letter whose record has a key, a value, a
// header and a large offset; its headers slice has spare capacity.
func invalidRecord() sluice.DeadLetter {
	hs := make([]sluice.Header, 1, 8)
	hs[0] = sluice.Header{Key: "trace", Value: []byte("abc")}
	return sluice.DeadLetter{
		Record: sluice.Record{
			Topic: "orders", Partition: 7, Offset: 1234567890123,
			Key: []byte("k1"), Value: []byte("not json"), Headers: hs,
			Timestamp: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC),
		},
		Stage: "Map#2",
		Err:   sluice.Invalid(errors.New("bad json")),
	}
}

// The dead letter keeps the record's key, value and headers untouched
// and appends the sluice.dlq.* headers, in their documented order, with
// decimal positions and the error without Invalid's prefix.
func TestDeadLetterMessageHeaders(t *testing.T) {
	dl := invalidRecord()
	m := produce.DeadLetterMessage(dl)
	want := []sluice.Header{
		{Key: "trace", Value: []byte("abc")},
		{Key: "sluice.dlq.topic", Value: []byte("orders")},
		{Key: "sluice.dlq.partition", Value: []byte("7")},
		{Key: "sluice.dlq.offset", Value: []byte("1234567890123")},
		{Key: "sluice.dlq.error", Value: []byte("bad json")},
		{Key: "sluice.dlq.stage", Value: []byte("Map#2")},
	}
	if !slices.EqualFunc(m.Headers, want, headerEqual) {
		t.Errorf("headers %s, want %s", headerText(m.Headers), headerText(want))
	}
	if &m.Key[0] != &dl.Record.Key[0] || &m.Value[0] != &dl.Record.Value[0] {
		t.Error("the dead letter's key or value is not the record's own bytes")
	}
	if spare := dl.Record.Headers[:2][1]; spare.Key != "" || len(dl.Record.Headers) != 1 {
		t.Errorf("the record's headers were written into (spare slot %q, len %d)", spare.Key, len(dl.Record.Headers))
	}
}

// The sluice.dlq.* header values share one array, each capped at its
// own end: appending to one leaves the others as they were.
func TestDeadLetterHeaderValuesAreIndependent(t *testing.T) {
	m := produce.DeadLetterMessage(invalidRecord())
	for i := 1; i < len(m.Headers); i++ {
		h := m.Headers[i]
		if cap(h.Value) != len(h.Value) {
			t.Errorf("header %s has room to grow in place (len %d, cap %d)", h.Key, len(h.Value), cap(h.Value))
		}
		_ = append(h.Value, "XXXXXXXXXXXXXXXX"...)
	}
	if got := headerText(m.Headers[1:]); got != headerText(produce.DeadLetterMessage(invalidRecord()).Headers[1:]) {
		t.Errorf("headers after appending to each: %s", got)
	}
}

func headerEqual(a, b sluice.Header) bool {
	return a.Key == b.Key && string(a.Value) == string(b.Value)
}

func headerText(hs []sluice.Header) string {
	s := ""
	for _, h := range hs {
		s += fmt.Sprintf("[%s=%q]", h.Key, h.Value)
	}
	return s
}

// ErrText is the error's text with the "invalid input: " that
// sluice.Invalid adds cut out, wherever the mark sits in the chain:
// what the user wrapped around it stays.
func TestErrTextStripsTheInvalidPrefix(t *testing.T) {
	errMissing := errors.New("missing")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{sluice.Invalid(errors.New("bad json")), "bad json"},
		{sluice.Invalid(fmt.Errorf("field %q: %w", "id", errMissing)), `field "id": missing`},
		{fmt.Errorf("order 7: %w", sluice.Invalid(errors.New("bad json"))), "order 7: bad json"},
		{sluice.Permanent(sluice.Invalid(errors.New("bad json"))), "bad json"},
		{errors.Join(errors.New("two problems"), sluice.Invalid(errMissing)), "two problems\nmissing"},
		{sluice.Invalid(sluice.Invalid(errors.New("bad json"))), "invalid input: bad json"}, // the innermost mark's prefix only
		{errors.New("plain"), "plain"},
		{fmt.Errorf("invalid input: %w", errMissing), "invalid input: missing"}, // not marked: left alone
	} {
		if got := produce.ErrText(tc.err); got != tc.want {
			t.Errorf("ErrText(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
