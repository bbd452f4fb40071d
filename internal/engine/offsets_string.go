package engine

import (
	"fmt"
	"slices"
	"strings"
)

// OffsetsString renders offsets as [topic/partition@next ...], sorted,
// for errors.
func OffsetsString(offs []Offset) string {
	parts := make([]string, len(offs))
	for i, o := range offs {
		parts[i] = fmt.Sprintf("%s/%d@%d", o.Topic, o.Partition, o.Next)
	}
	slices.Sort(parts)
	return "[" + strings.Join(parts, " ") + "]"
}
