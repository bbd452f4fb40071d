package enginetest

import (
	"runtime"
	"strings"
)

// GoroutinesIn counts the goroutines whose stack holds a call of fn,
// given as the stack dump writes it ("engine.(*graph).runDeadLetters(").
func GoroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), fn)
		}
		buf = make([]byte, 2*len(buf))
	}
}
