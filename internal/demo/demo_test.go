package demo

import (
	"encoding/json"
	"fmt"
	"testing"
)

func TestValueIsMalformedExactlyWhenIndexSaysSo(t *testing.T) {
	bad := 0
	for i := range 10_000 {
		v := Value(i)
		if IsMalformed(v) != IsMalformedIndex(i) {
			t.Fatalf("Value(%d) = %s: IsMalformed %v, IsMalformedIndex %v", i, v, IsMalformed(v), IsMalformedIndex(i))
		}
		if IsMalformedIndex(i) {
			bad++
			continue
		}
		var ev struct {
			ID     string  `json:"id"`
			Amount float64 `json:"amount"`
		}
		if err := json.Unmarshal(v, &ev); err != nil || ev.ID != fmt.Sprintf("e-%d", i) {
			t.Fatalf("Value(%d) = %s: id %q, err %v", i, v, ev.ID, err)
		}
	}
	if bad != 100 {
		t.Fatalf("%d malformed events in 10000, want 100", bad)
	}
}

func TestMalformedIsACopy(t *testing.T) {
	m := Malformed()
	m[0] = "changed"
	if Malformed()[0] == "changed" || !IsMalformed([]byte(`not json at all`)) {
		t.Fatal("Malformed returned the package's own slice")
	}
}
