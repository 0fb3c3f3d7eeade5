package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatekeeperdb/gatekeeper/internal/admin"
)

// daemon is gatekeeper serve run as a process.
type daemon struct {
	cmd    *exec.Cmd
	admin  string
	listen string
	stderr *bytes.Buffer
}

func startDaemon(t *testing.T, extraEnv ...string) *daemon {
	t.Helper()
	return startDaemonArgs(t, nil, extraEnv...)
}

// startDaemonArgs starts gatekeeper serve with more arguments (such as --config FILE).
func startDaemonArgs(t *testing.T, args []string, extraEnv ...string) *daemon {
	t.Helper()
	d := &daemon{listen: freeAddr(t), admin: freeAddr(t)}
	args = append([]string{"serve", "--listen", d.listen, "--admin-listen", d.admin, "--primary", env.Primary}, args...)
	return startConfigured(t, d, args, extraEnv...)
}

// startConfigured runs gatekeeper with args (d's listen and admin addresses among them)
// and waits until it is ready; it is killed when the test ends.
func startConfigured(t *testing.T, d *daemon, args []string, extraEnv ...string) *daemon {
	t.Helper()
	bin := gatekeeperBinary(t)
	d.stderr = &bytes.Buffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	d.cmd = exec.CommandContext(ctx, bin, args...)
	d.cmd.Env = append(os.Environ(), extraEnv...)
	d.cmd.Stderr = d.stderr
	require.NoError(t, d.cmd.Start())
	t.Cleanup(func() {
		_ = d.cmd.Process.Kill()
		_ = d.cmd.Wait()
		if t.Failed() {
			t.Logf("gatekeeper stderr:\n%s", d.stderr.String())
		}
	})
	waitFor(t, 30*time.Second, "the daemon to be ready", func() bool {
		resp, err := http.Get("http://" + d.admin + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return d
}

// typeCount returns the count of the type with sample in the daemon's /api/v1/types, or -1.
func typeCount(t *testing.T, d *daemon, sample string) int64 {
	t.Helper()
	code, body := httpGet(t, "http://"+d.admin+"/api/v1/types")
	require.Equal(t, 200, code)
	var types admin.TypesResponse
	require.NoError(t, json.Unmarshal([]byte(body), &types))
	for _, ts := range types.Types {
		if ts.Sample == sample {
			return int64(ts.Count)
		}
	}
	return -1
}

func (d *daemon) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, d.cmd.Wait(), "exit after SIGTERM")
}

// The daemon learns the cost of what runs through it, shows it to gatekeeper top and the
// JSON API, saves it on SIGTERM and starts from it again.
func TestTopAndEstimatesAcrossRestart(t *testing.T) {
	state := filepath.Join(t.TempDir(), "estimates.json")
	d := startDaemon(t, "GATEKEEPER_ESTIMATOR_STATE_FILE="+state)
	for range 3 {
		out := runTool(t, "mariadb", cliArgs(t, d.listen, "--batch", "--skip-column-names", "-e", "SELECT 40 + 2")...)
		require.Equal(t, "42\n", out)
	}

	waitFor(t, 5*time.Second, "the third unit to be recorded", func() bool { return typeCount(t, d, "SELECT ? + ?") == 3 })
	top, err := exec.Command(gatekeeperBinary(t), "top", "--once", "--admin", d.admin, "--sort", "count").CombinedOutput()
	require.NoError(t, err, "%s", top)
	assert.Contains(t, string(top), "type_key digest")
	assert.Contains(t, string(top), "admission: sjf", "admission is on by default")
	assert.Contains(t, string(top), "capacity: auto")
	var row string
	for _, line := range strings.Split(string(top), "\n") {
		if strings.HasSuffix(line, "  SELECT ? + ?") {
			row = line
		}
	}
	require.NotEmpty(t, row, "no row for SELECT ? + ? in\n%s", top)
	assert.Equal(t, "3", strings.Fields(row)[1], "count of %q", row)

	out, err := exec.Command(gatekeeperBinary(t), "top", "--once", "--admin", freeAddr(t)).CombinedOutput()
	assert.Error(t, err)
	assert.Contains(t, string(out), "cannot reach the proxy's admin API")

	d.stop(t)
	saved, err := os.ReadFile(state)
	require.NoError(t, err, "estimates saved on SIGTERM")
	assert.Contains(t, string(saved), "SELECT ? + ?")

	d = startDaemon(t, "GATEKEEPER_ESTIMATOR_STATE_FILE="+state)
	assert.EqualValues(t, 3, typeCount(t, d, "SELECT ? + ?"), "estimates loaded on start")
	d.stop(t)
}

// With reads routed under strong_rule per_table, the admin API and gatekeeper top show the
// binlog follower and the reads of the primary's position; refused the log for want of
// REPLICATION SLAVE, they show the refusal and the rule strong reads fell back to.
func TestTopShowsTheBinlogFollower(t *testing.T) {
	direct := openDB(t, env.Primary, "")
	defer direct.Close()
	tbl := rowTable(t, direct)
	user, password := noReplicationUser(t, direct)
	for _, tc := range []struct {
		name, user, password string
		rule, line           string
	}{
		{"following", env.User, env.Password, "per_table", "binlog: following "},
		{"refused", user, password, "proxy_local", "binlog: REFUSED (GRANT REPLICATION SLAVE, REPLICATION CLIENT to monitor.user)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "gatekeeper.yaml")
			require.NoError(t, os.WriteFile(file, []byte(fmt.Sprintf(
				"mode: pooled\nauth:\n  from_backend: true\nbackends:\n  primary: %s\n  replicas: [%s]\nmonitor:\n  user: %s\n  password: %s\n",
				env.Primary, env.Replica1, tc.user, tc.password)), 0o600))
			d := startDaemonArgs(t, []string{"--config", file})
			backends := func() admin.BackendsResponse {
				code, body := httpGet(t, "http://"+d.admin+"/api/v1/backends")
				require.Equal(t, 200, code, body)
				var b admin.BackendsResponse
				require.NoError(t, json.Unmarshal([]byte(body), &b))
				require.NotNil(t, b.Routing, "reads are routed")
				require.NotNil(t, b.Routing.Follower, "strong_rule per_table has a follower")
				require.NotNil(t, b.Routing.PositionReads)
				return b
			}
			waitFor(t, 20*time.Second, "the follower to follow or be refused", func() bool {
				f := backends().Routing.Follower
				return f.Live || f.Refused
			})
			db := openDB(t, d.listen, "")
			defer db.Close()
			waitFor(t, 20*time.Second, "strong reads through the proxy", func() bool {
				var v int
				require.NoError(t, db.QueryRow("SELECT v FROM "+tbl+" WHERE id = 1").Scan(&v))
				// Under per_table a strong read reads the primary's position once a
				// replica may take it; under proxy_local none does.
				return tc.rule == "proxy_local" || backends().Routing.PositionReads.Reads > 0
			})

			r := backends().Routing
			assert.Equal(t, tc.rule, r.StrongRule)
			assert.Equal(t, tc.rule == "proxy_local", r.Follower.Refused)
			assert.NotZero(t, r.Follower.ServerID)
			if tc.rule == "per_table" {
				assert.True(t, r.Follower.Live)
				assert.NotEmpty(t, r.Follower.Position)
				assert.NotNil(t, r.Follower.LagTransactions, "the lag is known once the follower follows")
				assert.GreaterOrEqual(t, r.PositionReads.Reads, uint64(1), "the strong read read the primary's position")
				assert.GreaterOrEqual(t, r.PositionReads.Statements, r.PositionReads.Reads)
			}

			top, err := exec.Command(gatekeeperBinary(t), "top", "--once", "--admin", d.admin).CombinedOutput()
			require.NoError(t, err, "%s", top)
			assert.Contains(t, string(top), ", strong_rule "+tc.rule+" - ")
			var line string
			for l := range strings.Lines(string(top)) {
				if strings.HasPrefix(l, "binlog: ") {
					line = strings.TrimSuffix(l, "\n")
				}
			}
			assert.True(t, strings.HasPrefix(line, tc.line), "binlog line %q in\n%s", line, top)
			t.Logf("%s", line)
		})
	}
}
