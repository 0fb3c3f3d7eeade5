// Package sdnotify tells systemd about the daemon's state (sd_notify): READY=1 once the
// listeners accept connections, STOPPING=1 when a drain begins. Outside systemd
// (NOTIFY_SOCKET unset) it does nothing.
package sdnotify

import (
	"net"
	"os"
)

// States understood by systemd.
const (
	Ready    = "READY=1"
	Stopping = "STOPPING=1"
)

// Send sends state to the socket named by NOTIFY_SOCKET. It reports whether a message
// was sent; without NOTIFY_SOCKET it sends nothing and returns false, nil.
func Send(state string) (bool, error) {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return false, nil
	}
	if path[0] == '@' { // abstract namespace
		path = "\x00" + path[1:]
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return false, err
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return false, err
	}
	return true, nil
}
