package stagetest_test

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/pipeline/stagekit/stagetest"
	"github.com/sluice-go/sluice/stages"
)

// Words splits every line into its words: the stage under test, here
// built on stages.FlatMap (a stage written with stagekit.Transform is
// tested the same way).
func Words(in pipeline.Stream[string], opts ...stages.CallOption) pipeline.Stream[string] {
	split := func(_ context.Context, line string) ([]string, error) { return strings.Fields(line), nil }
	return stages.FlatMap(in, split, append([]stages.CallOption{stages.Name("Words")}, opts...)...)
}

// In a test file, the whole suite is one call in a test function:
//
//	func TestWordsConformance(t *testing.T) { stagetest.Run(t, words) }
//
// The example runs that test with testing.RunTests to show it passes.
func Example() {
	// Input i is the line "w<i>" repeated i%3 times: line 0 is empty
	// (no word), line 4 has one word, line 5 two. Each word names the
	// line it came from.
	words := stagetest.Stage[string, string]{
		Name:  "Words",
		Build: func(in pipeline.Stream[string]) pipeline.Stream[string] { return Words(in) },
		Input: func(i int) string { return strings.Repeat(fmt.Sprintf("w%d ", i), i%3) },
		Origin: func(w string) []int {
			var i int
			_, _ = fmt.Sscanf(w, "w%d", &i)
			return []int{i}
		},
		Fanout: func(line string) int { return len(strings.Fields(line)) },
	}
	defer quiet()()
	ok := testing.RunTests(func(_, _ string) (bool, error) { return true, nil }, []testing.InternalTest{
		{Name: "TestWordsConformance", F: func(t *testing.T) { stagetest.Run(t, words) }},
	})
	fmt.Println("conformance passed:", ok)
	// Output: conformance passed: true
}

// quiet turns go test's -v off while the example runs a test, so that
// only the example's own output is printed, and returns what restores it.
func quiet() (restore func()) {
	v := flag.Lookup("test.v")
	if v == nil {
		return func() {}
	}
	was := v.Value.String()
	_ = v.Value.Set("false")
	return func() { _ = v.Value.Set(was) }
}
