package engine

import (
	"fmt"

	"github.com/sluice-go/sluice"
)

// dlLimiter applies a DeadLetterLimit to one partition's completed records,
// in offset order. It is used under the tracker's lock.
type dlLimiter struct {
	l           DeadLetterLimit
	consecutive int
	window      []bool // ring of the last Window outcomes (true: invalid)
	pos         int
	seen        int
	invalid     int
}

func newDLLimiter(l DeadLetterLimit) *dlLimiter {
	if l.MaxConsecutive == 0 && l.MaxRatio == 0 {
		return nil
	}
	d := &dlLimiter{l: l}
	if l.MaxRatio > 0 {
		d.window = make([]bool, l.Window)
	}
	return d
}

// observe records one completed record and returns an error when a limit
// tripped.
func (d *dlLimiter) observe(invalid bool, rec *Record) error {
	if invalid {
		d.consecutive++
	} else {
		d.consecutive = 0
	}
	if d.l.MaxConsecutive > 0 && d.consecutive > d.l.MaxConsecutive {
		return fmt.Errorf("sluice: %w on %s/%d at offset %d: %d invalid records in a row (MaxConsecutive %d)",
			sluice.ErrDeadLetterLimit, rec.Topic, rec.Partition, rec.Offset, d.consecutive, d.l.MaxConsecutive)
	}
	if d.window == nil {
		return nil
	}
	if d.window[d.pos] {
		d.invalid--
	}
	d.window[d.pos] = invalid
	if invalid {
		d.invalid++
	}
	d.pos = (d.pos + 1) % len(d.window)
	d.seen++
	if d.seen >= len(d.window) {
		if ratio := float64(d.invalid) / float64(len(d.window)); ratio > d.l.MaxRatio {
			return fmt.Errorf("sluice: %w on %s/%d at offset %d: %d of the last %d records were invalid (MaxRatio %g)",
				sluice.ErrDeadLetterLimit, rec.Topic, rec.Partition, rec.Offset, d.invalid, len(d.window), d.l.MaxRatio)
		}
	}
	return nil
}
