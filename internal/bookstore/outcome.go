package bookstore

import (
	"context"
	"errors"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// outcome is how an interaction ended.
type outcome int

const (
	completed outcome = iota
	// failed: any error that is neither a refusal nor a timeout.
	failed
	// refused: gatekeeper said no (an error whose message starts with "gatekeeper:").
	refused
	// overflow: an open-loop arrival found Clients interactions outstanding and was not
	// started. It counts as refused.
	overflow
	// timedOut: the interaction's deadline (Config.Timeout) passed.
	timedOut
)

// refusalPrefix starts the message of every error the proxy sends on its own behalf.
const refusalPrefix = "gatekeeper:"

// classify says how an interaction that returned err ended.
func classify(err error) outcome {
	switch {
	case err == nil:
		return completed
	case errors.Is(err, context.DeadlineExceeded):
		return timedOut
	case refusedByProxy(err):
		return refused
	}
	return failed
}

// refusedByProxy reports whether err, or an error it wraps, is a message from the proxy.
func refusedByProxy(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) && strings.HasPrefix(me.Message, refusalPrefix) {
		return true
	}
	for ; err != nil; err = errors.Unwrap(err) {
		if strings.HasPrefix(err.Error(), refusalPrefix) {
			return true
		}
	}
	return false
}
