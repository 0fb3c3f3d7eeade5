package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatekeeperdb/gatekeeper/internal/bookstore"
)

// TestCalibrateWritesTheChosenCapacity runs gatekeeper calibrate against the primary with
// a small workload and short steps, and checks the curve, the choice and the file it edits.
func TestCalibrateWritesTheChosenCapacity(t *testing.T) {
	db := openDB(t, env.Primary, "")
	_, err := db.Exec("CREATE TABLE IF NOT EXISTS calib (id INT PRIMARY KEY, k INT, KEY(k))")
	require.NoError(t, err)
	_, err = db.Exec("INSERT IGNORE INTO calib SELECT seq, seq % 100 FROM seq_1_to_20000")
	require.NoError(t, err)

	dir := t.TempDir()
	workload := filepath.Join(dir, "workload.sql")
	require.NoError(t, os.WriteFile(workload, []byte(`-- short and long reads
SELECT k FROM calib WHERE id = 7;
SELECT k FROM calib WHERE id = 1234;
SELECT k, COUNT(*) FROM calib GROUP BY k ORDER BY 2 DESC LIMIT 3;
`), 0o644))
	cfgFile := filepath.Join(dir, "gatekeeper.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte("# the shop's proxy\nadmission:\n  discipline: sjf # short first\n"), 0o644))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, gatekeeperBinary(t), "calibrate",
		"--dsn", dsn(env.Primary, ""), "--workload", workload, "--write", cfgFile,
		"--clients", "8", "--warmup", "2s", "--step-duration", "1s", "--max-factor", "2").CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Logf("%s", out)
	// A quarter of the mean cost up to twice it: four steps, then refinements.
	steps := regexp.MustCompile(`(?m)^\s+capacity \S+\s+[0-9.]+ statements/s`).FindAll(out, -1)
	require.GreaterOrEqual(t, len(steps), 4)
	require.Regexp(t, `<- chosen`, string(out))
	m := regexp.MustCompile(`(?m)^  capacity: (\S+)$`).FindSubmatch(out)
	require.NotNil(t, m, "the chosen capacity is printed as YAML")
	chosen, err := time.ParseDuration(string(m[1]))
	require.NoError(t, err)
	require.Positive(t, chosen)

	data, err := os.ReadFile(cfgFile)
	require.NoError(t, err)
	require.Contains(t, string(data), "# the shop's proxy")
	require.Contains(t, string(data), "discipline: sjf # short first")
	require.Contains(t, string(data), "capacity: "+string(m[1]))
	check, err := exec.CommandContext(ctx, gatekeeperBinary(t), "check-config", cfgFile).CombinedOutput()
	require.NoError(t, err, "%s", check)
}

func TestCalibrateSaysWhatIsMissing(t *testing.T) {
	out, err := exec.Command(gatekeeperBinary(t), "calibrate", "--dsn", dsn(env.Primary, "")).CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "--workload is required")
}

// TestCalibrateWithTheBookstore calibrates with the bookstore benchmark's customers as the
// workload, loaded small.
func TestCalibrateWithTheBookstore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const database = "calibrate_bookstore"
	loadBookstore(ctx, t, database, bookstore.Scale{Items: 1000, Customers: 2000, Seed: 3})

	out, err := exec.CommandContext(ctx, gatekeeperBinary(t), "calibrate",
		"--dsn", bookstoreDSN(env.Primary, database), "--workload", "bookstore:browsing",
		"--clients", "8", "--warmup", "2s", "--step-duration", "1s", "--max-factor", "2").CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Logf("%s", out)
	require.Contains(t, string(out), "calibrate: the bookstore, browsing mix, 8 clients")
	require.Regexp(t, `(?m)^\s+capacity \S+\s+[0-9.]+ interactions/s .* errors 0$`, string(out))
	require.Regexp(t, `(?m)^  capacity: \S+$`, string(out))

	out, err = exec.CommandContext(ctx, gatekeeperBinary(t), "calibrate",
		"--dsn", dsn(env.Primary, ""), "--workload", "bookstore").CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "the bookstore is not loaded", "%s", out)
}
