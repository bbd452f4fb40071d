package engine

import (
	"math"
	"math/big"
	"testing"
)

func TestThreeQuartersIsExactUpToMaxInt64(t *testing.T) {
	for _, n := range []int64{0, 1, 2, 3, 4, 5, 7, 1000, 1<<62 - 1, 1 << 62, math.MaxInt64 - 1, math.MaxInt64} {
		want := new(big.Int).Div(new(big.Int).Mul(big.NewInt(n), big.NewInt(3)), big.NewInt(4))
		if got := threeQuarters(n); !want.IsInt64() || got != want.Int64() {
			t.Errorf("threeQuarters(%d) = %d, want %v", n, got, want)
		}
	}
}
