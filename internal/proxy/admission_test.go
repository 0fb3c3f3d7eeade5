package proxy

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSessionTag(t *testing.T) {
	cases := map[string]string{
		"SELECT 1":                          "",
		"/* gk:session=abc-123 */ SELECT 1": "abc-123",
		"SELECT /* gk:type=home gk:session=u42.s7 */ 1":  "u42.s7",
		"SELECT 1 /* gk:session= */":                     "",
		"SELECT 1 /* gk:session=x'; DROP TABLE t; -- */": "x",
		"SELECT 1 /*gk:session=a:b_c*/":                  "a:b_c",
	}
	for sql, want := range cases {
		assert.Equal(t, want, string(sessionTag([]byte(sql))), sql)
	}
}

func TestTagSetForgetsTheOldestHalfPastItsBound(t *testing.T) {
	var s tagSet
	for i := range tagSetGeneration {
		s.add([]byte(strconv.Itoa(i)))
	}
	assert.True(t, s.has([]byte("0")))
	s.add([]byte("next")) // starts a new generation; the old one is still known
	assert.True(t, s.has([]byte("0")))
	assert.True(t, s.has([]byte("next")))
	for i := range tagSetGeneration {
		s.add([]byte("g2-" + strconv.Itoa(i)))
	}
	assert.False(t, s.has([]byte("0")), "two generations back is forgotten")
	assert.True(t, s.has([]byte("next")))
	assert.False(t, s.has([]byte("never")))
}
