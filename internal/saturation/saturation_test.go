package saturation_test

import (
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/saturation"
)

// silent is a Group that does not tell whether it is saturated.
type silent struct{ sluice.Group }

// telling is a Group that tells.
type telling struct {
	sluice.Group
	full bool
}

func (t telling) Saturated() bool { return t.full }

func TestOfAsksAGroupThatTells(t *testing.T) {
	if saturation.Of(silent{}) {
		t.Error("a Group that does not tell reads as saturated")
	}
	if saturation.Of(telling{}) {
		t.Error("a Group telling false reads as saturated")
	}
	if !saturation.Of(telling{full: true}) {
		t.Error("a Group telling true reads as not saturated")
	}
}
