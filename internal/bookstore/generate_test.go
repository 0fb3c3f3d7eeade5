package bookstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAppendSyllables(t *testing.T) {
	tests := []struct {
		n         uint64
		minDigits int
		want      string
	}{
		{0, 1, "BA"},
		{7, 1, "UL"},
		{12, 1, "OGAL"},
		{5, 3, "BABASE"},
		{100, 2, "OGBABA"},
		{57600, 1, "SEULATBABA"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, string(appendSyllables(nil, tt.n, tt.minDigits)), "%d", tt.n)
	}
}

// generated collects the statements of every group of a scale, by table.
func generated(t *testing.T, s Scale) map[string][][]byte {
	t.Helper()
	out := map[string][][]byte{}
	for _, group := range (generator{s: s}).groups() {
		err := group(func(b []byte) error {
			table := strings.Fields(string(b[:min(len(b), 40)]))[2]
			out[table] = append(out[table], bytes.Clone(b))
			return nil
		})
		require.NoError(t, err)
	}
	return out
}

// rows counts the rows of multi-row INSERTs: generated values contain no parentheses.
func rows(stmts [][]byte) int {
	n := 0
	for _, b := range stmts {
		n += bytes.Count(b, []byte("),(")) + 1
	}
	return n
}

func digest(g map[string][][]byte) string {
	h := sha256.New()
	for _, table := range tables {
		for _, b := range g[table] {
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestGeneratorSizes(t *testing.T) {
	s := Scale{Items: 200, Customers: 300, Seed: 5}
	g := generated(t, s)
	assert.Equal(t, 92, rows(g["country"]))
	assert.Equal(t, 50, rows(g["author"]))
	assert.Equal(t, 200, rows(g["item"]))
	assert.Equal(t, 300, rows(g["customer"]))
	assert.Equal(t, 600, rows(g["address"]))
	assert.Equal(t, 270, rows(g["orders"]))
	assert.Equal(t, 270, rows(g["cc_xacts"]))
	lines := rows(g["order_line"])
	assert.GreaterOrEqual(t, lines, 270)
	assert.LessOrEqual(t, lines, 5*270)
	assert.InDelta(t, 3*270, lines, 60, "1 to 5 lines per order, 3 on average")
}

// The same scale generates the same statements; another seed other ones.
func TestGeneratorIsDeterministic(t *testing.T) {
	s := Scale{Items: 200, Customers: 300, Seed: 5}
	first := digest(generated(t, s))
	assert.Equal(t, first, digest(generated(t, s)))
	s.Seed = 6
	assert.NotEqual(t, first, digest(generated(t, s)))
	// The data of seed 5 at this scale, pinned: a change here changes every measurement
	// made with the loaded data, and should be deliberate.
	assert.Equal(t, "7e8a7a38c712cc83312e85f038414ac3ffe356414b6f0e08c00830b85bc89cad", first)
}

func TestGeneratedValues(t *testing.T) {
	g := generated(t, Scale{Items: 200, Customers: 300, Seed: 5})
	customers := string(g["customer"][0])
	assert.True(t, strings.HasPrefix(customers, "INSERT INTO customer VALUES (1,'OG','og',"), customers[:60])
	assert.Contains(t, customers, "(300,'RIBABA','ribaba',")
	items := string(g["item"][0])
	assert.Contains(t, items, "'img1/thumb_1.gif','img1/image_1.gif'")
	for _, subject := range subjects {
		assert.Contains(t, items, "'"+subject+"'", "200 items cover the 24 subjects")
	}
	// The most recent order is placed at the epoch.
	orders := g["orders"][len(g["orders"])-1]
	assert.Contains(t, string(orders), "(270,")
	assert.Contains(t, string(orders), "'2025-06-01 12:00:00'")
}

func TestScale(t *testing.T) {
	d := DefaultScale()
	assert.Equal(t, Scale{Items: 10000, Customers: 57600, Seed: 1}, d)
	assert.Equal(t, Scale{Items: 10000, Customers: 57600, Seed: 9}, Scale{Seed: 9}.withDefaults())
	assert.Equal(t, 2500, d.Authors())
	assert.Equal(t, 115200, d.Addresses())
	assert.Equal(t, 51840, d.Orders())
	assert.ErrorContains(t, Scale{Items: 5, Customers: 100}.validate(), "at least 10")
	assert.ErrorContains(t, Scale{Items: 100, Customers: 5}.validate(), "at least 10")
}
