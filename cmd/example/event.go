package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/sink"
)

// event is a decoded input record: its fields as they came, plus what the
// pipeline checked.
type event struct {
	fields map[string]json.RawMessage
	id     string
	amount float64
	user   *string // nil when the event has no "user"
	source string  // the input record: "topic/partition/offset"

	// The input record's coordinates, which source renders.
	topic     string
	partition int32
	offset    int64
}

// decode parses and validates one input record. Anything that is not a
// JSON object with a non-empty string "id", a number "amount" and, if
// present, a string "user" is invalid and goes to the dead-letter topic.
func decode(_ context.Context, r sluice.Record) (event, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(r.Value, &fields); err != nil || fields == nil {
		return event{}, sluice.Invalid(errors.New("value is not a JSON object"))
	}
	ev := event{fields: fields, source: fmt.Sprintf("%s/%d/%d", r.Topic, r.Partition, r.Offset),
		topic: r.Topic, partition: r.Partition, offset: r.Offset}
	raw, ok := fields["id"]
	if !ok {
		return event{}, sluice.Invalid(errors.New(`"id" is missing`))
	}
	if err := json.Unmarshal(raw, &ev.id); err != nil || raw[0] != '"' {
		return event{}, sluice.Invalid(errors.New(`"id" is not a string`))
	}
	if ev.id == "" {
		return event{}, sluice.Invalid(errors.New(`"id" is empty`))
	}
	raw, ok = fields["amount"]
	if !ok {
		return event{}, sluice.Invalid(errors.New(`"amount" is missing`))
	}
	if err := json.Unmarshal(raw, &ev.amount); err != nil || raw[0] == 'n' {
		return event{}, sluice.Invalid(errors.New(`"amount" is not a number`))
	}
	if raw, ok := fields["user"]; ok {
		var user string
		if err := json.Unmarshal(raw, &user); err != nil || raw[0] != '"' {
			return event{}, sluice.Invalid(errors.New(`"user" is not a string`))
		}
		ev.user = &user
	}
	return ev, nil
}

// cents is amount in cents, rounded to the nearest.
func cents(amount float64) int64 { return int64(math.Round(amount * 100)) }

// enrich adds amount_cents and source and renders the output message.
func enrich(_ context.Context, ev event) (sink.Message, error) {
	amountCents, err := json.Marshal(cents(ev.amount))
	if err != nil {
		return sink.Message{}, sluice.Invalid(fmt.Errorf("amount %v has no cents value: %w", ev.amount, err))
	}
	src, _ := json.Marshal(ev.source)
	out := make(map[string]json.RawMessage, len(ev.fields)+2)
	for k, v := range ev.fields {
		out[k] = v
	}
	out["amount_cents"] = amountCents
	out["source"] = src
	value, err := json.Marshal(out)
	if err != nil {
		return sink.Message{}, err
	}
	return sink.Message{Key: []byte(ev.id), Value: value}, nil
}
