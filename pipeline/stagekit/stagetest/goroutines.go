package stagetest

import (
	"bytes"
	"runtime"
	"strings"
)

// goroutine is one goroutine of a stack dump: its header line ("goroutine
// 7 [chan receive, synctest bubble 1]:") and its stack.
type goroutine struct {
	id     string
	bubble string
	stack  string
}

// dump returns every goroutine (all) or the caller's.
func dump(all bool) []goroutine {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, all)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var gs []goroutine
	for _, block := range bytes.Split(buf, []byte("\n\n")) {
		header, _, _ := strings.Cut(string(block), "\n")
		rest, ok := strings.CutPrefix(header, "goroutine ")
		if !ok {
			continue
		}
		id, state, _ := strings.Cut(rest, " ")
		g := goroutine{id: id, stack: string(block)}
		if _, b, ok := strings.Cut(state, "synctest bubble "); ok {
			g.bubble, _, _ = strings.Cut(b, "]")
		}
		gs = append(gs, g)
	}
	return gs
}

// bubbleGoroutines returns the goroutines of the caller's synctest bubble,
// the caller's own excluded, by id.
func bubbleGoroutines() map[string]goroutine {
	self := dump(false)
	if len(self) == 0 || self[0].bubble == "" {
		return nil
	}
	out := map[string]goroutine{}
	for _, g := range dump(true) {
		if g.bubble == self[0].bubble && g.id != self[0].id {
			out[g.id] = g
		}
	}
	return out
}

// leftGoroutines returns the stacks of the goroutines of the caller's
// bubble that are not in before.
func leftGoroutines(before map[string]goroutine) []string {
	var left []string
	for id, g := range bubbleGoroutines() {
		if _, ok := before[id]; !ok {
			left = append(left, g.stack)
		}
	}
	return left
}
