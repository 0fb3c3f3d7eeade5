package integration

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A proxy given only backends.servers, the primary among them but not named, finds it and
// writes to it; its topology names every server's role.
func TestPrimaryFoundAmongServers(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "gatekeeper.yaml")
	yaml := fmt.Sprintf(`mode: pooled
auth:
  users_file: %s
monitor:
  user: %s
  password: %q
backends:
  servers: [%s, %s, %s]
`, writeUsersFile(t), env.User, env.Password, env.Replica1, env.Primary, env.Replica2)
	require.NoError(t, os.WriteFile(cfgPath, []byte(yaml), 0o600))
	d := startServersDaemon(t, cfgPath)

	var top struct {
		State   string `json:"state"`
		Primary string `json:"primary"`
		Servers []struct {
			Addr     string `json:"addr"`
			Up       bool   `json:"up"`
			ReadOnly bool   `json:"read_only"`
		} `json:"servers"`
	}
	code, body := httpGet(t, "http://"+d.admin+"/api/v1/topology")
	require.Equal(t, http.StatusOK, code, body)
	require.NoError(t, json.Unmarshal([]byte(body), &top))
	require.Equal(t, "ok", top.State, body)
	require.Equal(t, env.Primary, top.Primary, body)
	require.Len(t, top.Servers, 3, body)

	db, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/%s", env.User, env.Password, d.listen, env.Database))
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec("CREATE TABLE IF NOT EXISTS failover_found (id INT PRIMARY KEY)")
	require.NoError(t, err)
	_, err = db.Exec("REPLACE INTO failover_found VALUES (1)")
	require.NoError(t, err, "a write through a proxy that found its primary")

	// pause-writes holds a write until resume-writes.
	resp, err := http.Post("http://"+d.admin+"/api/v1/backends/pause-writes?timeout=20s", "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	done := make(chan error, 1)
	start := time.Now()
	go func() { _, err := db.Exec("REPLACE INTO failover_found VALUES (2)"); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("a write went on while writes were paused: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	resp, err = http.Post("http://"+d.admin+"/api/v1/backends/resume-writes", "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, <-done, "the paused write, once resumed")
	t.Logf("the paused write took %v", time.Since(start))
}

// startServersDaemon runs gatekeeper serve with the configuration file alone (no --primary)
// and waits until it is ready.
func startServersDaemon(t *testing.T, cfgPath string) *daemon {
	t.Helper()
	d := &daemon{listen: freeAddr(t), admin: freeAddr(t)}
	return startConfigured(t, d, []string{"serve", "--config", cfgPath, "--listen", d.listen, "--admin-listen", d.admin})
}
