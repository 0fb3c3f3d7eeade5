package admission

import "errors"

// Why a unit was not admitted. The proxy turns each into an error packet for the client.
var (
	// ErrQueueFull: max_queue units already wait.
	ErrQueueFull = errors.New("admission queue full")
	// ErrTimeout: the unit waited queue_timeout without being admitted.
	ErrTimeout = errors.New("queue timeout")
	// ErrCanceled: the unit's client went away while it waited.
	ErrCanceled = errors.New("canceled while waiting")
	// ErrNewSession: the session gate is closed to new sessions.
	ErrNewSession = errors.New("new session refused under overload")
	// ErrBlockingQueueFull: a unit of an accepted session found the blocking queue full.
	ErrBlockingQueueFull = errors.New("blocking queue full")
)
