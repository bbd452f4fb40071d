package stages_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// misuses are options given to stages they do not fit, each with a
// fragment of the compiler's error. They compiled (and were ignored, or
// panicked in the builder) before options were typed per stage.
var misuses = map[string]struct{ code, want string }{
	"retry on Filter": {`stages.Discard(stages.Filter(in, func(sluice.Record) bool { return true }, stages.Retry(sluice.RetryPolicy{})))`,
		"RetryOption does not implement stages.Option"},
	"retry on Route": {`stages.Discard(stages.Route(in, 1, func(sluice.Record) int { return 0 }, stages.Retry(sluice.RetryPolicy{}))[0])`,
		"RetryOption does not implement stages.Option"},
	"retry on Discard": {`stages.Discard(in, stages.Retry(sluice.RetryPolicy{}))`,
		"RetryOption does not implement stages.Option"},
	"retry on Batch": {`stages.Discard(stages.Batch(in, 2, 0, stages.Retry(sluice.RetryPolicy{})))`,
		"RetryOption does not implement stages.Option"},
	"key of the wrong type": {`stages.Discard(stages.PoolByKey(in, 2, func(s string) string { return s }, func(_ context.Context, r sluice.Record) (int, error) { return 0, nil }))`,
		"PoolByKey"},
	"a key on Each": {`stages.Each(in, func(context.Context, sluice.Record) error { return nil }, stages.ByKey(func(r sluice.Record) string { return "" }))`,
		"undefined: stages.ByKey"},
	"a Limiter on Filter": {`stages.Discard(stages.Filter(in, func(sluice.Record) bool { return true }, stages.NewLimiter(2)))`,
		"Limiter does not implement stages.Option"},
	"a weight on Map": {`stages.Discard(stages.Map(in, func(_ context.Context, r sluice.Record) (int, error) { return 0, nil }, stages.Weight(func(int) int { return 1 })))`,
		"undefined: stages.Weight"},
}

// Every misuse of an option is a compile error: each snippet is built in a
// module of its own that uses this one.
func TestMisusedOptionsDoNotCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module with the go command")
	}
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(here))
	dir := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module misuse\n\ngo 1.26\n\nrequire github.com/sluice-go/sluice v0.0.0\n\nreplace github.com/sluice-go/sluice => "+root+"\n")
	write("go.sum", string(sum))
	dirs := map[string]string{}
	i := 0
	for name, m := range misuses {
		i++
		pkg := "p" + string(rune('a'+i))
		dirs[name] = pkg
		write(filepath.Join(pkg, "p.go"), `package `+pkg+`

import (
	"context"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

var _ = context.Background

func build(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
	return `+m.code+`
}
`)
	}
	cmd := exec.Command("go", "vet", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("every snippet compiled:\n%s", out)
	}
	// The go command prints each package's errors after a "# misuse/pkg"
	// line.
	byPkg := map[string]string{}
	var cur string
	for line := range strings.Lines(string(out)) {
		if rest, ok := strings.CutPrefix(line, "# misuse/"); ok {
			cur = strings.Fields(rest)[0]
			continue
		}
		byPkg[cur] += line
	}
	for name, m := range misuses {
		if got := byPkg[dirs[name]]; !strings.Contains(got, m.want) {
			t.Errorf("%s: %s\ncompiler said:\n%s\nwant an error mentioning %q", name, m.code, got, m.want)
		}
	}
}
