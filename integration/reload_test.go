package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatekeeperdb/gatekeeper/internal/admin"
)

func queueState(t *testing.T, d *daemon) admin.QueueResponse {
	t.Helper()
	code, body := httpGet(t, "http://"+d.admin+"/api/v1/queue")
	require.Equal(t, 200, code)
	var q admin.QueueResponse
	require.NoError(t, json.Unmarshal([]byte(body), &q))
	return q
}

func postReload(t *testing.T, d *daemon) (int, string) {
	t.Helper()
	resp, err := http.Post("http://"+d.admin+"/-/reload", "", nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// SIGHUP and POST /-/reload apply admission settings while the proxy runs; an invalid file
// is refused with the reason and the running settings stay.
func TestReloadAdmission(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gatekeeper.yaml")
	write := func(content string) { require.NoError(t, os.WriteFile(file, []byte(content), 0o600)) }
	write("admission:\n  enabled: false\n  capacity: 500ms\n")
	d := startDaemonArgs(t, []string{"--config", file})
	q := queueState(t, d)
	assert.False(t, q.Enabled)
	assert.Equal(t, 500.0, q.CapacityMS)

	write("admission:\n  enabled: true\n  capacity: 250ms\n  discipline: fifo\n")
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGHUP))
	waitFor(t, 5*time.Second, "the reload", func() bool {
		q := queueState(t, d)
		return q.Enabled && q.CapacityMS == 250 && q.Discipline == "fifo"
	})
	db := openDB(t, d.listen, "")
	var one int
	require.NoError(t, db.QueryRow("SELECT 1").Scan(&one))
	waitFor(t, 5*time.Second, "the unit to be admitted", func() bool { return queueState(t, d).Admitted >= 1 })

	write("admission:\n  enabled: true\n  capacity: -1s\n")
	code, body := postReload(t, d)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "admission.capacity")
	assert.Equal(t, 250.0, queueState(t, d).CapacityMS, "a refused reload changes nothing")

	write("client:\n  idle_timeout: 1h\nadmission:\n  enabled: true\n  capacity: 300ms\n  aging: 2\n")
	code, body = postReload(t, d)
	assert.Equal(t, http.StatusOK, code, body)
	q = queueState(t, d)
	assert.Equal(t, 300.0, q.CapacityMS)
	assert.Equal(t, "sjf", q.Discipline)
	assert.Equal(t, 2.0, q.Aging)
	require.NoError(t, db.QueryRow("SELECT 1").Scan(&one))
	d.stop(t)
	assert.Contains(t, d.stderr.String(), "need a restart")
}
