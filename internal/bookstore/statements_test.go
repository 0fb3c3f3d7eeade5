package bookstore

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every statement starts with the tag of the interaction that issues it, and every
// interaction has statements.
func TestStatementsAreTagged(t *testing.T) {
	var per [numInteractions]int
	for id, s := range statements {
		if !assert.NotEmpty(t, s.sql, "statement %d has no SQL", id) {
			continue
		}
		want := "/* gk:type=" + s.in.String() + " */ "
		assert.True(t, strings.HasPrefix(texts[id], want), "statement %d: %q", id, texts[id])
		assert.Equal(t, want+s.sql, texts[id])
		per[s.in]++
	}
	for i, n := range per {
		assert.Positive(t, n, "%s has no statement", Interaction(i))
	}
	assert.Equal(t, "/* gk:type=buy_confirm */ BEGIN", txBegin[BuyConfirm])
	assert.Equal(t, "/* gk:type=admin_confirm */ COMMIT", txCommit[AdminConfirm])
	assert.Equal(t, "/* gk:type=shopping_cart */ ROLLBACK", txRollback[ShoppingCart])
}

func TestSearchPatterns(t *testing.T) {
	assert.Equal(t, "BABA%", authorPatterns[0])
	assert.Equal(t, "%NGNG%", titlePatterns[99])
	assert.Equal(t, "%OGAL%", titlePatterns[12])
}
