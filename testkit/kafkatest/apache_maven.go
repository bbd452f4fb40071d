//go:build linux

package kafkatest

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sluice-go/sluice/internal/tiedproc"
)

// apachePOM is the Maven project that pins the Apache Kafka broker and its
// logging backend. Its dependencies' classpath is what the broker runs on.
//
//go:embed apache/pom.xml
var apachePOM []byte

// ApacheKafkaVersion is the version of Apache Kafka that the helpers start:
// the one apache/pom.xml pins.
const ApacheKafkaVersion = "4.4.0"

// cacheDir is where the helper keeps the pom, the resolved classpath and
// its lock: $SLUICE_KAFKA_CACHE, else <user cache dir>/sluice-kafka. One
// subdirectory per pom content, so a changed pom resolves again.
func cacheDir() (string, error) {
	base := os.Getenv("SLUICE_KAFKA_CACHE")
	if base == "" {
		uc, err := os.UserCacheDir()
		if err != nil {
			uc = os.TempDir()
		}
		base = filepath.Join(uc, "sluice-kafka")
	}
	sum := sha256.Sum256(apachePOM)
	dir := filepath.Join(base, ApacheKafkaVersion+"-"+hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("kafkatest: cache directory: %w", err)
	}
	return dir, nil
}

// apacheClasspath returns the Java classpath of the broker. The first call
// on a machine runs Maven (dependency:build-classpath), which downloads the
// jars into the local Maven repository; later calls read the cached result
// as long as every jar in it still exists. Concurrent test binaries
// serialise on a lock file, so Maven runs once.
func apacheClasspath(ctx context.Context) (string, error) {
	dir, err := cacheDir()
	if err != nil {
		return "", err
	}
	cpFile := filepath.Join(dir, "classpath.txt")
	if cp, ok := readClasspath(cpFile); ok {
		return cp, nil
	}
	unlock, err := lockFile(filepath.Join(dir, "lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if cp, ok := readClasspath(cpFile); ok {
		return cp, nil
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		return "", fmt.Errorf("kafkatest: Apache Kafka needs Maven to resolve its jars (mvn not found in PATH: %w)", err)
	}
	pom := filepath.Join(dir, "pom.xml")
	if err := os.WriteFile(pom, apachePOM, 0o644); err != nil {
		return "", fmt.Errorf("kafkatest: write pom: %w", err)
	}
	tmp := cpFile + ".tmp"
	cmd := exec.CommandContext(ctx, "mvn", "-q", "-B", "-f", pom,
		"dependency:build-classpath", "-Dmdep.outputFile="+tmp)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// Maven is a Java process: tied to this one like the broker's.
	if err := tiedproc.Run(cmd); err != nil {
		return "", fmt.Errorf("kafkatest: mvn dependency:build-classpath for org.apache.kafka:kafka_2.13:%s: %w\n%s",
			ApacheKafkaVersion, err, tail(out.String(), 40))
	}
	if err := os.Rename(tmp, cpFile); err != nil {
		return "", fmt.Errorf("kafkatest: classpath: %w", err)
	}
	cp, ok := readClasspath(cpFile)
	if !ok {
		return "", errors.New("kafkatest: Maven wrote a classpath whose jars do not exist: " + cpFile)
	}
	return cp, nil
}

// readClasspath returns the cached classpath if every entry exists.
func readClasspath(path string) (string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	cp := strings.TrimSpace(string(b))
	if cp == "" {
		return "", false
	}
	for _, jar := range filepath.SplitList(cp) {
		if _, err := os.Stat(jar); err != nil {
			return "", false
		}
	}
	return cp, true
}

// lockFile takes an exclusive flock on path, shared by every process on
// the machine; the returned function releases it.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("kafkatest: lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
