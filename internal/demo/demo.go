// Package demo is the demo workload shared by cmd/example (which produces
// it to its embedded broker) and the chaos suite in internal/tools/chaos (which
// produces it while it restarts and kills cmd/example processes, then
// checks what came out). Everything here is deterministic and safe for
// concurrent use.
package demo

import (
	"bytes"
	"fmt"
	"time"
)

// CommitInterval is how often cmd/example commits (source.Config's
// CommitInterval). The chaos suite bounds the work a killed process can
// leave uncommitted by it, so the two must agree.
const CommitInterval = 250 * time.Millisecond

// malformed are the kinds of bad input the workload mixes in; cmd/example
// dead-letters every one of them.
var malformed = []string{
	`not json at all`,
	`[1, 2, 3]`,
	`{"amount": 12.5}`,
	`{"id": "", "amount": 1}`,
	`{"id": 42, "amount": 1}`,
	`{"id": "e-x", "amount": "12"}`,
	`{"id": "e-y"}`,
	`{"id": "e-z", "amount": 3, "user": 7}`,
}

// Malformed returns a copy of the malformed values Value mixes in.
func Malformed() []string { return append([]string(nil), malformed...) }

// Value returns the i-th event of the workload (i ≥ 0): event i is
// malformed when i%100 == 37 (1%); otherwise it is a JSON object with the
// unique string "id" "e-<i>", a number "amount" and, for two events in
// three, a string "user".
func Value(i int) []byte {
	if IsMalformedIndex(i) {
		return []byte(malformed[(i/100)%len(malformed)])
	}
	if i%3 == 0 {
		return fmt.Appendf(nil, `{"id":"e-%d","amount":%d.%02d}`, i, i%500, i%100)
	}
	return fmt.Appendf(nil, `{"id":"e-%d","amount":%d.%02d,"user":"u-%d"}`, i, i%500, i%100, i%97)
}

// IsMalformedIndex reports whether Value(i) is malformed.
func IsMalformedIndex(i int) bool { return i%100 == 37 }

// IsMalformed reports whether v is one of the malformed values Value mixes
// in. A value Value produced is malformed exactly when IsMalformed says so.
func IsMalformed(v []byte) bool {
	for _, m := range malformed {
		if bytes.Equal(v, []byte(m)) {
			return true
		}
	}
	return false
}
