// Package procstatus reads this process's memory figures from
// /proc/self/status (Linux), for the bench and chaos tools, which measure
// the peak resident memory (VmHWM) of the consumers they run.
package procstatus

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// KiB returns one "Name:   N kB" field of /proc/self/status, such as
// VmHWM (the peak resident set) or VmRSS, in KiB. It fails when the file
// cannot be read, has no such field, or the field is not a number.
func KiB(field string) (int64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("/proc/self/status: %w", err)
	}
	for l := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			v = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB"))
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/self/status %s %q: %w", field, v, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("/proc/self/status has no %s", field)
}
