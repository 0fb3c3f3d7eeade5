package integration

import (
	"regexp"
	"strconv"
	"testing"
	"time"
)

// With a monitor account the daemon reads the primary's Threads_running and exports it.
func TestMonitorThreadsRunning(t *testing.T) {
	d := startDaemon(t, "GATEKEEPER_MONITOR_USER="+env.User, "GATEKEEPER_MONITOR_PASSWORD="+env.Password,
		"GATEKEEPER_MONITOR_INTERVAL=200ms")
	re := regexp.MustCompile(`(?m)^gatekeeper_backend_threads_running (\S+)$`)
	waitFor(t, 5*time.Second, "Threads_running to be read", func() bool {
		_, body := httpGet(t, "http://"+d.admin+"/metrics")
		m := re.FindStringSubmatch(body)
		if m == nil {
			return false
		}
		v, err := strconv.ParseFloat(m[1], 64)
		return err == nil && v >= 1 // the poll itself runs
	})
}
