package enginetest

import (
	"runtime"
	"strings"
)

// GoroutinesIn counts the goroutines of the process whose stack holds a
// call of fn, given as the stack dump writes it
// ("engine.(*graph).runDeadLetters(").
func GoroutinesIn(fn string) int {
	count := 0
	for _, g := range goroutineStacks() {
		if strings.Contains(g, fn) {
			count++
		}
	}
	return count
}

// BubbleGoroutinesIn is GoroutinesIn for the goroutines of the caller's
// synctest bubble only, so that goroutines of other tests still on their
// way out do not count. It panics outside a bubble.
func BubbleGoroutinesIn(fn string) int {
	self := make([]byte, 256)
	header, _, _ := strings.Cut(string(self[:runtime.Stack(self, false)]), "\n")
	_, bubble, ok := strings.Cut(header, ", synctest bubble ")
	if !ok {
		panic("enginetest.BubbleGoroutinesIn called outside a synctest bubble")
	}
	bubble = ", synctest bubble " + bubble // "..., synctest bubble 7]:"
	count := 0
	for _, g := range goroutineStacks() {
		header, _, _ := strings.Cut(g, "\n")
		if strings.HasSuffix(header, bubble) && strings.Contains(g, fn) {
			count++
		}
	}
	return count
}

// goroutineStacks returns the stack of every goroutine, one string each.
func goroutineStacks() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(string(buf[:n]), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
	}
}
