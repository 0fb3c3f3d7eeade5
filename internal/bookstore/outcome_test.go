package bookstore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
)

func TestClassify(t *testing.T) {
	queueTimeout := &mysql.MySQLError{Number: 1040, SQLState: [5]byte{'0', '8', '0', '0', '4'},
		Message: "gatekeeper: queue timeout: waited 5000 ms for admission"}
	deadlock := &mysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock; try restarting transaction"}
	mentions := &mysql.MySQLError{Number: 1064, Message: "You have an error near 'gatekeeper: x'"}
	tests := []struct {
		name string
		err  error
		want outcome
	}{
		{"no error", nil, completed},
		{"refusal packet", queueTimeout, refused},
		{"wrapped refusal packet", fmt.Errorf("best_sellers: %w", queueTimeout), refused},
		{"refusal message", errors.New("gatekeeper: too many connections (client.max_connections is 10); retry later"), refused},
		{"wrapped refusal message", fmt.Errorf("connect: %w", errors.New("gatekeeper: new session refused under overload")), refused},
		{"deadline", context.DeadlineExceeded, timedOut},
		{"wrapped deadline", fmt.Errorf("home: %w", context.DeadlineExceeded), timedOut},
		{"server error", deadlock, failed},
		{"gatekeeper not at the start", mentions, failed},
		{"broken connection", mysql.ErrInvalidConn, failed},
		{"cancelled", context.Canceled, failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, classify(tt.err))
		})
	}
}

func TestServerError(t *testing.T) {
	assert.True(t, serverError(fmt.Errorf("x: %w", &mysql.MySQLError{Number: 1213})))
	assert.False(t, serverError(mysql.ErrInvalidConn))
	assert.False(t, serverError(context.DeadlineExceeded))
}
