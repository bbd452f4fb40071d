// Package goroutinetest counts goroutines by the function they run, for
// tests that check which goroutines a partition's graph starts and that
// they end. It imports nothing of the module, so the runtime's own
// package tests can use it.
package goroutinetest

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// Count counts the goroutines of the process whose stack holds a call of
// fn, given as the stack dump writes it ("engine.(*graph).runDeadLetters(").
func Count(fn string) int {
	count := 0
	for _, g := range stacks() {
		if strings.Contains(g, fn) {
			count++
		}
	}
	return count
}

// CountInBubble is Count for the goroutines of the caller's synctest
// bubble only, so that goroutines of other tests still on their way out do
// not count. It panics outside a bubble.
func CountInBubble(fn string) int {
	self := make([]byte, 256)
	header, _, _ := strings.Cut(string(self[:runtime.Stack(self, false)]), "\n")
	_, bubble, ok := strings.Cut(header, ", synctest bubble ")
	if !ok {
		panic("goroutinetest.CountInBubble called outside a synctest bubble")
	}
	bubble = ", synctest bubble " + bubble // "..., synctest bubble 7]:"
	count := 0
	for _, g := range stacks() {
		header, _, _ := strings.Cut(g, "\n")
		if strings.HasSuffix(header, bubble) && strings.Contains(g, fn) {
			count++
		}
	}
	return count
}

// AwaitGone waits until no goroutine of the process runs fn, failing t
// after 10s: under real scheduling, the goroutine that ended a graph may
// still be on its way out when the test's Run returned.
func AwaitGone(t testing.TB, fn string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); Count(fn) > 0; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines still running %s after 10s", Count(fn), fn)
		}
	}
}

// stacks returns the stack of every goroutine, one string each.
func stacks() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(string(buf[:n]), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
	}
}
