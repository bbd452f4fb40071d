package procstatus

import (
	"strings"
	"testing"
)

// The peak resident set is at least the resident set read before it, and both are more
// than nothing for a running test binary.
func TestKiBReadsThePeakAndCurrentResidentSet(t *testing.T) {
	rss, err := KiB("VmRSS") // first: the set may grow between the reads
	if err != nil {
		t.Fatal(err)
	}
	hwm, err := KiB("VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	if rss <= 0 || hwm < rss {
		t.Fatalf("VmHWM %d KiB, VmRSS %d KiB: want 0 < VmRSS <= VmHWM", hwm, rss)
	}
}

// A field the file does not have is an error naming it, not a zero.
func TestKiBOfAMissingFieldFails(t *testing.T) {
	_, err := KiB("NoSuchField")
	if err == nil || !strings.Contains(err.Error(), "NoSuchField") {
		t.Fatalf("KiB(NoSuchField) = %v, want an error naming the field", err)
	}
}
