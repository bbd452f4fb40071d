package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// buildExample builds cmd/example once into dir.
func buildExample(ctx context.Context, dir string, race bool) (string, error) {
	gomod, err := goEnv(ctx, "GOMOD")
	if err != nil || gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("run the chaos suite from inside the sluice module (go env GOMOD = %q, %v)", gomod, err)
	}
	bin := filepath.Join(dir, "example")
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	t := time.Now()
	if out, err := command(ctx, filepath.Dir(gomod), "go", append(args, "./cmd/example")...); err != nil {
		return "", fmt.Errorf("go build ./cmd/example: %v\n%s", err, out)
	}
	fmt.Printf("chaos: built cmd/example in %v\n", time.Since(t).Round(100*time.Millisecond))
	return bin, nil
}

// goEnv returns one value of go env.
func goEnv(ctx context.Context, name string) (string, error) {
	out, err := command(ctx, "", "go", "env", name)
	return strings.TrimSpace(out), err
}

// command runs name with args in dir and returns its combined output.
func command(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}
