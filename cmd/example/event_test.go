package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/demo"
)

func TestDecodeRejectsEveryMalformedKind(t *testing.T) {
	for _, v := range demo.Malformed() {
		if _, err := decode(context.Background(), sluice.Record{Value: []byte(v)}); !sluice.IsInvalid(err) {
			t.Errorf("decode(%s) = %v, want an Invalid error", v, err)
		}
	}
	for _, v := range []string{`null`, `"str"`, `{"id":null,"amount":1}`, `{"id":"a","amount":null}`} {
		if _, err := decode(context.Background(), sluice.Record{Value: []byte(v)}); !sluice.IsInvalid(err) {
			t.Errorf("decode(%s) = %v, want an Invalid error", v, err)
		}
	}
}

func TestEnrichKeepsFieldsAndAddsCentsAndSource(t *testing.T) {
	r := sluice.Record{Topic: "events", Partition: 3, Offset: 41,
		Value: []byte(`{"id":"e-1","amount":12.345,"user":"u","extra":[1,2]}`)}
	ev, err := decode(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	m, err := enrich(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Key) != "e-1" {
		t.Fatalf("key %q, want e-1", m.Key)
	}
	var got map[string]any
	if err := json.Unmarshal(m.Value, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"id": "e-1", "amount": 12.345, "user": "u", "extra": []any{1.0, 2.0},
		"amount_cents": 1235.0, "source": "events/3/41"}
	if len(got) != len(want) {
		t.Fatalf("output %v, want %v", got, want)
	}
	for k, v := range want {
		if k == "extra" {
			continue
		}
		if got[k] != v {
			t.Fatalf("output[%q] = %v, want %v", k, got[k], v)
		}
	}
}
